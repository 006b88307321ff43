import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  // The judge gives 0.5 to everything, so its aggregates are easy to tell from the code evaluator's.
  mock = await startMockUpstream({ reply: () => ({ json: { score: 0.5, reasoning: 'meh' } }) });
  // An empty wheel directory as the only package source: installs fail fast and offline.
  h = await startHarness({
    env: { EVALGATE_PIP_FIND_LINKS: mkdtempSync(path.join(tmpdir(), 'evalgate-wheels-')) },
  });
  await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  await h.call('POST', '/v1/datasets', {
    body: {
      label: 'math',
      items: [
        { input: '1+1', output: '2', expected: '2' },
        { input: '2+2', output: '4', expected: '4' },
        { input: '3+3', output: '7', expected: '6' },
        { input: '4+4', output: 'eight', expected: '8' },
      ],
    },
  });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

async function evaluator(body: Record<string, unknown>): Promise<string> {
  const res = await h.call('POST', '/v1/evaluators', { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function runToEnd(evaluators: string[], sides: 'both' | 'sample' = 'both') {
  const src = { type: 'dataset', dataset: 'math' };
  const body =
    sides === 'both'
      ? { container: 'c', evaluators, sample: src, ground_truth: src }
      : { container: 'c', evaluators, sample: src };
  const created = await h.call('POST', '/v1/evaluation/runs', { body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const terminal = ['completed', 'error', 'cancelled'];
  await waitFor(
    async () =>
      terminal.includes((await h.call('GET', `/v1/evaluation/runs/${created.body.id}`)).body.status),
    60_000,
  );
  return (await h.call('GET', `/v1/evaluation/runs/${created.body.id}`)).body;
}

// Code evaluators run sandboxed Python; the database under the run does not change that, so once is enough.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('runs with code evaluators', () => {
  it('aggregates a run that mixes a judge and a code evaluator', async () => {
    const judge = await evaluator({
      type: 'judge',
      name: 'j',
      model: 'judge',
      prompt: 'Rate {{output}}',
      pass_threshold: 0.6,
    });
    const code = await evaluator({
      type: 'code',
      name: 'numeric',
      source: [
        'def evaluate(sample, ground_truth, baseline):',
        '    try:',
        '        got = float(sample["output"])',
        '    except ValueError:',
        '        raise ValueError("not a number: " + sample["output"])',
        '    want = float(ground_truth["expected"])',
        '    return {"score": 1.0 if got == want else 0.0, "passed": got == want, "reason": f"{got} vs {want}"}',
      ].join('\n'),
    });
    const run = await runToEnd([judge, code]);
    expect(run.status).toBe('completed');
    const perEval = run.results.per_model[0].per_eval;
    // Judge: 0.5 everywhere, below its 0.6 threshold.
    expect(perEval[judge]).toMatchObject({
      num_total: 4,
      num_scored: 4,
      num_passed: 0,
      num_failed: 4,
      avg_score: 0.5,
      accuracy: 0,
    });
    // Code: 2 right, 1 wrong, 1 exception ("eight").
    expect(perEval[code]).toMatchObject({
      num_total: 4,
      num_scored: 3,
      num_passed: 2,
      num_failed: 1,
      num_errors: 1,
    });
    expect(perEval[code].avg_score).toBeCloseTo(2 / 3);
    expect(perEval[code].accuracy).toBeCloseTo(2 / 3);
    // Per model and overall: means of the per-evaluator figures.
    expect(run.results.per_model[0].avg_score).toBeCloseTo((0.5 + 2 / 3) / 2);
    expect(run.results.per_model[0].avg_accuracy).toBeCloseTo((0 + 2 / 3) / 2);
    expect(run.results.overall.avg_score).toBeCloseTo((0.5 + 2 / 3) / 2);
    const errors = await h.call(
      'GET',
      `/v1/evaluation/runs/${run.id}/samples?evaluator=numeric&errored=true`,
    );
    expect(errors.body.data).toHaveLength(1);
    expect(errors.body.data[0].error.message).toMatch(/not a number: eight/);
  });

  it('counts positions without ground truth as missing, whether evaluate returns None or trips on it', async () => {
    // The README's example as it stands (handles None) and as it used to be (raises on None).
    const handles = await evaluator({
      type: 'code',
      name: 'exact-handles-none',
      source: [
        'def evaluate(sample, ground_truth, baseline):',
        '    if ground_truth is None:',
        '        return None  # nothing to compare with: counted as missing',
        '    return sample["output"].strip() == ground_truth["expected"].strip()',
      ].join('\n'),
    });
    const trips = await evaluator({
      type: 'code',
      name: 'exact-trips-on-none',
      source:
        'def evaluate(sample, ground_truth, baseline):\n    return sample["output"] == ground_truth["expected"]\n',
    });
    const forgets = await evaluator({
      type: 'code',
      name: 'forgets-return',
      source: 'def evaluate(sample, ground_truth, baseline):\n    sample["output"]\n',
    });
    const alone = await runToEnd([handles, trips], 'sample');
    expect(alone.status).toBe('completed');
    for (const id of [handles, trips]) {
      expect(alone.results.per_model[0].per_eval[id]).toMatchObject({
        num_total: 4,
        num_missing: 4,
        num_errors: 0,
        num_scored: 0,
      });
    }
    const rows = await h.call('GET', `/v1/evaluation/runs/${alone.id}/samples?evaluator=exact-trips-on-none`);
    expect(rows.body.data[0].error.message).toMatch(/NoneType[\s\S]*no ground_truth/);
    // With ground truth present, None is still the forgotten-return error, and the example scores.
    const both = await runToEnd([handles, forgets]);
    expect(both.results.per_model[0].per_eval[handles]).toMatchObject({ num_scored: 4, num_passed: 2 });
    expect(both.results.per_model[0].per_eval[forgets]).toMatchObject({ num_errors: 4, num_missing: 0 });
  });

  it('fails the run with requirements_install_failed when a requirement cannot be installed', async () => {
    const id = await evaluator({
      type: 'code',
      name: 'needs-missing',
      source: 'def evaluate(sample, ground_truth, baseline):\n    return 1\n',
      requirements: ['evalgate-no-such-package==1.0'],
    });
    const run = await runToEnd([id]);
    expect(run.status).toBe('error');
    expect(run.error.code).toBe('requirements_install_failed');
    expect(run.error.message).toMatch(/evalgate-no-such-package/);
    expect(run.error_at).not.toBeNull();
    expect(run.finished_at).not.toBeNull();
  });

  it('records escapes from the sandbox as per-sample errors while the run completes', async () => {
    const port = new URL(h.url).port;
    const dbFile = path.join(h.database.dataDir, 'evalgate.db');
    const attack = (name: string, body: string[]) =>
      evaluator({
        type: 'code',
        name,
        // Position 2 attacks; the others score 1, so damage would show in their counts.
        source: [
          'import os, socket',
          'def evaluate(sample, ground_truth, baseline):',
          '    if sample["input"] == "3+3":',
          ...body.map((l) => `        ${l}`),
          '    return 1',
        ].join('\n'),
      });
    const ids = [
      await attack('own-port', [`socket.create_connection(("127.0.0.1", ${port}), timeout=2)`]),
      await attack('read-db', [`open(${JSON.stringify(dbFile)}, "rb").read()`]),
      await attack('pepper', [
        'v = os.environ.get("EVALGATE_KEY_PEPPER")',
        'assert v is None, "pepper visible"',
        'raise RuntimeError("clean env")',
      ]),
      await attack('kill-parent', ['os.kill(os.getppid(), 9)', 'raise RuntimeError("still here")']),
    ];
    const run = await runToEnd(ids);
    expect(run.status).toBe('completed');
    for (const id of ids) {
      expect(run.results.per_model[0].per_eval[id]).toMatchObject({
        num_total: 4,
        num_scored: 3,
        num_errors: 1,
      });
    }
    const errors = await h.call('GET', `/v1/evaluation/runs/${run.id}/samples?errored=true`);
    expect(errors.body.data.map((d: any) => d.error.message).join('\n')).not.toMatch(/pepper visible/);
    // The service is unharmed.
    expect((await h.call('GET', '/healthz', { key: null })).status).toBe(200);
  });
});
