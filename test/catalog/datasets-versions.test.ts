import { SpanKind } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDatasetItems } from '../../src/catalog/datasets/items.js';
import type { ReadSide } from '../../src/engine/plan.js';
import { type Harness, registerStubModel, startHarness, type TestKey } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { sdkProvider, settled } from '../traces/helpers.js';

// Datasets that grow: items made from a failing task log, a span, a session and a review; versions,
// a run pinned to version 2 reading exactly version 2 after later versions exist, diff, export, splits,
// concurrency and bad input, on the database the suite runs against.

let h: Harness;
let other: TestKey;
let dsId: string;
let failingLogId: string;
let otherLogId: string;
let traceId: string;
let toolSpanId: string;
let sessionId: string;
let reviewId: string;

const INPUT = [{ role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] }];
const OUTPUT = [
  {
    role: 'assistant',
    parts: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }],
    finish_reason: 'tool_call',
  },
];

async function recordTrace(): Promise<void> {
  const provider = sdkProvider(h, { protocol: 'json', resource: { 'evalgate.container': 'c' } });
  const tracer = provider.getTracer('t');
  await tracer.startActiveSpan('invoke_agent weather', async (agent) => {
    agent.setAttributes({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.conversation.id': 'conv-1' });
    traceId = agent.spanContext().traceId;
    const chat = tracer.startSpan('chat m', { kind: SpanKind.CLIENT });
    chat.setAttributes({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'm',
      'gen_ai.conversation.id': 'conv-1',
      'gen_ai.input.messages': JSON.stringify(INPUT),
      'gen_ai.output.messages': JSON.stringify(OUTPUT),
    });
    chat.end();
    const tool = tracer.startSpan('execute_tool get_weather');
    tool.setAttributes({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'get_weather',
      'gen_ai.tool.call.arguments': '{"city":"Paris"}',
      'gen_ai.tool.call.result': 'sunny',
    });
    toolSpanId = tool.spanContext().spanId;
    tool.end();
    agent.end();
  });
  await provider.forceFlush();
  await provider.shutdown();
  await settled(h);
}

async function review(): Promise<string> {
  await registerStubModel(h, 'judge-m');
  const ev = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'ok',
      model: 'judge-m',
      prompt: 'Is {{output}} fine?',
      scale: { type: 'pass_fail' },
    },
  });
  expect(ev.status, ev.text).toBe(201);
  const q = await h.call('POST', '/v1/annotation-queues', {
    body: { name: 'q', evaluators: ['ok'], comment: true },
  });
  expect(q.status, q.text).toBe(201);
  await h.call('POST', '/v1/annotation-queues/q/items', { body: { task_logs: [failingLogId] } });
  const items = await h.call('GET', '/v1/annotation-queues/q/items');
  const done = await h.call('POST', `/v1/annotation-queues/q/items/${items.body.data[0].id}/review`, {
    body: { scores: [{ evaluator: 'ok', passed: false }], comment: 'wrong city' },
  });
  expect(done.status, done.text).toBe(201);
  return done.body.reviews[0].id;
}

