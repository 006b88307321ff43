import type { FastifyReply, FastifyRequest } from 'fastify';
import { type CallTotals, runMetrics } from '../engine/progress.js';
import { countersOf } from '../engine/store/runs.js';
import { parseJson } from '../shared/json.js';
import { usd } from '../shared/numbers.js';
import * as repo from './repository.js';
import { isTerminal } from './schemas.js';
import { queueState, type RunContext } from './service.js';

const POLL_MS = 250;

/** What a run has paid so far: its spend and the judge and generation calls behind it. */
export interface RunSpend {
  spend: number;
  judge: CallTotals;
  generation: CallTotals;
}

/** The run's spend as stored at its end, else from the counters every executing process increments. */
function spendOf(row: repo.RunRow): RunSpend {
  const counters = countersOf(row);
  const live = runMetrics(counters, null, null, null);
  if (!isTerminal(row.status)) {
    return {
      spend: usd(counters.judge_cost + counters.generation_cost),
      judge: live.judge,
      generation: live.generation,
    };
  }
  const stored = parseJson<Partial<RunSpend> | null>(row.metrics, null);
  return {
    spend: usd(row.spend ?? 0),
    judge: stored?.judge ?? live.judge,
    generation: stored?.generation ?? live.generation,
  };
}

/**
 * Streams a run's status changes and progress as server-sent events until it reaches a terminal status.
 * It reads the stored run (whose counters every executing process increments), so it works whichever
 * process executes the run. A queued run also gets `queue` events saying whether its environment has a
 * live worker. `spend` events follow what the run has paid (spend, judge and generation calls, tokens) as
 * it changes. The terminal status is the last event.
 */
export async function streamRunEvents(
  ctx: RunContext,
  run: { id: string; projectId: string },
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const headers: Record<string, string | number | string[]> = {};
  for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v;
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let open = true;
  request.raw.on('close', () => {
    open = false;
  });
  const send = (event: string, data: unknown) => {
    if (open) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  let lastStatus = '';
  let lastProgress = '';
  let lastQueue = '';
  let lastSpend = '';
  while (open) {
    const row = await repo.findRun(ctx.db, run.projectId, run.id).catch(() => undefined);
    if (!row) break;
    const counters = countersOf(row);
    const progress = { done: counters.done_positions, total: row.layout ? counters.total_positions : null };
    const progressText = JSON.stringify(progress);
    const terminal = isTerminal(row.status);
    if (progressText !== lastProgress && (row.status !== 'queued' || lastProgress === '')) {
      lastProgress = progressText;
      send('progress', progress);
    }
    const spend = spendOf(row);
    const spendText = JSON.stringify(spend);
    if (spendText !== lastSpend) {
      lastSpend = spendText;
      send('spend', spend);
    }
    if (row.status === 'queued') {
      const queue = await queueState(ctx, row.environment).catch(() => null);
      const text = JSON.stringify(queue);
      if (queue && text !== lastQueue) {
        lastQueue = text;
        send('queue', queue);
      }
    }
    if (row.status !== lastStatus) {
      lastStatus = row.status;
      send('status', { id: row.id, status: row.status, finished_at: row.finished_at });
    }
    if (terminal) break;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  if (open) res.end();
}
