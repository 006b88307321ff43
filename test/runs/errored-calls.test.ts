import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/*
 * A call that failed is never judged. A streamed call whose upstream stream was cut after its first
 * event (`upstream_truncated`, a partial "Hello" kept as its output) and a call whose upstream answered
 * 200 with no answer (`upstream_error`) are each an error of their position, with the call's own code,
 * in a monitor, in a run over the task logs and in a sessions run (a session holding such a call is an
 * error as a whole): the judge upstream gets no call for them. And a judge verdict off the evaluator's
 * scale (1.5 on 0..1, 7 on the catalog's integer 1..5) is an error of its position, the verdict kept in
 * the reasoning, in a run and in a monitor.
 */

let h: Harness;
let mock: MockUpstream;
/** The user prompts the judge upstream was sent. */
const judged: string[] = [];

const chunk = (content: string) =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'g',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  });
const isGen = (r: MockRequest) => r.body?.model === 'g';
const lie = JSON.stringify({ error: { message: 'quota exhausted upstream', type: 'server_error' } });

function reply(req: MockRequest) {
  if (req.body?.model === 'j') {
    const prompt = String(req.body.messages?.at(-1)?.content ?? '');
    judged.push(prompt);
    // Off the scale on purpose: 1.5 on a "0 to 1" prompt, 7 on the catalog's 1..5 conciseness.
    if (prompt.includes('from 0 to 1')) return { json: { score: 1.5, reasoning: 'more than perfect' } };
    if (prompt.includes('how concise')) return { json: { score: 7, reasoning: 'very concise' } };
    return { json: { score: 1, reasoning: 'fine' } };
  }
  return `ans ${req.lastUserText}`;
}

async function create(path: string, body: Record<string, unknown>) {
  const res = await h.call<any>('POST', path, { body });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** One call of container `c` in session `session`; `stream` reads the event stream to its end. */
async function call(text: string, session: string, stream = false) {
  return h.call('POST', '/v1/chat/completions', {
    headers: { 'x-evalgate-container': 'c', 'x-evalgate-session': session },
    body: { model: 'gen', messages: [{ role: 'user', content: text }], stream },
    unchecked: true,
  });
}

async function runToEnd(body: Record<string, unknown>) {
  const { id } = await create('/v1/evaluation/runs', { container: 'c', ...body });
  await waitFor(
    async () =>
      ['completed', 'error', 'cancelled'].includes(
        (await h.call<any>('GET', `/v1/evaluation/runs/${id}`)).body.status,
      ),
    60_000,
    'run ended',
  );
  return (await h.call<any>('GET', `/v1/evaluation/runs/${id}/samples?limit=100`)).body.data as any[];
}

/** The monitor's samples once it has scored `n` rows. */
async function monitorSamples(ref: string, n: number): Promise<any[]> {
  let rows: any[] = [];
  await waitFor(
    async () => {
      rows = (await h.call<any>('GET', `/v1/monitors/${ref}/samples?limit=100`)).body.data;
      return rows.length >= n;
    },
    30_000,
    `monitor ${ref} scored ${n}`,
  );
  return rows;
}

const logIds = { ok1: '', cut: '', lie: '', ok2: '' };
/** Session ids by their X-Evalgate-Session key. */
const sessionIds: Record<string, string> = {};
let judgedByMonitors = 0;

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  h = await startHarness({
    env: { EVALGATE_UPSTREAM_RETRIES: '0', EVALGATE_RUN_POLL_MS: '100', EVALGATE_LOG_FLUSH_MS: '50' },
  });
  for (const [label, upstream] of [
    ['gen', 'g'],
    ['judge', 'j'],
  ]) {
    await create('/v1/models', {
      label,
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: upstream,
    });
  }
  await create('/v1/containers', { label: 'c' });
  await create('/v1/evaluators', {
    type: 'judge',
    name: 'plain',
    model: 'judge',
    prompt: 'Is {{output}} a good answer?',
    pass_threshold: 0.5,
  });
  await create('/v1/evaluators', {
    type: 'judge',
    name: 'unit',
    model: 'judge',
    prompt: 'Rate {{output}} from 0 to 1.',
    scale: { type: 'continuous', min: 0, max: 1 },
  });
  await create('/v1/evaluators', {
    type: 'judge',
    template: 'conciseness@1',
    name: 'concise',
    model: 'judge',
  });
  await create('/v1/monitors', { name: 'calls', container: 'c', evaluators: ['plain'], sampling_rate: 1 });
  await create('/v1/monitors', {
    name: 'scales',
    container: 'c',
    evaluators: ['unit', 'concise'],
    sampling_rate: 1,
  });

  // Session s1: a good call, then a stream cut after its first event.
  const ok1 = await call('one', 's1');
  expect(ok1.status).toBe(200);
  logIds.ok1 = ok1.headers.get('x-evalgate-log-id') ?? '';
  mock.fail({ match: isGen, events: [chunk('Hello')] });
  const cut = await call('two', 's1', true);
  expect(cut.status).toBe(200);
  expect(cut.text).toContain('upstream_truncated');
  logIds.cut = cut.headers.get('x-evalgate-log-id') ?? '';
  // Session s2: an upstream that answers 200 with an error body instead of an answer.
  mock.fail({ match: isGen, body: lie });
  const lying = await call('three', 's2');
  expect(lying.status).toBe(502);
  logIds.lie = lying.headers.get('x-evalgate-log-id') ?? '';
  // Session s3: a good call only.
  const ok2 = await call('four', 's3');
  logIds.ok2 = ok2.headers.get('x-evalgate-log-id') ?? '';

  await h.app.services.logWriter.flush();
  const logs = (await h.call<any>('GET', '/v1/containers/c/logs?limit=10')).body.data;
  const byId = new Map(logs.map((l: any) => [l.id, l]));
  expect(byId.get(logIds.cut)).toMatchObject({ status: 'error', error: { code: 'upstream_truncated' } });
  expect((byId.get(logIds.cut) as any).output).toContain('Hello');
  expect(byId.get(logIds.lie)).toMatchObject({ status: 'error', error: { code: 'upstream_error' } });
  for (const x of (await h.call<any>('GET', '/v1/sessions?container=c&limit=10')).body.data) {
    sessionIds[x.key] = x.id;
  }
  // Every monitor has scored its four calls before the runs start (their judge calls counted apart).
  await monitorSamples('calls', 4);
  await monitorSamples('scales', 8);
  judgedByMonitors = judged.length;
}, 90_000);