beforeAll(async () => {
  h = await startHarness();
  other = await h.key(['*'], 'elsewhere');
  expect((await h.call('POST', '/v1/containers', { body: { label: 'c' } })).status).toBe(201);
  await h.call('POST', '/v1/containers', { key: other.key, body: { label: 'c' } });
  const imported = await h.call('POST', '/v1/containers/c/logs', {
    body: [
      {
        model: 'm',
        input: [{ role: 'user', content: 'Capital of Australia?' }],
        output: 'Sydney',
        status: 'error',
        error: { code: 'bad_answer', message: 'wrong' },
        metadata: { expected: 'Canberra' },
      },
    ],
  });
  expect(imported.status, imported.text).toBeLessThan(300);
  await h.call('POST', '/v1/containers/c/logs', {
    key: other.key,
    body: [{ model: 'm', input: [{ role: 'user', content: 'secret' }], output: 'x' }],
  });
  await settled(h);
  failingLogId = (await h.call('GET', '/v1/containers/c/logs')).body.data[0].id;
  otherLogId = (await h.call('GET', '/v1/containers/c/logs', { key: other.key })).body.data[0].id;
  await recordTrace();
  const sessions = await h.call('GET', '/v1/sessions');
  expect(sessions.status, sessions.text).toBe(200);
  sessionId = sessions.body.data[0].id;
  reviewId = await review();
  const created = await h.call('POST', '/v1/datasets', {
    body: {
      label: 'grow',
      items: [
        { input: 'q0', expected: 'a0' },
        { id: 'keep', input: 'q1', expected: 'a1' },
      ],
    },
  });
  expect(created.status).toBe(201);
  expect(created.body.version).toBe(1);
  dsId = created.body.id;
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const items = async (query = '') => (await h.call('GET', `/v1/datasets/grow/items?limit=100${query}`)).body;

describe('a dataset grown from traffic and reviews', () => {
  it('version 2: an item from a failing task log, its answer the output and its metadata.expected expected', async () => {
    const res = await h.call('POST', '/v1/datasets/grow/items', {
      body: { from: { task_log_id: failingLogId }, splits: ['regression'] },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ object: 'dataset.change', dataset_id: dsId, version: 2, item_count: 3 });
    const [item] = res.body.items;
    expect(item.data).toMatchObject({
      input: [{ role: 'user', content: 'Capital of Australia?' }],
      output: 'Sydney',
      expected: 'Canberra',
      metadata: { model: 'm', status: 'error' },
    });
    expect(item.splits).toEqual(['regression']);
    expect(item.origin).toEqual({ kind: 'task_log', id: failingLogId });
    expect(item.id).toMatch(/^dsi_/);
  });

  it('version 3: items from a span, a session, a review and one given as is, in one batch', async () => {
    const res = await h.call('POST', '/v1/datasets/grow/items/batch', {
      body: {
        items: [
          { from: { span_id: toolSpanId, trace_id: traceId } },
          { from: { session_id: sessionId }, splits: ['agent'] },
          { from: { review_id: reviewId } },
          { id: 'plain', input: 'plain q', expected: 'plain a', splits: ['regression'] },
        ],
      },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ version: 3, item_count: 7 });
    const [span, session, reviewed, plain] = res.body.items;
    expect(span.data).toMatchObject({
      input: { city: 'Paris' },
      output: 'sunny',
      metadata: { tool: 'get_weather' },
    });
    expect(span.origin).toMatchObject({ kind: 'span', id: toolSpanId, trace_id: traceId });
    expect(session.data).toMatchObject({
      input: 'Weather in Paris?',
      expected_tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }],
    });
    expect(session.data.turns).toHaveLength(1);
    expect(reviewed.data).toMatchObject({
      input: [{ role: 'user', content: 'Capital of Australia?' }],
      output: 'Sydney',
      expected: false,
      metadata: { review: { id: reviewId, comment: 'wrong city' } },
    });
    expect(plain.id).toBe('plain');
  });

  it('versions 4 and 5: an upload row edited and another removed; earlier versions keep them', async () => {
    const patched = await h.call('PATCH', '/v1/datasets/grow/items/keep', {
      body: { expected: 'a1 (fixed)', splits: ['regression'] },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ version: 4, item_count: 7 });
    const removed = await h.call('DELETE', `/v1/datasets/grow/items/${dsId}:0`);
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toEqual({
      object: 'dataset.item',
      id: `${dsId}:0`,
      deleted: true,
      dataset_id: dsId,
      version: 5,
    });
    const v1 = await items('&version=1');
    expect(v1.data.map((i: { id: string }) => i.id)).toEqual([`${dsId}:0`, 'keep']);
    expect(v1.data[1].data.expected).toBe('a1');
    const latest = await items();
    expect(latest.total).toBe(6);
    // The edited item keeps its place in the order.
    expect(latest.data[0]).toMatchObject({ id: 'keep', position: 0, data: { expected: 'a1 (fixed)' } });
    const versions = await h.call('GET', '/v1/datasets/grow/versions');
    expect(
      versions.body.data.map((v: { version: number; item_count: number }) => [v.version, v.item_count]),
    ).toEqual([
      [5, 6],
      [4, 7],
      [3, 7],
      [2, 3],
      [1, 2],
    ]);
    expect(versions.body.data[0]).toMatchObject({ added: 0, changed: 0, removed: 1, created_by: h.admin.id });
    expect((await h.call('GET', '/v1/datasets/grow')).body).toMatchObject({ version: 5, item_count: 6 });
  });

  it('diffs two versions: added, removed and changed items', async () => {
    const diff = await h.call('GET', '/v1/datasets/grow/diff?from=2&to=5');
    expect(diff.status, diff.text).toBe(200);
    expect(diff.body.added.map((i: { id: string }) => i.id).slice(-1)).toEqual(['plain']);
    expect(diff.body.added).toHaveLength(4);
    expect(diff.body.removed.map((i: { id: string }) => i.id)).toEqual([`${dsId}:0`]);
    expect(diff.body.changed).toHaveLength(1);
    expect(diff.body.changed[0]).toMatchObject({
      id: 'keep',
      before: { data: { expected: 'a1' } },
      after: { data: { expected: 'a1 (fixed)' }, splits: ['regression'] },
    });
    expect(diff.body.truncated).toBe(false);
    const none = await h.call('GET', '/v1/datasets/grow/diff?from=3&to=3');
    expect(none.body).toMatchObject({ added: [], removed: [], changed: [] });
  });

  it('exports a version as JSON lines and CSV', async () => {
    const jsonl = await h.call('GET', '/v1/datasets/grow/export?version=2');
    expect(jsonl.status).toBe(200);
    expect(jsonl.headers.get('content-type')).toContain('application/jsonl');
    const rows = jsonl.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => r.id)).toEqual([`${dsId}:0`, 'keep', expect.stringMatching(/^dsi_/)]);
    expect(rows[2]).toMatchObject({ output: 'Sydney', splits: ['regression'] });
    const csv = await h.call('GET', '/v1/datasets/grow/export?format=csv&split=regression');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toContain('text/csv');
    const lines = csv.text.split('\r\n');
    expect(lines[0]).toBe('id,input,output,expected,metadata,splits');
    expect(lines[1]).toBe('"keep","q1","","a1 (fixed)","","[""regression""]"');
    expect(lines).toHaveLength(5); // header, 3 items, and the empty string after the last CRLF
    expect(lines[2]).toContain('"[{""role"":""user"",""content"":""Capital of Australia?""}]"');
  });
});

