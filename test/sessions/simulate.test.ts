import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { hasBwrap } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';
import {
  CALL_PRICE,
  CALLS_PER_CONVERSATION,
  callSignature,
  setUpSimulation,
  simulateReply,
  startsConversation,
} from './simulate-mock.js';

/**
 * Simulated conversations (`type: simulate`): a simulated user talks with the target (one tool) until it
 * says the goal is met; every call is priced in the run's spend; each conversation is a session of the
 * run's container, scored as one; a worker killed mid-run loses no conversation and repeats none.
 */

const ROWS = 4;

const runOf = async (h: Harness, id: string) => (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;

async function createRun(h: Harness, extra: Record<string, unknown> = {}) {
  const created = await h.call('POST', '/v1/evaluation/runs', {
    body: {
      container: 'sim',
      evaluators: ['turns'],
      sample: { type: 'simulate', models: ['target'], user_model: 'simuser', max_turns: 5 },
      ground_truth: { type: 'dataset', dataset: 'scenarios' },
      ...extra,
    },
  });
  expect(created.status, created.text).toBe(201);
  return created.body.id as string;
}

async function codeEvaluator(h: Harness) {
  const r = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'code',
      name: 'turns',
      source:
        'def evaluate(sample, ground_truth, baseline):\n' +
        '    names = [c["name"] for c in sample["tool_calls"]]\n' +
        '    return {"score": len(sample["turns"]), "passed": names == ["get_order"]}\n',
    },
  });
  expect(r.status, r.text).toBe(201);
}