afterAll(async () => {
  await h?.close();
  await mock?.close();
});

/** The failed calls' rows: errors with the call's own code, no score, no pass. */
function expectCallErrors(rows: any[], idOf: (r: any) => string) {
  const of = (id: string) => rows.filter((r) => idOf(r) === id);
  for (const [id, code] of [
    [logIds.cut, 'upstream_truncated'],
    [logIds.lie, 'upstream_error'],
  ] as const) {
    expect(of(id).length).toBeGreaterThan(0);
    for (const r of of(id)) {
      expect(r).toMatchObject({ status: 'error', score: null, passed: null, error: { code } });
    }
  }
  for (const id of [logIds.ok1, logIds.ok2]) expect(of(id).length).toBeGreaterThan(0);
}

describe(`errored calls are never judged (${testDbKind()})`, () => {
  it('a monitor: the cut stream and the lying upstream are errors; only the good calls were judged', async () => {
    const rows = await monitorSamples('calls', 4);
    expectCallErrors(rows, (r) => r.task_log_id);
    for (const r of rows.filter((r) => [logIds.ok1, logIds.ok2].includes(r.task_log_id))) {
      expect(r).toMatchObject({ status: 'scored', score: 1, passed: true });
    }
    // Two good calls, three judges (plain, unit, concise): six judge calls, none on the partial answer.
    expect(judgedByMonitors).toBe(6);
    expect(judged.some((p) => p.includes('Hello'))).toBe(false);
    const results = (await h.call<any>('GET', '/v1/monitors/calls/results')).body.totals[0];
    expect(results).toMatchObject({ num_scored: 2, num_errors: 2 });
  });

  it('a run over the task logs: the same errors, no judge call for them', async () => {
    const before = judged.length;
    const rows = await runToEnd({ evaluators: ['plain'], sample: { type: 'container', container: 'c' } });
    expect(rows).toHaveLength(4);
    expectCallErrors(rows, (r) => r.item_id);
    expect(rows.filter((r) => r.status === 'scored')).toHaveLength(2);
    expect(judged.length - before).toBe(2);
  });

  it('a sessions run: a session holding a failed call is an error of the call; the others are judged', async () => {
    const before = judged.length;
    const rows = await runToEnd({
      evaluators: ['plain'],
      sample: { type: 'sessions', container: 'c' },
      ground_truth: { type: 'sessions', container: 'c' },
    });
    const sessions = (await h.call<any>('GET', '/v1/sessions?container=c&limit=10')).body.data;
    const keyOf = new Map(sessions.map((x: any) => [x.id, x.key]));
    const bySession = new Map(rows.map((r) => [keyOf.get(r.item_id), r]));
    expect(rows).toHaveLength(3);
    expect(bySession.get('s1')).toMatchObject({
      status: 'error',
      passed: null,
      error: { code: 'upstream_truncated' },
    });
    expect(bySession.get('s1').error.message).toContain('Turn 2 of 2');
    expect(bySession.get('s2')).toMatchObject({ status: 'error', error: { code: 'upstream_error' } });
    expect(bySession.get('s3')).toMatchObject({ status: 'scored', passed: true });
    expect(judged.length - before).toBe(1);
  });

  it('a review queue shows a failed call as an error, never as a pass', async () => {
    const queue = await create('/v1/annotation-queues', { name: 'failed-calls', evaluators: ['plain'] });
    const added = await h.call<any>('POST', `/v1/annotation-queues/${queue.id}/items`, {
      body: { task_logs: [logIds.cut], sessions: [sessionIds.s2], rules: [{ monitor: 'calls', share: 1 }] },
    });
    expect(added.status, added.text).toBe(200);
    const items = (await h.call<any>('GET', `/v1/annotation-queues/${queue.id}/items?limit=50`)).body.data;
    const seen: any[] = [];
    for (const item of items) {
      const view = await h.call<any>('GET', `/v1/annotation-queues/${queue.id}/items/${item.id}`);
      expect(view.status, view.text).toBe(200);
      seen.push(view.body);
    }
    const log = seen.find((v) => v.item.kind === 'task_log');
    expect(log.content.error).toMatchObject({ code: 'upstream_truncated' });
    const session = seen.find((v) => v.item.kind === 'session');
    expect(session.content.error).toMatchObject({ code: 'upstream_error' });
    const samples = seen.filter((v) => v.item.kind === 'run_sample');
    expect(samples).toHaveLength(4);
    const failed = samples.filter((v) => v.content.error !== null);
    expect(failed.map((v) => v.content.error.code).sort()).toEqual(['upstream_error', 'upstream_truncated']);
    for (const v of failed) {
      expect(v.judge).toEqual([expect.objectContaining({ status: 'error', score: null, passed: null })]);
    }
  });
});

