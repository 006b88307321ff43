import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { evalgate, evalgateJson, jsonl, scriptedReply, seed } from './cli-helpers.js';

// The API commands are thin over the client, which test/client covers on both databases: these run the
// CLI as a person would, once, on SQLite.
let h: Harness;
let mock: MockUpstream;
let dir: string;

beforeAll(async () => {
  if (testDbKind() === 'postgres') return;
  mock = await startMockUpstream({ reply: scriptedReply, latencyMs: 5 });
  h = await startHarness({ env: { EVALGATE_MODEL_CONCURRENCY: '2', EVALGATE_RUN_CHUNK_SIZE: '8' } });
  await seed(h, mock.baseUrl, 'seeded');
  dir = tempDir('evalgate-cli-').dir;
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const QA = [
  { input: 'q1', output: 'paris', expected: 'paris' },
  { input: 'q2', output: 'rome', expected: 'rome' },
  { input: 'q3', output: 'oslo', expected: 'lima' },
  { input: 'q4', output: 'bern', expected: 'bern' },
  { input: 'q5', output: 'kyiv', expected: 'kyiv' },
];

const cli = (...args: string[]) => evalgateJson(h, args);
const LONG = Array.from({ length: 2000 }, (_, i) => ({ input: `q${i}`, output: 'a', expected: 'a' }));

async function finished(runId: string) {
  await waitFor(async () => {
    const r = await h.call('GET', `/v1/evaluation/runs/${runId}`);
    return ['completed', 'error', 'cancelled'].includes(r.body.status);
  }, 20_000);
}

describe.skipIf(testDbKind() === 'postgres')('the API commands with --json', { timeout: 60_000 }, () => {
  it('create a container, a dataset and evaluators, then run, list, sample, compare and cancel', async () => {
    const container = await cli('containers', 'create', 'cli-app', '--description', 'CLI test');
    expect(container).toMatchObject({ object: 'container', label: 'cli-app', description: 'CLI test' });
    expect(container.id).toMatch(/^ctr_/);

    // Datasets in the three formats, streamed; the CSV header names the fields.
    fs.writeFileSync(
      path.join(dir, 'qa.csv'),
      'input,output,expected\nq1,paris,paris\n"q, 2","ro""me",rome\n',
    );
    fs.writeFileSync(
      path.join(dir, 'qa.json'),
      JSON.stringify(QA.map((r) => ({ ...r, output: `${r.output}-v2` })).slice(0, 4), null, 2),
    );
    fs.writeFileSync(
      path.join(dir, 'qa-v2.jsonl'),
      [...QA.slice(0, 3), { ...QA[3], output: 'zurich' }, QA[4]].map((r) => JSON.stringify(r)).join('\n'),
    );
    // A judge from a JSON file with its prompt from a text file; another from flags alone.
    const prompt = 'Compare OUT<<{{output}}>> with EXP<<{{expected}}>>\n';
    fs.writeFileSync(path.join(dir, 'prompt.txt'), prompt);
    const judge = { type: 'judge', name: 'exact', model: 'judge', prompt: 'replaced', pass_threshold: 0.5 };
    fs.writeFileSync(path.join(dir, 'exact.json'), JSON.stringify(judge));
    const promptFile = path.join(dir, 'prompt.txt');
    const [qa, csv, json, v2, , exact, flagged] = await Promise.all([
      cli('datasets', 'upload', jsonl(dir, 'qa.jsonl', QA), '--label', 'qa', '--description', 'five'),
      cli('datasets', 'upload', path.join(dir, 'qa.csv'), '--label', 'qa-csv'),
      cli('datasets', 'upload', path.join(dir, 'qa.json'), '--label', 'qa-json', '--gzip'),
      cli('datasets', 'upload', path.join(dir, 'qa-v2.jsonl'), '--label', 'qa-v2'),
      cli('datasets', 'upload', jsonl(dir, 'long.jsonl', LONG), '--label', 'long'),
      cli(
        'evaluators',
        'create',
        '-f',
        path.join(dir, 'exact.json'),
        '--prompt-file',
        promptFile,
        '--container',
        'cli-app',
      ),
      cli(
        ...['evaluators', 'create', '--type', 'judge', '--name', 'goodness', '--model', 'judge'],
        ...['--prompt-file', promptFile, '--param', 'temperature=0', '--param', 'seed=7'],
        ...['--description', 'from flags'],
      ),
    ]);
    expect(qa).toMatchObject({ object: 'dataset', label: 'qa', description: 'five', item_count: 5 });
    expect(qa.id).toMatch(/^ds_/);
    expect(csv).toMatchObject({ object: 'dataset', label: 'qa-csv', item_count: 2 });
    expect(json).toMatchObject({ object: 'dataset', label: 'qa-json', item_count: 4 });
    expect(v2).toMatchObject({ label: 'qa-v2', item_count: 5 });
    const csvItems = await h.call('GET', '/v1/datasets/qa-csv/items');
    expect(csvItems.body.data.map((d: any) => d.data)).toEqual([
      { input: 'q1', output: 'paris', expected: 'paris' },
      { input: 'q, 2', output: 'ro"me', expected: 'rome' },
    ]);
    const jsonItems = await h.call('GET', '/v1/datasets/qa-json/items');
    expect(jsonItems.body.data[3].data).toEqual({ input: 'q4', output: 'bern-v2', expected: 'bern' });
    expect(exact).toMatchObject({
      object: 'evaluator.judge',
      name: 'exact',
      model: 'judge',
      prompt,
      pass_threshold: 0.5,
      container: 'cli-app',
      mode: 'pointwise',
    });
    expect(exact.id).toMatch(/^evl_/);
    expect(flagged).toMatchObject({
      object: 'evaluator.judge',
      name: 'goodness',
      description: 'from flags',
      inference_parameters: { temperature: 0, seed: 7 },
      pass_threshold: null,
    });
    fs.writeFileSync(
      path.join(dir, 'patch.json'),
      JSON.stringify({ pass_threshold: 0.9, description: null }),
    );
    const patched = await cli('evaluators', 'update', 'goodness', '-f', path.join(dir, 'patch.json'));
    expect(patched).toMatchObject({ id: flagged.id, pass_threshold: 0.9, description: '' });

    // A run over the dataset (launched while the evaluators are read), its samples and its listing.
    const [gotExact, listed, deleted, run] = await Promise.all([
      cli('evaluators', 'get', 'exact'),
      cli('evaluators', 'list', '--container', 'cli-app'),
      cli('evaluators', 'delete', 'goodness'),
      cli(
        ...['runs', 'create', '--container', 'cli-app', '--evaluator', 'exact', '--dataset', 'qa'],
        '--metadata',
        'commit=abc123',
      ),
    ]);
    expect(gotExact).toEqual(exact);
    // The container's own evaluators and the project-wide ones its runs may use ('goodness', unless its
    // concurrent delete came first).
    expect(listed.map((e: any) => e.id)).toContain(exact.id);
    for (const e of listed) expect([container.id, null]).toContain(e.container_id);
    expect(deleted).toEqual({ object: 'evaluator', id: flagged.id, deleted: true });
    expect(run).toMatchObject({
      object: 'evaluation.run',
      container: container.id,
      evaluators: [exact.id],
      sample: { type: 'dataset', dataset: qa.id, range: '0:100' },
      ground_truth: { type: 'dataset', dataset: qa.id, range: '0:100' },
      baseline: null,
      metadata: { commit: 'abc123' },
      environment: 'main',
    });
    expect(['queued', 'running']).toContain(run.status);
    const done = await cli('runs', 'watch', run.id);
    expect(done).toMatchObject({
      id: run.id,
      status: 'completed',
      metrics: { progress: { done: 5, total: 5 } },
    });
    expect(done.results.per_model[0].per_eval[exact.id]).toMatchObject({
      evaluator_name: 'exact',
      num_total: 5,
      num_passed: 4,
      num_failed: 1,
      accuracy: 0.8,
    });
    // Meanwhile a second run, on the changed outputs, to compare with the first.
    const [got, failed, two, byEvaluator, second] = await Promise.all([
      cli('runs', 'get', run.id),
      cli('runs', 'samples', run.id, '--failed'),
      cli('runs', 'samples', run.id, '--limit', '2', '--evaluator', 'exact', '--launch', '0'),
      cli('runs', 'samples', run.id, '--passed', '--limit', '150'),
      cli(
        'runs',
        'create',
        '--container',
        'cli-app',
        '--evaluator',
        'exact',
        '--dataset',
        'qa-v2',
        '--watch',
      ),
    ]);
    expect(got).toEqual(done);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      object: 'evaluation.sample',
      position: 2,
      evaluator_id: exact.id,
      output: 'oslo',
      expected: 'lima',
      score: 0,
      passed: false,
      status: 'scored',
      reasoning: 'scripted',
    });
    expect(two.map((s: any) => s.position)).toEqual([0, 1]);
    expect(byEvaluator).toHaveLength(4);
    expect(second.status).toBe('completed');

    const [comparison, runs, completed, readable, long] = await Promise.all([
      cli('runs', 'compare', second.id, '--baseline', run.id, '--limit', '5'),
      cli('runs', 'list', '--container', 'cli-app'),
      cli('runs', 'list', '--status', 'completed', '--limit', '1'),
      evalgate(h, ['runs', 'compare', second.id, '--baseline', run.id]),
      cli(
        'runs',
        'create',
        '--container',
        'cli-app',
        '--evaluator',
        'exact',
        '--dataset',
        'long',
        '--range',
        '0:2000',
      ),
    ]);
    expect(comparison).toMatchObject({
      object: 'evaluation.run_comparison',
      run_id: second.id,
      baseline_id: run.id,
      partial: false,
      summary: { comparisons: 1, matched: 5, wins: 0, ties: 4, losses: 1 },
    });
    expect(comparison.comparisons[0]).toMatchObject({
      evaluator: { id: exact.id, name: 'exact' },
      launch: { index: 0, model: null },
      matched: 5,
      mean_difference: -0.2,
      pass_rate: { run: 0.6, baseline: 0.8 },
    });
    expect(comparison.comparisons[0].regressions).toEqual([
      expect.objectContaining({
        difference: -1,
        run: expect.objectContaining({ position: 3, output: 'zurich' }),
      }),
    ]);
    // Newest first (the long run, created alongside, may or may not be listed yet).
    expect(runs.map((r: any) => r.id).filter((id: string) => id !== long.id)).toEqual([second.id, run.id]);
    expect(completed.map((r: any) => r.id)).toEqual([second.id]);
    expect(readable.code, readable.stderr).toBe(0);
    expect(readable.stdout).toMatch(/│ exact .* │ -0\.200 .*│ (worse|inconclusive) /);
    expect(readable.stdout).toContain('Regressions');
    expect(readable.stdout).toContain('zurich');
    // One meaning of better/worse per unit, named as the dashboard names them; baseline before run.
    expect(readable.stdout).toMatch(/5 matched positions: 0 better, 4 tied, 1 worse;/);
    expect(readable.stdout).toMatch(/│ baseline output +│ run output +│/);

    // Cancelling: a long run stops with its partial results; an ended run cannot be cancelled.
    expect(long.sample.range).toBe('0:2000');
    const cancelled = await evalgateJson(h, ['runs', 'cancel', long.id]);
    expect(cancelled).toMatchObject({ object: 'evaluation.run', id: long.id, status: 'cancelled' });
    const again = await evalgate(h, ['runs', 'cancel', long.id]);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toMatch(/^evalgate: 409 conflict: .+\n$/);
    await finished(long.id);
  });

  it('lists, gets and deletes datasets, containers and task logs', async () => {
    const other = await evalgateJson(h, ['containers', 'create', 'doomed', '--metadata', 'team=qa']);
    expect(other).toMatchObject({ label: 'doomed', metadata: { team: 'qa' } });
    const ds = await evalgateJson(h, ['datasets', 'upload', jsonl(dir, 'tmp.jsonl', QA), '--label', 'tmp']);
    // One call recorded through the gateway in the seeded container.
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${h.admin.key}`,
        'content-type': 'application/json',
        'x-evalgate-container': 'seeded',
      },
      body: JSON.stringify({ model: 'gen-a', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(res.status).toBe(200);
    await waitFor(async () => (await h.call('GET', '/v1/containers/seeded/logs')).body.total === 1);

    const [containers, gotContainer, datasets, gotDataset, logs] = await Promise.all([
      evalgateJson(h, ['containers', 'list', '--limit', '100']),
      evalgateJson(h, ['containers', 'get', 'doomed']),
      evalgateJson(h, ['datasets', 'list', '--limit', '100']),
      evalgateJson(h, ['datasets', 'get', 'tmp']),
      evalgateJson(h, ['logs', 'list', '--container', 'seeded', '--limit', '5']),
    ]);
    expect(containers.map((c: any) => c.label)).toEqual(expect.arrayContaining(['doomed', 'seeded']));
    expect(gotContainer).toEqual(other);
    expect(datasets[0]).toEqual(ds);
    expect(gotDataset).toEqual(ds);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      object: 'task_log',
      seq: 1,
      model: 'gen-a',
      output: 'gen-a:hello',
      status: 'success',
    });

    expect(await evalgateJson(h, ['datasets', 'delete', ds.id])).toEqual({
      object: 'dataset',
      id: ds.id,
      deleted: true,
    });
    expect(await evalgateJson(h, ['containers', 'delete', 'doomed'])).toEqual({
      object: 'container',
      id: other.id,
      deleted: true,
    });
    const [gone, invalid] = await Promise.all([
      evalgate(h, ['datasets', 'get', 'tmp', '--json']),
      evalgate(h, ['evaluators', 'create', '--type', 'judge', '--json']),
    ]);
    expect(gone).toMatchObject({ code: 1, stdout: '' });
    expect(gone.stderr).toMatch(/^evalgate: 404 not_found: .*tmp.*\n$/);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toBe(
      'evalgate: 422 validation_error: 2 problems\n' +
        '  body.model: Field required for judge evaluators (missing)\n' +
        '  body.prompt: Field required for judge evaluators (missing)\n',
    );
  });

  it('tables for people; usage and configuration errors exit 1 with one line', async () => {
    const [table, noKey, badFlags] = await Promise.all([
      evalgate(h, ['containers', 'list']),
      evalgate(h, ['runs', 'list'], { EVALGATE_API_KEY: '', EVALGATE_CONFIG: path.join(dir, 'none.json') }),
      evalgate(h, [
        'runs',
        'create',
        '--container',
        'cli-app',
        '--evaluator',
        'exact',
        '--dataset',
        'qa',
        '--logs',
      ]),
    ]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/│ id\s+│ label\s+│ description\s+│ created\s+│/);
    expect(table.stdout).toMatch(/│ seeded\s+│/);
    expect(table.stdout).toMatch(/\d+ of \d+ containers\n$/);
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(
      /^evalgate: configuration_error: Missing API key: set the EVALGATE_API_KEY environment variable, pass --api-key.*\n$/,
    );
    expect(noKey.stderr).not.toContain('new Evalgate()');
    expect(badFlags).toMatchObject({ code: 1, stdout: '' });
    expect(badFlags.stderr).toBe(
      'evalgate: give exactly one of --dataset NAME, --logs, --generate MODELS (and/or --prompt), --sessions CONTAINER, --tool-steps CONTAINER and --simulate MODELS\n',
    );
    // --api-key and --base-url win over the environment.
    const flags = await evalgate(
      h,
      ['--base-url', h.url, 'runs', 'list', '--json', '--api-key', h.admin.key],
      {
        EVALGATE_BASE_URL: 'http://127.0.0.1:9',
        EVALGATE_API_KEY: 'eg_wrong',
      },
    );
    expect(flags.code, flags.stderr).toBe(0);
    expect(Array.isArray(JSON.parse(flags.stdout))).toBe(true);
  });
});