describe('simulated conversations', () => {
  let mock: MockUpstream;
  let h: Harness;
  const answered: string[] = [];

  beforeAll(async () => {
    mock = await startMockUpstream({
      reply: (req: MockRequest) => {
        answered.push(callSignature(req));
        return simulateReply(req);
      },
    });
    h = await startHarness({ env: hasBwrap ? {} : { EVALGATE_UNSAFE_CODE_EVALUATORS: '1' } });
    await setUpSimulation(h, mock.baseUrl, ROWS);
    await codeEvaluator(h);
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await mock?.close();
  });

  it('talks three turns per row, stops at the goal, prices every call and stores sessions', async () => {
    const id = await createRun(h);
    await waitFor(async () => (await runOf(h, id)).status === 'completed', 90_000, 'run completed');
    const run = await runOf(h, id);
    expect(run.sample).toMatchObject({
      type: 'simulate',
      models: ['target'],
      user_model: 'simuser',
      max_turns: 5,
    });
    // Four user calls (the last says the goal is met) and four target calls (the first asks the tool).
    expect(answered).toHaveLength(ROWS * CALLS_PER_CONVERSATION);
    expect(new Set(answered).size).toBe(answered.length);
    expect(run.metrics.generation.calls).toBe(ROWS * CALLS_PER_CONVERSATION);
    expect(run.spend).toBeCloseTo(ROWS * CALLS_PER_CONVERSATION * CALL_PRICE, 12);

    const samples = (await h.call('GET', `/v1/evaluation/runs/${id}/samples?limit=50`)).body.data;
    expect(samples).toHaveLength(ROWS);
    // The code evaluator saw four turns (target calls) and the one tool call.
    for (const s of samples) expect(s).toMatchObject({ status: 'scored', score: 4, passed: true });

    const sessions = (await h.call('GET', '/v1/sessions?container=sim&limit=50')).body.data;
    expect(sessions).toHaveLength(ROWS);
    // Each sample's item is its conversation's session.
    expect(new Set(samples.map((s: { item_id: string }) => s.item_id))).toEqual(
      new Set(sessions.map((s: { id: string }) => s.id)),
    );
    for (const s of sessions) {
      expect(s).toMatchObject({ assigned_by: 'header', turn_count: 4, models: ['target'] });
      expect(s.key).toMatch(new RegExp(`^simulated:${id}:0:\\d$`));
      expect(s.cost).toBeCloseTo(4 * CALL_PRICE, 12);
    }
    const detail = (await h.call('GET', `/v1/sessions/${sessions[0].id}`)).body;
    const order = /order (O\d+)/.exec(JSON.stringify(detail.turns[0].input))?.[1];
    expect(detail.turns.map((t: any) => t.input.filter((m: any) => m.role === 'user').length)).toEqual([
      1, 0, 1, 1,
    ]);
    expect(detail.tool_calls).toEqual([
      expect.objectContaining({
        name: 'get_order',
        arguments: { order_id: order },
        result: expect.any(String),
      }),
    ]);
    expect(detail.turns[3].output.content).toBe(`Answer 3 about order ${order}.`);
    // The run's score shows on the session it scored.
    expect(detail.scores).toEqual([expect.objectContaining({ run_id: id, score: 4, passed: true })]);
  }, 120_000);

  it('stops at max_turns when the goal is not met first, and refuses bad sides', async () => {
    answered.length = 0;
    const id = await createRun(h, {
      sample: { type: 'simulate', models: ['target'], user_model: 'simuser', max_turns: 2, range: '0:1' },
    });
    await waitFor(async () => (await runOf(h, id)).status === 'completed', 60_000, 'run completed');
    // Two user messages (the first with the tool round), no third user call.
    expect(answered.filter((s) => s.startsWith('user-up'))).toHaveLength(2);
    expect(answered.filter((s) => s.startsWith('target-up'))).toHaveLength(3);

    const bad = async (sample: Record<string, unknown>) =>
      h.call('POST', '/v1/evaluation/runs', {
        body: {
          container: 'sim',
          evaluators: ['turns'],
          sample,
          ground_truth: { type: 'dataset', dataset: 'scenarios' },
        },
      });
    const noUser = await bad({ type: 'simulate', models: ['target'] });
    expect(noUser.status).toBe(422);
    expect(JSON.stringify(noUser.body)).toContain('user_model');
    const unknownUser = await bad({ type: 'simulate', models: ['target'], user_model: 'nobody' });
    expect(unknownUser.status).toBe(404);
    expect(unknownUser.body.error.message).toContain('nobody');
    const tooMany = await bad({ type: 'simulate', models: ['target'], user_model: 'simuser', max_turns: 51 });
    expect(tooMany.status).toBe(422);
    const badTools = await bad({
      type: 'simulate',
      models: ['target'],
      user_model: 'simuser',
      tools: 'code',
    });
    expect(badTools.status).toBe(422);
    const onDataset = await bad({ type: 'dataset', dataset: 'scenarios', user_model: 'simuser' });
    expect(onDataset.status).toBe(422);
    // Another project's key sees none of this project's models.
    const other = await h.key(['*'], 'other-project');
    const foreign = await h.call('POST', '/v1/evaluation/runs', {
      key: other.key,
      body: {
        container: 'sim',
        evaluators: ['turns'],
        sample: { type: 'simulate', models: ['target'], user_model: 'simuser' },
        ground_truth: { type: 'dataset', dataset: 'scenarios' },
      },
    });
    expect(foreign.status, foreign.text).toBe(404);
  }, 120_000);
});