describe('runs pin the version they read', () => {
  let stringCheck: string;
  beforeAll(async () => {
    const ev = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'string_check',
        name: 'eq',
        input: '{{item.expected}}',
        reference: '{{item.expected}}',
        operation: 'eq',
      },
    });
    expect(ev.status, ev.text).toBe(201);
    stringCheck = ev.body.id;
  });

  async function runOver(side: Record<string, unknown>) {
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: [stringCheck],
        sample: { type: 'dataset', dataset: 'grow', ...side },
      },
    });
    expect(run.status, run.text).toBe(201);
    await waitFor(
      async () =>
        ['completed', 'error'].includes(
          (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status,
        ),
      60_000,
    );
    const samples = await h.call('GET', `/v1/evaluation/runs/${run.body.id}/samples?limit=100`);
    return {
      run: run.body,
      samples: samples.body.data as { position: number; item_id: string; input: unknown }[],
    };
  }

  it('reads exactly version 2 after version 5 exists, and says so', async () => {
    const { run, samples } = await runOver({ version: 2 });
    expect(run.sample).toMatchObject({ type: 'dataset', dataset: dsId, version: 2 });
    const ids = samples.sort((a, b) => a.position - b.position).map((s) => s.item_id);
    const v2 = (await items('&version=2')).data.map((i: { id: string }) => i.id);
    expect(ids).toEqual(v2);
    expect(ids).toEqual([`${dsId}:0`, 'keep', expect.stringMatching(/^dsi_/)]);
  });

  it('records the latest version when none is named, and reads a split', async () => {
    const { run, samples } = await runOver({ split: 'regression' });
    expect(run.sample).toMatchObject({ version: 5, split: 'regression' });
    expect(samples.map((s) => s.item_id).sort()).toEqual(
      ['keep', 'plain', (await items('&split=regression')).data[1].id].sort(),
    );
    const got = await h.call('GET', `/v1/evaluation/runs/${run.id}`);
    expect(got.body.sample).toEqual({
      type: 'dataset',
      dataset: dsId,
      version: 5,
      split: 'regression',
      range: '0:100',
    });
  });

  it('a run pinned at creation reads its version even when it executes after later changes', async () => {
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'c', evaluators: [stringCheck], sample: { type: 'dataset', dataset: 'grow' } },
    });
    expect(run.status).toBe(201);
    const pinned = run.body.sample.version as number;
    const before = (await items(`&version=${pinned}`)).data.map((i: { id: string }) => i.id);
    // Later changes, then what execution reads of the stored plan (as a resumed or late run would).
    await h.call('POST', '/v1/datasets/grow/items', { body: { input: 'later' } });
    await h.call('DELETE', '/v1/datasets/grow/items/keep');
    const row = await h.services.db
      .selectFrom('runs')
      .select('plan')
      .where('id', '=', run.body.id)
      .executeTakeFirstOrThrow();
    const side = (JSON.parse(row.plan) as { sides: { sample: ReadSide } }).sides.sample;
    const ports = h.services.sourceKinds.ports(h.services.db);
    expect(await ports.countItems(side)).toBe(before.length);
    const read = await ports.readItems(side, { start: 0, end: 100 });
    expect(read.map((i) => i.id)).toEqual(before);
    await waitFor(
      async () =>
        ['completed', 'error'].includes(
          (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status,
        ),
      60_000,
    );
  });
});

