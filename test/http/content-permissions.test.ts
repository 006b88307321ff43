import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { documentedRoutes, fillPath } from '../helpers/routes.js';
import { waitFor } from '../helpers/wait.js';
import { settled } from '../traces/helpers.js';

/*
 * The content matrix (#51): every route that shows a task log's, a session's or a trace's content needs
 * what reading it directly needs (logs:read), however it shows it: the log, session and trace routes, a
 * run's samples and comparison, and the review routes (adding such items to a queue, listing, viewing,
 * claiming and exporting them). A key holding every other permission is refused, naming logs:read; the
 * same key with logs:read gets through. No documented GET route shows the content to that key.
 */

const SECRET = 'the-secret-prompt-41';
const ALL_BUT_LOGS = [
  'review:*',
  'evaluation:*',
  'evaluators:*',
  'data:*',
  'containers:*',
  'models:*',
  'inference:*',
  'metrics:*',
  'keys:read',
  'logs:write',
];

let h: Harness;
let mock: MockUpstream;
const ids: Record<string, string> = {};

async function ok<T = any>(res: Promise<{ status: number; text: string; body: T }>, status = 200) {
  const r = await res;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply: () => ({ json: { score: 1, reasoning: 'ok' } }) });
  h = await startHarness();
  await ok(
    h.call('POST', '/v1/models', {
      body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
    }),
    201,
  );
  await ok(h.call('POST', '/v1/containers', { body: { label: 'c' } }), 201);
  const ev = await ok(
    h.call('POST', '/v1/evaluators', {
      body: {
        type: 'judge',
        name: 'j',
        model: 'judge',
        prompt: 'Rate {{output}}',
        scale: { type: 'ordinal', min: 1, max: 5 },
      },
    }),
    201,
  );
  ids.evaluator = ev.id;
  const input = [{ role: 'user', content: SECRET }];
  await ok(
    h.call('POST', '/v1/containers/c/logs', {
      body: [{ model: 'x', input, output: `${SECRET} answer` }],
    }),
    201,
  );
  ids.session = 'sess-secret';
  ids.log = (await ok(h.call('GET', '/v1/containers/c/logs'))).data[0].id;
  // A trace whose model call carries the secret.
  ids.trace = randomBytes(16).toString('hex');
  const span = {
    traceId: ids.trace,
    spanId: randomBytes(8).toString('hex'),
    name: 'chat m',
    kind: 3,
    startTimeUnixNano: `${BigInt(Date.now()) * 1_000_000n}`,
    endTimeUnixNano: `${BigInt(Date.now()) * 1_000_000n}`,
    attributes: [
      { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
      { key: 'gen_ai.request.model', value: { stringValue: 'm' } },
      { key: 'session.id', value: { stringValue: ids.session } },
      {
        key: 'gen_ai.input.messages',
        value: {
          stringValue: JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: SECRET }] }]),
        },
      },
    ],
  };
  const traced = await fetch(`${h.url}/v1/traces`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${h.admin.key}`,
      'content-type': 'application/json',
      'x-evalgate-container': 'c',
    },
    body: JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] }),
  });
  expect(traced.status).toBe(200);
  await settled(h);
  const sessions = await ok(h.call('GET', '/v1/sessions?container=c'));
  expect(sessions.data.length, JSON.stringify(sessions)).toBe(1);
  ids.session = sessions.data[0].id;
  // A run over a dataset whose omitted ground truth is the container's task logs: its samples show them.
  await ok(
    h.call('POST', '/v1/datasets', { body: { label: 'd', items: [{ input: 'q', output: 'a' }] } }),
    201,
  );
  const run = await ok(
    h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'c', evaluators: ['j'], sample: { type: 'dataset', dataset: 'd' } },
    }),
    201,
  );
  ids.run = run.id;
  await waitFor(
    async () => (await h.call('GET', `/v1/evaluation/runs/${run.id}`)).body.status === 'completed',
    60_000,
  );
  for (const [name, body] of [
    ['logs', { task_logs: [ids.log] }],
    ['sessions', { sessions: [ids.session] }],
    ['runs', { run_samples: [{ run: ids.run, position: 0 }] }],
  ] as const) {
    const q = await ok(h.call('POST', '/v1/annotation-queues', { body: { name, evaluators: ['j'] } }), 201);
    ids[`queue_${name}`] = q.id;
    expect((await ok(h.call('POST', `/v1/annotation-queues/${name}/items`, { body }))).added).toBe(1);
    ids[`item_${name}`] = (await ok(h.call('GET', `/v1/annotation-queues/${name}/items`))).data[0].id;
  }
  // A reviewed item, so that the queues can be exported.
  for (const name of ['logs', 'sessions', 'runs']) {
    await ok(
      h.call('POST', `/v1/annotation-queues/${name}/items/${ids[`item_${name}`]}/review`, {
        body: { scores: [{ evaluator: 'j', score: 3 }] },
      }),
      201,
    );
  }
}, 120_000);
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

/** Each route that shows the content: method, path, body. */
function matrix(): [string, string, unknown?][] {
  const rows: [string, string, unknown?][] = [
    ['GET', '/v1/containers/c/logs'],
    ['GET', '/v1/traces'],
    ['GET', `/v1/traces/${ids.trace}`],
    ['GET', '/v1/sessions'],
    ['GET', `/v1/sessions/${ids.session}`],
    ['GET', `/v1/evaluation/runs/${ids.run}/samples`],
    ['GET', `/v1/evaluation/runs/${ids.run}/compare?baseline=${ids.run}`],
    ['POST', '/v1/annotation-queues/logs/items', { task_logs: [ids.log] }],
    ['POST', '/v1/annotation-queues/sessions/items', { sessions: [ids.session] }],
    ['POST', '/v1/annotation-queues/runs/items', { run_samples: [{ run: ids.run, position: 0 }] }],
    ['POST', '/v1/annotation-queues/runs/items', { rules: [{ run: ids.run, score_min: 0 }] }],
  ];
  for (const name of ['logs', 'sessions', 'runs']) {
    rows.push(
      ['GET', `/v1/annotation-queues/${name}/items`],
      ['GET', `/v1/annotation-queues/${name}/items/${ids[`item_${name}`]}`],
      ['POST', `/v1/annotation-queues/${name}/claim`],
      ['POST', `/v1/annotation-queues/${name}/export`, { label: `export-${name}-${Math.random()}` }],
    );
  }
  return rows;
}

describe('the content matrix: a key without logs:read', () => {
  it('is refused on every route that shows a task log, session or trace, naming logs:read', async () => {
    const { key } = await h.key(ALL_BUT_LOGS);
    for (const [method, path, body] of matrix()) {
      const res = await h.call(method, path, { key, body });
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(403);
      expect(res.body.error.details, `${method} ${path}`).toEqual({ required: 'logs:read' });
      expect(res.text, `${method} ${path}`).not.toContain(SECRET);
    }
    // Nothing was claimed by the refused claims: the items are still open to others.
    const items = await h.call('GET', '/v1/annotation-queues/logs/items?state=open');
    expect(items.body.total).toBe(0);
  });

  it('says why: the item, or the side of the run that read the task logs', async () => {
    const { key } = await h.key(ALL_BUT_LOGS);
    const item = await h.call('GET', `/v1/annotation-queues/logs/items/${ids.item_logs}`, { key });
    expect(item.body.error.message).toContain("the item shows a task log's content");
    const samples = await h.call('GET', `/v1/evaluation/runs/${ids.run}/samples`, { key });
    expect(samples.body.error.message).toContain("ground_truth side reads: a container's task logs");
  });

  it('gets through the same routes once it holds logs:read', async () => {
    const { key } = await h.key([...ALL_BUT_LOGS, 'logs:read']);
    for (const [method, path, body] of matrix()) {
      const res = await h.call(method, path, { key, body });
      expect(res.status, `${method} ${path}: ${res.text}`).toBeGreaterThanOrEqual(200);
      expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
    }
  });

  it('is shown the content by no documented GET route', async () => {
    const { key } = await h.key(ALL_BUT_LOGS);
    const fill: Record<string, string> = {
      container: 'c',
      trace_id: ids.trace!,
      session: ids.session!,
      run_id: ids.run!,
      queue: 'logs',
      item: ids.item_logs!,
      evaluator: ids.evaluator!,
    };
    const gets = (await documentedRoutes(h)).filter((r) => r.method === 'GET');
    expect(gets.length).toBeGreaterThan(20);
    for (const r of gets) {
      const res = await h.call(
        'GET',
        fillPath(r.template, (p) => fill[p] ?? 'x'),
        { key, unchecked: true },
      );
      expect(res.text, `GET ${r.template}`).not.toContain(SECRET);
    }
  });
});