describe('a worker killed mid-run', () => {
  const KILL_ROWS = 6;
  let mock: MockUpstream;
  let db: FreshDatabase;
  let h: Harness;
  let env: Record<string, string>;
  const workers: EvalgateProcess[] = [];
  /** Calls answered, by signature; calls held when the gate closed are never answered. */
  const answered: string[] = [];
  const started: string[] = [];
  let gate: { closeAfter: number; closed: boolean } = { closeAfter: Number.POSITIVE_INFINITY, closed: false };

  beforeAll(async () => {
    mock = await startMockUpstream({
      latencyMs: 30,
      record: false,
      reply: async (req: MockRequest) => {
        if (gate.closed || answered.length >= gate.closeAfter) {
          gate.closed = true;
          // Held until the worker is killed: the call is never answered.
          await new Promise(() => {});
        }
        answered.push(callSignature(req));
        if (startsConversation(req)) started.push(callSignature(req));
        return simulateReply(req);
      },
    });
    db = await freshDatabase();
    env = {
      EVALGATE_DATABASE_URL: db.url,
      EVALGATE_DATA_DIR: db.dataDir,
      EVALGATE_KEY_PEPPER: 'simulate-kill-pepper-0123456789',
      EVALGATE_RUN_CHUNK_SIZE: '2',
      EVALGATE_WORKER_CONCURRENCY: '2',
      EVALGATE_RUN_LEASE_MS: '2000',
      EVALGATE_RUN_POLL_MS: '50',
      ...(hasBwrap ? {} : { EVALGATE_UNSAFE_CODE_EVALUATORS: '1' }),
    };
    h = await startHarness({ database: db, env: { ...env, EVALGATE_SERVE_EXECUTES: '0' } });
    await setUpSimulation(h, mock.baseUrl, KILL_ROWS);
    await codeEvaluator(h);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await h?.close();
    await mock?.close();
    await db?.drop();
  });

  it('loses no conversation and repeats none', async () => {
    // The mock stops answering half-way through: conversations are in flight when the worker dies.
    gate = { closeAfter: (KILL_ROWS * CALLS_PER_CONVERSATION) / 2 - 3, closed: false };
    workers.push(await startEvalgate(['worker'], env, /Evalgate worker/, 150_000));
    const id = await createRun(h, {
      sample: { type: 'simulate', models: ['target'], user_model: 'simuser', range: `0:${KILL_ROWS}` },
    });
    const recorded = async () => {
      const r = await sql<{ n: number | string }>`
        select count(*) as n from run_conversation_calls where run_id = ${id}`.execute(h.app.services.db);
      return Number(r.rows[0]!.n);
    };
    // Every answered call recorded and counted in the run's ledger before the kill.
    await waitFor(
      async () =>
        gate.closed &&
        (await recorded()) === answered.length &&
        Number((await runOf(h, id)).metrics?.generation?.calls ?? 0) === answered.length,
      60_000,
      'answered calls recorded',
    );
    const stored = await sql<{ n: number | string }>`
      select count(*) as n from run_generations where run_id = ${id}`.execute(h.app.services.db);
    const atKill = { answered: answered.length, conversations: Number(stored.rows[0]!.n) };
    await workers[0]!.kill();
    expect(atKill.conversations).toBeLessThan(KILL_ROWS);

    gate = { closeAfter: Number.POSITIVE_INFINITY, closed: false };
    workers.push(await startEvalgate(['worker'], env, /Evalgate worker/, 150_000));
    await waitFor(async () => (await runOf(h, id)).status === 'completed', 90_000, 'run completed');
    const run = await runOf(h, id);

    // No call answered twice: every call of every conversation was paid once, the redo replayed them.
    expect(answered).toHaveLength(KILL_ROWS * CALLS_PER_CONVERSATION);
    expect(new Set(answered).size).toBe(answered.length);
    expect(started).toHaveLength(KILL_ROWS);
    expect(new Set(started).size).toBe(KILL_ROWS);
    expect(run.metrics.generation.calls).toBe(KILL_ROWS * CALLS_PER_CONVERSATION);
    expect(run.spend).toBeCloseTo(KILL_ROWS * CALLS_PER_CONVERSATION * CALL_PRICE, 12);

    // Each row has exactly one conversation: one session of four turns, one scored sample.
    const sessions = (await h.call('GET', '/v1/sessions?container=sim&limit=50')).body.data;
    expect(sessions).toHaveLength(KILL_ROWS);
    expect(new Set(sessions.map((s: any) => s.key)).size).toBe(KILL_ROWS);
    for (const s of sessions) expect(s.turn_count).toBe(4);
    const logs = await sql<{ n: number | string }>`
      select count(*) as n from task_logs where session_id is not null`.execute(h.app.services.db);
    expect(Number(logs.rows[0]!.n)).toBe(KILL_ROWS * 4);
    const samples = (await h.call('GET', `/v1/evaluation/runs/${id}/samples?limit=50`)).body.data;
    expect(samples).toHaveLength(KILL_ROWS);
    for (const s of samples) expect(s).toMatchObject({ status: 'scored', score: 4, passed: true });
    console.info(
      JSON.stringify({
        simulate_kill: {
          rows: KILL_ROWS,
          answered_at_kill: atKill.answered,
          conversations_stored_at_kill: atKill.conversations,
          answered_total: answered.length,
          spend: run.spend,
        },
      }),
    );
  }, 420_000);
});
