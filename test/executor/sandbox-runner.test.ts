import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScorerSetupError } from '../../src/scoring/types.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { unusedPort } from '../helpers/ports.js';
import { hasBwrap } from '../helpers/sandbox.js';
import { type SandboxRunnerProcess, startSandboxRunner } from '../helpers/sandbox-runner.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { buildWheel } from '../helpers/wheels.js';
import { testOptions } from '../scoring/helpers.js';

/**
 * A server that cannot sandbox (no bubblewrap, no Python: as in the container image) with its code
 * evaluators on `evalgate sandbox-runner`, started as users start it: the runner checks them, installs
 * their requirements from its own package source, and runs them and python graders.
 */
const SOURCE = `
from evalgate_probe import similarity

def evaluate(sample, ground_truth, baseline):
    return {"score": similarity(sample["output"], ground_truth["expected"]), "reason": "probe"}
`;

describe.skipIf(!hasBwrap)('code evaluators on a sandbox runner', () => {
  const tmp = tempDir();
  const wheels = path.join(tmp.dir, 'wheels');
  let runner: SandboxRunnerProcess;
  let h: Harness;

  beforeAll(async () => {
    mkdirSync(wheels);
    buildWheel(wheels, 'evalgate_probe', '1.0');
    runner = await startSandboxRunner({
      EVALGATE_DATA_DIR: path.join(tmp.dir, 'runner'),
      EVALGATE_PIP_FIND_LINKS: wheels,
    });
    h = await startHarness({
      env: {
        EVALGATE_SANDBOX_URL: runner.url,
        EVALGATE_SANDBOX_TOKEN: runner.token,
        // The server itself can neither check nor sandbox Python.
        EVALGATE_PYTHON: '/nonexistent/python3',
        EVALGATE_BWRAP: '/nonexistent/bwrap',
      },
    });
    await h.call('POST', '/v1/containers', { body: { label: 'c' } });
    const items = [
      { input: 'capital of France', output: 'Paris', expected: 'paris' },
      { input: 'capital of Italy', output: 'Milan', expected: 'rome' },
      { input: 'capital of Spain', output: 'MADRID', expected: 'Madrid' },
    ];
    await h.call('POST', '/v1/datasets', { body: { label: 'd', items } });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await runner?.stop();
    tmp.remove();
  });

  it('refuses every request without its token (but /healthz)', async () => {
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/v1/status'],
      ['POST', '/v1/check', { source: 'x = 1' }],
      ['POST', '/v1/scorers', { evaluator: { id: 'e', source: 'x', requirements: null }, limits: {} }],
      ['POST', '/v1/scorers/abc/batches', { inputs: [] }],
      ['DELETE', '/v1/scorers/abc'],
    ];
    for (const authorization of [
      null,
      'Bearer wrong-token-0123456789',
      runner.token,
      `Basic ${runner.token}`,
    ]) {
      for (const [method, route, body] of routes) {
        const res = await fetch(`${runner.url}${route}`, {
          method,
          headers: {
            ...(authorization ? { authorization } : {}),
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
          body: body ? JSON.stringify(body) : undefined,
        });
        expect(res.status, `${method} ${route} with ${authorization}`).toBe(401);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
      }
    }
    const health = await fetch(`${runner.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
  });

  it('a code evaluator with requirements: checked, installed and run by the runner over a run', async () => {
    const bad = await h.call('POST', '/v1/evaluators', {
      body: { type: 'code', name: 'broken', source: 'def evaluate(sample:\n', requirements: ['ok==1'] },
    });
    expect(bad.status, JSON.stringify(bad.body)).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'source'], type: 'python_source' });
    const created = await h.call('POST', '/v1/evaluators', {
      body: { type: 'code', name: 'probe', source: SOURCE, requirements: ['evalgate_probe==1.0'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);

    const src = { type: 'dataset', dataset: 'd' };
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'c', evaluators: ['probe'], sample: src, ground_truth: src },
    });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    await waitFor(
      async () =>
        ['completed', 'error'].includes(
          (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status,
        ),
      90_000,
    );
    const done = (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body;
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.results.per_model[0].per_eval[created.body.id]).toMatchObject({
      num_scored: 3,
      num_errors: 0,
      avg_score: 2 / 3,
    });
    const samples = await h.call('GET', `/v1/evaluation/runs/${run.body.id}/samples`);
    expect(samples.status).toBe(200);
    const rows = samples.body.data as Array<{ score: number; reasoning: string }>;
    expect(rows.map((r) => [r.score, r.reasoning])).toEqual([
      [1, 'probe'],
      [0, 'probe'],
      [1, 'probe'],
    ]);
  }, 120_000);

  it('a python grader runs on the runner', async () => {
    const grade = (source: string) =>
      h.call('POST', '/v1/fine_tuning/alpha/graders/run', {
        body: {
          grader: { type: 'python', name: 'py', source },
          model_sample: '42',
          item: { answer: '42' },
        },
      });
    const ok = await grade(
      'def grade(sample, item):\n    return 1.0 if sample["output_text"] == item["answer"] else 0.25\n',
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.reward).toBe(1);
    const failing = await grade('def grade(sample, item):\n    return 1 / 0\n');
    expect(failing.body.metadata.errors.python_grader_runtime_error).toBe(true);
    expect(failing.body.metadata.errors.python_grader_runtime_error_details).toMatch(/ZeroDivisionError/);
  }, 60_000);

  it('setup errors come back with the codes and messages of a local run', async () => {
    const client = runner.client(testOptions(tmp.dir));
    const setup = (source: string, requirements: string[]) =>
      client.createScorer({ id: 'evl_x', source, requirements }).catch((e: unknown) => e);
    const missing = await setup(SOURCE, ['evalgate-no-such-package==9.9']);
    expect(missing).toBeInstanceOf(ScorerSetupError);
    expect((missing as ScorerSetupError).code).toBe('requirements_install_failed');
    expect((missing as ScorerSetupError).message).toContain(
      'No matching distribution found for evalgate-no-such-package',
    );
    const raising = await setup('raise RuntimeError("at load")\n', []);
    expect((raising as ScorerSetupError).code).toBe('evaluator_load_failed');
    expect((raising as ScorerSetupError).message).toContain('RuntimeError: at load');
  }, 60_000);

  it('a runner that cannot be reached is sandbox_unavailable, saying what to check', async () => {
    const port = await unusedPort();
    // The same database: the evaluator created above exists for this server too.
    const lost = await startHarness({
      database: h.database,
      env: {
        EVALGATE_SANDBOX_URL: `http://127.0.0.1:${port}`,
        EVALGATE_SANDBOX_TOKEN: runner.token,
        EVALGATE_PYTHON: '/nonexistent/python3',
        EVALGATE_BWRAP: '/nonexistent/bwrap',
      },
    });
    try {
      const created = await lost.call('POST', '/v1/evaluators', {
        key: h.admin.key,
        body: { type: 'code', name: 'other', source: 'def evaluate(s, g, b):\n    return 1\n' },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(501);
      expect(created.body.error.code).toBe('sandbox_unavailable');
      expect(created.body.error.message).toContain(
        `the sandbox runner at http://127.0.0.1:${port} cannot be reached`,
      );
      const src = { type: 'dataset', dataset: 'd' };
      const run = await lost.call('POST', '/v1/evaluation/runs', {
        key: h.admin.key,
        body: { container: 'c', evaluators: ['probe'], sample: src, ground_truth: src },
      });
      expect(run.status, JSON.stringify(run.body)).toBe(501);
      expect(run.body.error.code).toBe('sandbox_unavailable');
      expect(run.body.error.message).toMatch(/cannot be reached \(ECONNREFUSED\)/);
    } finally {
      await lost.close();
    }
  });
});
