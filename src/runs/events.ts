import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { parseJson } from '../shared/json.js';
import * as repo from './repository.js';
import { TERMINAL } from './schemas.js';

const POLL_MS = 250;

/**
 * Streams a run's status changes and progress as server-sent events until it reaches a terminal status.
 * It reads the stored run, so it works whichever process executes the run.
 */
export async function streamRunEvents(
  db: Kysely<Database>,
  runId: string,
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
  while (open) {
    const run = await repo.findRunById(db, runId).catch(() => undefined);
    if (!run) break;
    if (run.status !== lastStatus) {
      lastStatus = run.status;
      send('status', { id: run.id, status: run.status, finished_at: run.finished_at });
    }
    const metrics = parseJson<{ progress?: unknown }>(run.metrics, {});
    const progress = JSON.stringify(metrics.progress ?? null);
    if (progress !== lastProgress) {
      lastProgress = progress;
      send('progress', metrics.progress ?? null);
    }
    if ((TERMINAL as readonly string[]).includes(run.status)) break;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  if (open) res.end();
}
