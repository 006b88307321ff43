import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { evalgate, scriptedReply, seed } from './cli-helpers.js';

// What the CLI's tables show a new user: the evaluators a container's runs may use, names where people
// think in names, and a call just made. The CLI over the client, once, on SQLite (the server side of
// each is checked on both databases in test/http and test/catalog).
let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  if (testDbKind() === 'postgres') return;
  mock = await startMockUpstream({ reply: scriptedReply });
  // A writer that would hold a partial batch for 20 s: only a read that waits for it sees a call at once.
  h = await startHarness({ env: { EVALGATE_LOG_FLUSH_MS: '20000' } });
  await seed(h, mock.baseUrl, 'tables-app');
  const items = [
    { input: 'q1', output: 'a1', expected: 'a1' },
    { input: 'q2', output: 'a2', expected: 'b2' },
  ];
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'tables-qa', items } })).status).toBe(201);
  for (const [name, container] of [
    ['shared-judge', null],
    ['own-judge', 'tables-app'],
  ] as const) {
    const res = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'judge',
        name,
        model: 'judge',
        prompt: 'OUT<<{{output}}>> EXP<<{{expected}}>>',
        ...(container ? { container } : {}),
      },
    });
    expect(res.status, res.text).toBe(201);
  }
  expect((await h.call('POST', '/v1/containers', { body: { label: 'other-app' } })).status).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const rowOf = (table: string, word: string) => table.split('\n').find((line) => line.includes(word)) ?? '';

describe.skipIf(testDbKind() === 'postgres')('the CLI tables a new user reads', () => {
  it("lists the project-wide evaluators beside a container's own, marked as such", async () => {
    const listed = await evalgate(h, ['evaluators', 'list', '--container', 'tables-app']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(rowOf(listed.stdout, 'own-judge')).toContain('tables-app');
    expect(rowOf(listed.stdout, 'shared-judge')).toContain('(project-wide)');
    expect(listed.stdout).toContain('2 of 2 evaluators');
    // Another container sees the project-wide one only; the API keeps its plain filter by default.
    const other = await evalgate(h, ['evaluators', 'list', '--container', 'other-app']);
    expect(other.stdout).toContain('shared-judge');
    expect(other.stdout).not.toContain('own-judge');
    expect(other.stdout).toContain('1 of 1 evaluators');
    const plain = await h.call('GET', '/v1/evaluators?container=tables-app');
    expect(plain.body.data.map((e: { name: string }) => e.name)).toEqual(['own-judge']);
    const wide = await h.call('GET', '/v1/evaluators?container=tables-app&include_project_wide=true');
    expect(wide.body.total).toBe(2);
    expect(wide.body.data.map((e: { name: string }) => e.name)).toEqual(['own-judge', 'shared-judge']);
    const missing = await h.call('GET', '/v1/evaluators?container=nope&include_project_wide=true');
    expect(missing.body.total).toBe(0);
  });

  it('shows names, not ids, for the container, evaluators and dataset of runs', {
    timeout: 60_000,
  }, async () => {
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'tables-app',
        evaluators: ['own-judge', 'shared-judge'],
        sample: { type: 'dataset', dataset: 'tables-qa', range: '0:2' },
      },
    });
    expect(created.status, created.text).toBe(201);
    const id: string = created.body.id;
    expect(created.body.container).toMatch(/^ctr_/);
    expect(created.body.sample.dataset).toMatch(/^ds_/);

    const list = await evalgate(h, ['runs', 'list', '--container', 'tables-app']);
    expect(list.code, list.stderr).toBe(0);
    const row = rowOf(list.stdout, id);
    expect(row).toContain('tables-app');
    expect(row).toContain('own-judge, shared-judge');
    expect(row).toContain('dataset tables-qa [0:2]');
    expect(list.stdout).not.toMatch(/ctr_|evl_|ds_/);

    const got = await evalgate(h, ['runs', 'get', id]);
    expect(got.code, got.stderr).toBe(0);
    expect(rowOf(got.stdout, 'container')).toContain('tables-app');
    expect(rowOf(got.stdout, 'evaluators')).toContain('own-judge, shared-judge');
    expect(rowOf(got.stdout, 'sample')).toContain('dataset tables-qa [0:2]');
    expect(got.stdout).not.toMatch(/ctr_|evl_|ds_/);
    // --json keeps the API's ids.
    const json = await evalgate(h, ['runs', 'get', id, '--json']);
    expect(JSON.parse(json.stdout).container).toBe(created.body.container);
  });

  it("shows names for a monitor's container and evaluators", async () => {
    const live = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'judge',
        name: 'live-judge',
        model: 'judge',
        prompt: 'OUT<<{{output}}>>',
        container: 'tables-app',
      },
    });
    expect(live.status, live.text).toBe(201);
    const made = await evalgate(h, [
      ...['monitors', 'create', '--name', 'tables-live', '--container', 'tables-app'],
      ...['--evaluator', 'live-judge', '--rate', '0.5'],
    ]);
    expect(made.code, made.stderr).toBe(0);
    expect(rowOf(made.stdout, 'container')).toContain('tables-app');
    expect(rowOf(made.stdout, 'evaluators')).toContain('live-judge');
    const list = await evalgate(h, ['monitors', 'list']);
    expect(rowOf(list.stdout, 'tables-live')).toContain('tables-app');
    expect(list.stdout).not.toMatch(/ctr_/);
  });

  it('lists a call made just before, although the writer has not flushed it yet', async () => {
    const call = await h.call('POST', '/v1/chat/completions', {
      headers: { 'x-evalgate-container': 'other-app' },
      body: { model: 'gen-a', messages: [{ role: 'user', content: 'just now' }] },
    });
    expect(call.status).toBe(200);
    const listed = await evalgate(h, ['logs', 'list', '--container', 'other-app', '--limit', '5']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('1 of 1 logs');
    expect(listed.stdout).toContain('just now');
    // The API as well: a read right after a call sees it.
    const again = await h.call('POST', '/v1/chat/completions', {
      headers: { 'x-evalgate-container': 'other-app' },
      body: { model: 'gen-a', messages: [{ role: 'user', content: 'again' }] },
    });
    expect(again.status).toBe(200);
    const read = await h.call('GET', '/v1/containers/other-app/logs');
    expect(read.body.total).toBe(2);
  });
});
