// Database-independent: the CLI's formatting of a run's duration.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { evalgate, evalgateJson, scriptedReply, seed } from './cli-helpers.js';

// The duration the CLI shows for a run: a run over rows with no output makes no call and ends in
// milliseconds, which `runs get` and `runs create --watch` say as such (not "0.0 s").
let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({ reply: scriptedReply, latencyMs: 50 });
  h = await startHarness();
  await seed(h, mock.baseUrl, 'app');
  const rows = [
    { input: 'What is 2+2?', expected: '4' },
    { input: 'Capital of France?', expected: 'Paris' },
  ];
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'qa', items: rows } })).status).toBe(201);
  const judge = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'j',
      model: 'judge',
      prompt: 'Compare OUT<<{{output}}>> with EXP<<{{expected}}>>',
    },
  });
  expect(judge.status).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe('the duration of a run in the CLI', () => {
  it('says a run of milliseconds in milliseconds, in runs get and after --watch', {
    timeout: 60_000,
  }, async () => {
    const watched = await evalgate(h, [
      ...['runs', 'create', '--container', 'app', '--evaluator', 'j', '--dataset', 'qa', '--watch'],
    ]);
    expect(watched.code, watched.stderr).toBe(0);
    const id = /(run_\w+) completed/.exec(watched.stdout)?.[1] ?? '';
    const run = await evalgateJson(h, ['runs', 'get', id]);
    const ms: number = run.metrics.duration_ms;
    expect(ms).toBe(Date.parse(run.finished_at) - Date.parse(run.started_at));
    expect(ms).toBeLessThan(1000);
    expect(watched.stdout).toContain(`duration ${ms} ms`);
    const shown = await evalgate(h, ['runs', 'get', id]);
    expect(shown.stdout).toMatch(new RegExp(`│ duration +│ ${ms} ms +│`));
    expect(shown.stdout + watched.stdout).not.toContain('0.0 s');
  });
});