describe(`a judge verdict off the evaluator's scale is an error (${testDbKind()})`, () => {
  const offScale = (rows: any[]) => {
    for (const r of rows) {
      expect(r).toMatchObject({
        status: 'error',
        score: null,
        passed: null,
        error: { code: 'judge_off_scale' },
      });
    }
  };

  it('in a run: 1.5 on 0..1 and 7 on the integer 1..5 of a catalog template', async () => {
    await create('/v1/datasets', { label: 'answers', items: [{ input: 'q', output: 'a short answer' }] });
    const rows = await runToEnd({
      evaluators: ['unit', 'concise'],
      sample: { type: 'dataset', dataset: 'answers' },
      ground_truth: { type: 'dataset', dataset: 'answers' },
    });
    expect(rows).toHaveLength(2);
    offScale(rows);
    const evaluators = (await h.call<any>('GET', '/v1/evaluators?limit=50')).body.data;
    const nameOf = (id: string) => evaluators.find((e: any) => e.id === id)?.name;
    const unit = rows.find((r) => nameOf(r.evaluator_id) === 'unit');
    const concise = rows.find((r) => nameOf(r.evaluator_id) === 'concise');
    expect(unit.error.message).toContain('1.5');
    expect(unit.error.message).toContain('0..1');
    expect(unit.reasoning).toBe('verdict 1.5: more than perfect');
    expect(concise.error.message).toContain('an integer 1..5');
    expect(concise.reasoning).toBe('verdict 7: very concise');
  });

  it('in a monitor: the good calls judged off the scale are errors; the failed calls were never judged', async () => {
    const rows = await monitorSamples('scales', 8);
    const good = rows.filter((r) => [logIds.ok1, logIds.ok2].includes(r.task_log_id));
    expect(good).toHaveLength(4);
    offScale(good);
    expect(good.map((r) => r.reasoning).sort()).toEqual([
      'verdict 1.5: more than perfect',
      'verdict 1.5: more than perfect',
      'verdict 7: very concise',
      'verdict 7: very concise',
    ]);
    expectCallErrors(rows, (r) => r.task_log_id);
  });
});