describe('concurrency', () => {
  it('a reader of a pinned version never sees a mix while items change', async () => {
    const version = (await h.call('GET', '/v1/datasets/grow')).body.version as number;
    const snapshot = await readDatasetItems(h.services.db, dsId, { start: 0, end: 1000 }, { version });
    let stop = false;
    const reads: string[][] = [];
    const reader = (async () => {
      while (!stop) {
        const got = await readDatasetItems(h.services.db, dsId, { start: 0, end: 1000 }, { version });
        reads.push(got.map((i) => `${i.id}=${JSON.stringify(i.expected)}`));
        // SQLite's driver answers without I/O: let the server's requests in between reads.
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const edits = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 3 === 0
          ? h.call('PATCH', '/v1/datasets/grow/items/plain', { body: { expected: `v${i}` } })
          : h.call('POST', '/v1/datasets/grow/items', { body: { input: `racer ${i}` } }),
      ),
    );
    stop = true;
    await reader;
    const want = snapshot.map((i) => `${i.id}=${JSON.stringify(i.expected)}`);
    expect(reads.length).toBeGreaterThan(0);
    for (const r of reads) expect(r).toEqual(want);
    // Every edit either made its own version or was refused whole (the item changed meanwhile): none lost.
    for (const e of edits) expect([200, 201, 409]).toContain(e.status);
    const made = edits.filter((e) => e.status < 300).map((e) => e.body.version as number);
    expect(new Set(made).size).toBe(made.length);
    const after = (await h.call('GET', '/v1/datasets/grow')).body;
    expect(after.version).toBe(version + made.length);
    const racers = edits.filter((e, i) => i % 3 !== 0 && e.status === 201).length;
    expect(racers).toBe(8);
    const latest = await items();
    expect(latest.total).toBe(after.item_count);
  });
});

describe('bad input', () => {
  it('answers 404 to unknown versions, items and source objects', async () => {
    const cases: [string, string, unknown?][] = [
      ['GET', '/v1/datasets/grow/items?version=999'],
      ['GET', '/v1/datasets/grow/diff?from=1&to=999'],
      ['GET', '/v1/datasets/grow/export?version=999'],
      ['PATCH', '/v1/datasets/grow/items/nope', { expected: 'x' }],
      ['DELETE', '/v1/datasets/grow/items/nope'],
      ['POST', '/v1/datasets/nope/items', { input: 'x' }],
      ['POST', '/v1/datasets/grow/items', { from: { task_log_id: 'log_missing' } }],
      ['POST', '/v1/datasets/grow/items', { from: { session_id: 'no-such-session' } }],
      ['POST', '/v1/datasets/grow/items', { from: { span_id: '0123456789abcdef', trace_id: traceId } }],
      ['POST', '/v1/datasets/grow/items', { from: { review_id: 'rev_missing' } }],
      // Another project's task log is not found here.
      ['POST', '/v1/datasets/grow/items', { from: { task_log_id: otherLogId } }],
    ];
    for (const [method, path, body] of cases) {
      const res = await h.call(method, path, { body });
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['eq'],
        sample: { type: 'dataset', dataset: 'grow', version: 999 },
      },
    });
    expect(run.status, run.text).toBe(404);
    expect(run.body.error.message).toContain('no version 999');
    const split = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['eq'],
        sample: { type: 'dataset', dataset: 'grow', split: 'nosuch' },
      },
    });
    expect(split.status, split.text).toBe(404);
  });

  it("answers 404 to another project's key on every route", async () => {
    const k = { key: other.key };
    const cases: [string, string, unknown?][] = [
      ['GET', `/v1/datasets/${dsId}/items?version=1`],
      ['GET', `/v1/datasets/${dsId}/versions`],
      ['GET', `/v1/datasets/${dsId}/diff?from=1`],
      ['GET', `/v1/datasets/${dsId}/export`],
      ['POST', `/v1/datasets/${dsId}/items`, { input: 'x' }],
      ['POST', `/v1/datasets/${dsId}/items/batch`, { items: [{ input: 'x' }] }],
      ['PATCH', `/v1/datasets/${dsId}/items/plain`, { expected: 'x' }],
      ['DELETE', `/v1/datasets/${dsId}/items/plain`],
    ];
    for (const [method, path, body] of cases) {
      const res = await h.call(method, path, { ...k, body });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    // Its own dataset, made from this project's log: not found either.
    await h.call('POST', '/v1/datasets', { ...k, body: { label: 'theirs', items: [{ input: 'a' }] } });
    const res = await h.call('POST', '/v1/datasets/theirs/items', {
      ...k,
      body: { from: { task_log_id: failingLogId } },
    });
    expect(res.status).toBe(404);
  });

  it('answers 422 to wrong types and 403 without the source’s read permission', async () => {
    const cases: [string, string, unknown][] = [
      ['POST', '/v1/datasets/grow/items', { splits: 'regression' }],
      ['POST', '/v1/datasets/grow/items', { splits: ['has space'] }],
      ['POST', '/v1/datasets/grow/items', { from: { task_log_id: 5 } }],
      ['POST', '/v1/datasets/grow/items', { from: { task_log_id: 'a', session_id: 'b' } }],
      ['POST', '/v1/datasets/grow/items', { unknown: 1 }],
      ['POST', '/v1/datasets/grow/items/batch', { items: [] }],
      ['PATCH', '/v1/datasets/grow/items/plain', {}],
      ['GET', '/v1/datasets/grow/items?version=two', undefined],
      ['GET', '/v1/datasets/grow/items?version=0', undefined],
      ['GET', '/v1/datasets/grow/diff', undefined],
      ['GET', '/v1/datasets/grow/export?format=xml', undefined],
    ];
    for (const [method, path, body] of cases) {
      const res = await h.call(method, path, { body });
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}: ${res.text}`).toBe(422);
    }
    const backwards = await h.call('GET', '/v1/datasets/grow/diff?from=3&to=2');
    expect(backwards.status).toBe(422);
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['eq'],
        sample: { type: 'dataset', dataset: 'grow', version: 'two' },
      },
    });
    expect(run.status).toBe(422);
    const onContainer = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'c', evaluators: ['eq'], sample: { type: 'container', container: 'c', version: 1 } },
    });
    expect(onContainer.status).toBe(422);
    const writer = await h.key(['data:write', 'data:read']);
    const denied = await h.call('POST', '/v1/datasets/grow/items', {
      key: writer.key,
      body: { from: { task_log_id: failingLogId } },
    });
    expect(denied.status).toBe(403);
    expect(denied.body.error.message).toContain('logs:read');
    const noReview = await h.call('POST', '/v1/datasets/grow/items', {
      key: (await h.key(['data:write', 'logs:read'])).key,
      body: { from: { review_id: reviewId } },
    });
    expect(noReview.status).toBe(403);
    const reader = await h.key(['data:read', 'logs:read']);
    expect(
      (await h.call('POST', '/v1/datasets/grow/items', { key: reader.key, body: { input: 'x' } })).status,
    ).toBe(403);
    const taken = await h.call('POST', '/v1/datasets/grow/items', { body: { id: 'plain', input: 'again' } });
    expect(taken.status).toBe(409);
  });
});
