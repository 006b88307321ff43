import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';
import { CLI, type CliResult, cliEnv, evalgate, ROOT, scriptedReply, seed } from './cli-helpers.js';

let h: Harness;
let mock: MockUpstream;
let dir: string;

const hasScript = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

beforeAll(async () => {
  if (testDbKind() === 'postgres') return;
  // 20 ms a call, two at a time: 200 positions take about 2 s, long enough to watch the bar move.
  mock = await startMockUpstream({ reply: scriptedReply, latencyMs: 20 });
  h = await startHarness({
    env: {
      EVALGATE_MODEL_CONCURRENCY: '2',
      EVALGATE_RUN_CHUNK_SIZE: '4',
      EVALGATE_RATE_LIMIT_MAX_WAIT_MS: '1000',
    },
  });
  await seed(h, mock.baseUrl, 'app');
  // A model whose provider answers 429 forever: runs judged by it end in error after the 1 s bound.
  mock.fail({ status: 429, retryAfter: 1, times: 1_000_000, match: (r) => r.body.model === 'limited-model' });
  await h.call('POST', '/v1/models', {
    body: {
      label: 'limited',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'limited-model',
    },
  });
  const judge = (name: string, prompt: string, model = 'judge') =>
    h.call('POST', '/v1/evaluators', { body: { type: 'judge', name, model, prompt, pass_threshold: 0.5 } });
  await judge('exact', 'Compare OUT<<{{output}}>> with EXP<<{{expected}}>>');
  await judge('lenient', 'Is it good? OUT<<{{output}}>>');
  await judge('limited-judge', 'Is it good? OUT<<{{output}}>>', 'limited');
  dir = tempDir('evalgate-cli-').dir;
  const rows = Array.from({ length: 200 }, (_, i) => ({ input: `q${i}`, output: 'a', expected: 'a' }));
  await h.call('POST', '/v1/datasets', { body: { label: 'slow', items: rows } });
  // exact passes 2 of 4 (accuracy 0.5); lenient passes all 4 (every output mentions "good").
  const gate = [
    { input: 'q1', output: 'good1', expected: 'good1' },
    { input: 'q2', output: 'good2', expected: 'good2' },
    { input: 'q3', output: 'good3', expected: 'x' },
    { input: 'q4', output: 'good4', expected: 'y' },
  ];
  await h.call('POST', '/v1/datasets', { body: { label: 'gate', items: gate } });
  await h.call('POST', '/v1/datasets', {
    body: {
      label: 'caps',
      items: [
        { input: 'x', expected: 'gen-b:x' },
        { input: 'y', expected: 'gen-b:y' },
      ],
    },
  });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs the CLI in a pseudo-terminal (util-linux `script`), 160 columns wide. */
function inTerminal(args: string[]): Promise<CliResult> {
  const command = `stty cols 160 rows 40; exec ${[process.execPath, ...CLI, ...args].join(' ')}`;
  return new Promise((resolve) => {
    execFile(
      'script',
      ['-qfec', command, '/dev/null'],
      { cwd: ROOT, env: cliEnv(h), maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function createRun(body: Record<string, unknown>): Promise<string> {
  const res = await h.call('POST', '/v1/evaluation/runs', { body: { container: 'app', ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

const ESC = '\u001b';
// Terminal escapes: CSI sequences, and save / restore cursor.
const ANSI = new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]|${ESC}[78]`, 'g');
const REDRAW = new RegExp(`\\r|\\n|${ESC}\\[1G`);

describe.skipIf(testDbKind() === 'postgres')('runs watch', { timeout: 60_000 }, () => {
  it.skipIf(!hasScript)('draws a progress bar in a terminal, then the results table', async () => {
    const res = await inTerminal([
      'runs',
      'create',
      '--container',
      'app',
      '--evaluator',
      'exact',
      '--dataset',
      'slow',
      '--range',
      '0:200',
      '--watch',
    ]);
    expect(res.code, res.stdout).toBe(0);
    expect(res.stdout).toContain(ESC);
    // Each redraw starts at column 1; the renderings of the bar, in order.
    const renderings = res.stdout
      .split(REDRAW)
      .map((s) => s.replace(ANSI, ''))
      .filter((s) => /^run_\w+ \[[█░]+\] \d+\/200 \d+%/.test(s));
    const done = renderings.map((s) => Number(/\] (\d+)\/200/.exec(s)![1]));
    expect(new Set(done).size, renderings.join('\n')).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < done.length; i++) expect(done[i]!).toBeGreaterThanOrEqual(done[i - 1]!);
    expect(done.at(-1)).toBe(200);
    expect(renderings.at(-1)).toMatch(/200\/200 100% \| [\d.]+\/s \| ETA \S+ \| \$[\d.]+ \| completed$/);
    const text = res.stdout.replace(ANSI, '');
    expect(text).toMatch(/completed: 200\/200 samples, spend \$[\d.]+, duration/);
    expect(text).toMatch(
      /│ launch │ model │ evaluator │ avg score │ accuracy │ passed │ failed │ errors │ missing │/,
    );
    expect(text).toMatch(/│ 0\s+│ -\s+│ exact\s+│ 1\.000\s+│ 1\.000\s+│ 200\s+│ 0\s+│ 0\s+│ 0\s+│/);
  });

  it('writes plain lines, at most one a second, when stdout is not a terminal', async () => {
    const id = await createRun({
      evaluators: ['exact'],
      sample: { type: 'dataset', dataset: 'slow', range: '0:200' },
      ground_truth: { type: 'dataset', dataset: 'slow', range: '0:200' },
    });
    const res = await evalgate(h, ['runs', 'watch', id]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).not.toContain(ESC);
    const lines = res.stdout.split('\n').filter((l) => l.includes(` ${id} `));
    expect(lines.length).toBeGreaterThanOrEqual(2);
    const parsed = lines.map((l) => {
      const m = /^(\S+) run_\w+ (\w+) (\d+)\/(\d+|\?)/.exec(l);
      expect(m, l).not.toBeNull();
      return { at: Date.parse(m![1]!), status: m![2]!, done: Number(m![3]) };
    });
    for (let i = 1; i < parsed.length; i++) {
      expect(parsed[i]!.done).toBeGreaterThanOrEqual(parsed[i - 1]!.done);
      // Status changes are written at once; progress lines of one status at most once a second.
      if (parsed[i]!.status === parsed[i - 1]!.status) {
        expect(parsed[i]!.at - parsed[i - 1]!.at).toBeGreaterThanOrEqual(990);
      }
    }
    expect(parsed.at(-1)).toMatchObject({ status: 'completed', done: 200 });
    expect(res.stdout).toContain(`${id} completed: 200/200 samples`);
    expect(res.stdout).toMatch(/│ 0\s+│ -\s+│ exact\s+│ 1\.000\s+│ 1\.000\s+│ 200\s+│ 0\s+│ 0\s+│ 0\s+│/);
  });
});

describe.skipIf(testDbKind() === 'postgres')('CI gating', { timeout: 60_000 }, () => {
  it('--fail-under exits 0 when met and 1 with a one-line reason when not; per evaluator too', async () => {
    const summary = path.join(dir, 'summary.md');
    const met = await evalgate(h, [
      'runs',
      'create',
      '--container',
      'app',
      '--evaluator',
      'exact',
      '--evaluator',
      'lenient',
      '--dataset',
      'gate',
      '--watch',
      '--fail-under',
      'accuracy=0.5',
      '--summary',
      `markdown=${summary}`,
    ]);
    expect(met.code, met.stderr).toBe(0);
    expect(met.stderr).toBe('');
    const id = /Created run (run_\w+)/.exec(met.stdout)![1]!;
    const md = fs.readFileSync(summary, 'utf8');
    expect(md).toContain(`### Evalgate run \`${id}\`: completed`);
    expect(md).toContain('| 0 | - | exact | 0.500 | 0.500 | 2 | 2 | 0 | 0 |');
    expect(md).toContain('| 0 | - | lenient | 1.000 | 1.000 | 4 | 0 | 0 | 0 |');
    expect(md).toContain('- ✅ exact accuracy 0.5 ≥ 0.5 (launch 0)');
    expect(md).toContain('- ✅ lenient accuracy 1 ≥ 0.5 (launch 0)');

    const [below, perEvaluatorMet, perEvaluatorBelow, unknown] = await Promise.all([
      evalgate(h, ['runs', 'get', id, '--fail-under', 'accuracy=0.8']),
      evalgate(h, [
        'runs',
        'get',
        id,
        '--fail-under',
        'lenient.accuracy=0.9',
        '--fail-under',
        'exact.avg_score=0.5',
      ]),
      evalgate(h, [
        'runs',
        'get',
        id,
        '--fail-under',
        'lenient.accuracy=0.9',
        '--fail-under',
        'exact.avg_score=0.6',
      ]),
      evalgate(h, ['runs', 'get', id, '--fail-under', 'nope.accuracy=0.1']),
    ]);
    expect(below.code).toBe(1);
    expect(below.stderr).toBe('evalgate: exact accuracy 0.5 < 0.8 (launch 0)\n');
    expect(below.stdout).toContain(id);
    expect(perEvaluatorMet.code, perEvaluatorMet.stderr).toBe(0);
    expect(perEvaluatorBelow.code).toBe(1);
    expect(perEvaluatorBelow.stderr).toBe('evalgate: exact avg_score 0.5 < 0.6 (launch 0)\n');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(
      `evalgate: accuracy cannot be checked: run ${id} has no results for evaluator 'nope'\n`,
    );

    // Per launch: the reason names the launch and its model; --json keeps stdout to the run alone.
    const generated = await evalgate(h, [
      'runs',
      'create',
      '--container',
      'app',
      '--evaluator',
      'exact',
      '--generate',
      'gen-a,gen-b',
      '--ground-truth',
      'dataset:caps',
      '--fail-under',
      'exact.accuracy=0.9',
      '--json',
    ]);
    expect(generated.code).toBe(1);
    expect(generated.stderr).toBe('evalgate: exact accuracy 0 < 0.9 (launch 0, model gen-a)\n');
    const run = JSON.parse(generated.stdout);
    expect(run).toMatchObject({ object: 'evaluation.run', status: 'completed' });
    expect(run.results.per_model.map((m: any) => m.model.slug)).toEqual(['gen-a', 'gen-b']);
  });

  it('--summary markdown goes to stdout, or is appended to $GITHUB_STEP_SUMMARY', async () => {
    const id = await createRun({
      evaluators: ['exact'],
      sample: { type: 'dataset', dataset: 'gate' },
      ground_truth: { type: 'dataset', dataset: 'gate' },
    });
    const step = path.join(dir, 'step-summary.md');
    fs.writeFileSync(step, '## Earlier step\n');
    const [toStdout, toStep, withJson] = await Promise.all([
      evalgate(h, ['runs', 'watch', id, '--summary', 'markdown']),
      evalgate(h, ['runs', 'watch', id, '--summary', 'markdown', '--json'], { GITHUB_STEP_SUMMARY: step }),
      evalgate(h, ['runs', 'get', id, '--summary', 'markdown', '--json']),
    ]);
    expect(toStdout.code, toStdout.stderr).toBe(0);
    expect(toStdout.stdout).toContain(
      `### Evalgate run \`${id}\`: completed\n\n| launch | model | evaluator |`,
    );
    expect(toStep.code, toStep.stderr).toBe(0);
    expect(JSON.parse(toStep.stdout).id).toBe(id);
    const appended = fs.readFileSync(step, 'utf8');
    expect(appended.startsWith('## Earlier step\n### Evalgate run')).toBe(true);
    expect(appended).toContain('| 0 | - | exact | 0.500 | 0.500 | 2 | 2 | 0 | 0 |');
    expect(withJson.code).toBe(1);
    expect(withJson.stderr).toMatch(/^evalgate: --summary markdown would mix with --json/);
  });

  it('a run that ended in error or was cancelled exits 2 with its reason', async () => {
    const failing = await evalgate(h, [
      'runs',
      'create',
      '--container',
      'app',
      '--evaluator',
      'limited-judge',
      '--dataset',
      'gate',
      '--watch',
      '--fail-under',
      'accuracy=0.1',
    ]);
    expect(failing.code, failing.stderr).toBe(2);
    const id = /Created run (run_\w+)/.exec(failing.stdout)![1]!;
    expect(failing.stderr).toMatch(new RegExp(`^evalgate: run ${id} ended error: rate_limited: .+\\n$`));
    const [read, gated] = await Promise.all([
      evalgate(h, ['runs', 'get', id]),
      evalgate(h, ['runs', 'get', id, '--fail-under', 'accuracy=0.1', '--json']),
    ]);
    expect(read.code, read.stderr).toBe(0);
    expect(gated.code).toBe(2);
    expect(JSON.parse(gated.stdout).status).toBe('error');

    const long = await createRun({
      evaluators: ['exact'],
      sample: { type: 'dataset', dataset: 'slow', range: '0:200' },
      ground_truth: { type: 'dataset', dataset: 'slow', range: '0:200' },
    });
    expect((await h.call('POST', `/v1/evaluation/runs/${long}/cancel`)).status).toBe(200);
    const cancelled = await evalgate(h, ['runs', 'watch', long]);
    expect(cancelled.code).toBe(2);
    expect(cancelled.stderr).toBe(`evalgate: run ${long} ended cancelled\n`);
  });
});
