// Database-independent: the CLI's gate over the server's API (runs and their paired comparison are tested on both databases in test/runs).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockUpstream } from '../fixtures/mock-upstream.js';
import { cliBundle } from '../helpers/cli-bundle.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';
import { runAction } from './ci-action-runner.js';
import { experimentFile, ROWS, seedCi } from './ci-helpers.js';
import { cliEnv, evalgate, ROOT } from './cli-helpers.js';

// `evalgate ci` against a real server and a scripted model upstream: a baseline recorded on main, an
// unchanged candidate that passes, a regressed one that fails with a report naming the evaluator.
let h: Harness;
let mock: MockUpstream;
let dir: string;

const hasXmllint = (() => {
  try {
    execFileSync('xmllint', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

beforeAll(async () => {
  h = await startHarness();
  mock = await seedCi(h);
  dir = tempDir('evalgate-ci-').dir;
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const out = (name: string) => path.join(dir, name);

function ci(file: string, args: string[], env: Record<string, string> = {}) {
  return evalgate(h, ['ci', '--file', file, ...args], env);
}

describe('evalgate ci', { timeout: 120_000 }, () => {
  let baselineId = '';

  it('records a run on main with its commit and branch; without a baseline, drop rules are skipped', async () => {
    const file = experimentFile(dir, '{models: [gen-a]}');
    const res = await ci(file, ['--branch', 'main', '--commit', 'aaaa1111', '--json', out('main.json')]);
    expect(res.code, res.stderr + res.stdout).toBe(0);
    const report = JSON.parse(fs.readFileSync(out('main.json'), 'utf8'));
    expect(report).toMatchObject({
      object: 'evalgate.ci_report',
      exit_code: 0,
      status: 'passed',
      branch: 'main',
    });
    const x = report.experiments[0];
    expect(x.baseline_id).toBeNull();
    expect(x.baseline_note).toContain('no completed run of experiment qa on branch main');
    const exact = x.evaluators.find((o: { evaluator: string }) => o.evaluator === 'exact');
    expect(exact.candidate.avg_score).toBe(1);
    expect(exact.rules.find((r: { rule: string }) => r.rule === 'drop_at_confidence').status).toBe('skipped');
    baselineId = x.run_id;
    const run = await h.call('GET', `/v1/evaluation/runs/${baselineId}`);
    expect(run.body.name).toBe('qa');
    expect(run.body.metadata).toEqual({
      evalgate_ci_experiment: 'qa',
      git_commit: 'aaaa1111',
      git_branch: 'main',
    });
    // The Markdown report went to stdout, after the progress lines.
    expect(res.stdout).toContain('## Evalgate CI: ✅ passed');
  });

  it('passes an unchanged candidate against the latest run on main (exit 0)', async () => {
    const file = experimentFile(dir, '{models: [gen-a]}');
    const res = await ci(file, [
      '--branch',
      'feature',
      '--pull-request',
      '7',
      '--commit',
      'bbbb2222',
      '--json',
      out('same.json'),
      '--report',
      out('same.md'),
    ]);
    expect(res.code, res.stderr).toBe(0);
    const report = JSON.parse(fs.readFileSync(out('same.json'), 'utf8'));
    const x = report.experiments[0];
    expect(x.baseline_id).toBe(baselineId);
    const exact = x.evaluators.find((o: { evaluator: string }) => o.evaluator === 'exact');
    expect(exact.delta).toMatchObject({ mean: 0, matched: ROWS, verdict: 'inconclusive' });
    expect(exact.rules.map((r: { status: string }) => r.status)).toEqual(['passed', 'passed']);
    const md = fs.readFileSync(out('same.md'), 'utf8');
    expect(md).toContain('pull request #7');
    expect(md).toMatch(
      /\| exact \| 0 gen-a \| 1\.000 \| 1\.000 \| \+0\.000 \[\+0\.000, \+0\.000\] \(95 %\) \| ✅ pass/,
    );
  });

  it('fails a candidate that regresses one evaluator at 95 % confidence (exit 1), naming it', async () => {
    const file = experimentFile(dir, '{models: [gen-b]}');
    const summary = out('summary.md');
    fs.writeFileSync(summary, '# earlier step\n');
    const res = await ci(
      file,
      [
        '--branch',
        'feature',
        '--commit',
        'cccc3333',
        '--report',
        out('bad.md'),
        '--junit',
        out('bad.xml'),
        '--json',
        out('bad.json'),
      ],
      { GITHUB_STEP_SUMMARY: summary },
    );
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toContain(
      'experiment qa: exact (launch 0) drop_at_confidence: score dropped at 95 % confidence',
    );
    expect(res.stderr).not.toContain('lenient');

    const md = fs.readFileSync(out('bad.md'), 'utf8');
    expect(md).toContain('## Evalgate CI: ❌ failed');
    expect(md).toMatch(
      /\| exact \| 0 gen-b \| 0\.000 \| 1\.000 \| −1\.000 \[−1\.000, −1\.000\] \(95 %\) \| ❌ fail \(worse\) \|/,
    );
    expect(md).toMatch(/\| lenient \| 0 gen-b \| 0\.000 \| 0\.000 \| \+0\.000 .*\| ✅ pass/);
    expect(md).toContain('Worst regressed items:');
    expect(md).toMatch(
      /\| exact \| \[q\d+\]\(http:\/\/127\.0\.0\.1:\d+\/projects\/[^/]+\/runs\/run_\w+\?tab=compare\) \| 1\.000 \| 0\.000 \| −1\.000 \| q\d+ \|/,
    );
    // Appended to the step summary, after what was there.
    const step = fs.readFileSync(summary, 'utf8');
    expect(step.startsWith('# earlier step\n')).toBe(true);
    expect(step).toContain(md);

    const report = JSON.parse(fs.readFileSync(out('bad.json'), 'utf8'));
    expect(report).toMatchObject({ exit_code: 1, status: 'failed', commit: 'cccc3333', branch: 'feature' });
    const x = report.experiments[0];
    expect(x.regressions).toHaveLength(10);
    expect(x.regressions[0]).toMatchObject({
      evaluator: 'exact',
      baseline_score: 1,
      run_score: 0,
      difference: -1,
    });
    const exact = x.evaluators.find((o: { evaluator: string }) => o.evaluator === 'exact');
    expect(exact.delta.interval).toEqual({ level: 0.95, lower: -1, upper: -1 });
    expect(exact.passed).toBe(false);

    const xml = fs.readFileSync(out('bad.xml'), 'utf8');
    expect(xml).toContain('<testsuites name="evalgate ci" tests="3" failures="1" errors="0"');
    expect(xml).toMatch(
      /<testcase classname="evalgate\.qa" name="exact \[launch 0 gen-b\]: drop_at_confidence" time="0">\s*<failure message="score dropped at 95 % confidence/,
    );
    if (hasXmllint) {
      const schema = path.join(ROOT, 'test/fixtures/junit.xsd');
      execFileSync('xmllint', ['--noout', '--schema', schema, out('bad.xml')], { stdio: 'pipe' });
    }
  });

  it.skipIf(!hasXmllint)(
    'writes JUnit XML that the JUnit schema accepts, and xmllint rejects a broken one',
    () => {
      const schema = path.join(ROOT, 'test/fixtures/junit.xsd');
      const broken = out('broken.xml');
      fs.writeFileSync(
        broken,
        fs.readFileSync(out('bad.xml'), 'utf8').replace('<testsuite ', '<testsuite bogus="1" '),
      );
      expect(() =>
        execFileSync('xmllint', ['--noout', '--schema', schema, broken], { stdio: 'pipe' }),
      ).toThrow();
    },
  );

  it('runs a candidate of prompt versions and parameters over a dataset version, and gates it', async () => {
    const prompt = async (body: Record<string, unknown>, path = '/v1/prompts') => {
      const res = await h.call('POST', path, { body });
      expect(res.status, res.text).toBe(201);
    };
    // Version 1 sends the row as it is (gen-a then answers what the dataset expects); version 2 wraps it.
    await prompt({
      name: 'qa-prompt',
      messages: [{ role: 'user', content: '{{input}}' }],
      labels: ['production'],
    });
    await prompt(
      { messages: [{ role: 'user', content: 'Question: {{input}}' }], labels: ['staging'] },
      '/v1/prompts/qa-prompt/versions',
    );
    // The candidate's prompt version (by label) and parameters, over version 1 of the dataset.
    const withPrompt = (label: string) => {
      const file = experimentFile(
        dir,
        `{models: [gen-a], prompts: [qa-prompt@${label}], parameters: {temperature: 0}}`,
      );
      fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('name: qa', 'name: qa\n      version: 1'));
      return file;
    };
    const kept = withPrompt('production');
    const same = await ci(kept, ['--branch', 'prompts', '--json', out('prompt-same.json')]);
    expect(same.code, same.stderr + same.stdout).toBe(0);
    const x = JSON.parse(fs.readFileSync(out('prompt-same.json'), 'utf8')).experiments[0];
    const run = await h.call('GET', `/v1/evaluation/runs/${x.run_id}`);
    expect(run.body.sample).toMatchObject({
      type: 'generate',
      models: ['gen-a'],
      prompts: [{ name: 'qa-prompt', version: 1, label: 'production' }],
      parameters: { temperature: 0 },
    });
    expect(run.body.ground_truth).toMatchObject({ type: 'dataset', version: 1 });

    const changed = await ci(withPrompt('staging'), ['--branch', 'prompts', '--report', out('prompt.md')]);
    expect(changed.code, changed.stderr).toBe(1);
    expect(fs.readFileSync(out('prompt.md'), 'utf8')).toMatch(/exact.*❌/);
  });

  it('answers the rows with a candidate command, uploads its outputs and gates them', async () => {
    const script = path.join(dir, 'answer.mjs');
    fs.writeFileSync(
      script,
      `import readline from 'node:readline';
for await (const line of readline.createInterface({ input: process.stdin })) {
  const row = JSON.parse(line);
  console.log(JSON.stringify({ output: row.expected }));
}
`,
    );
    const file = experimentFile(dir, `{command: "node ${script}"}`);
    const text = fs.readFileSync(file, 'utf8').replace('max_error_rate: 0.1', 'min: 1');
    fs.writeFileSync(file, text);
    const res = await ci(file, ['--branch', 'cmd', '--json', out('cmd.json')]);
    expect(res.code, res.stderr).toBe(0);
    const x = JSON.parse(fs.readFileSync(out('cmd.json'), 'utf8')).experiments[0];
    const exact = x.evaluators.find((o: { evaluator: string }) => o.evaluator === 'exact');
    expect(exact.candidate).toMatchObject({ avg_score: 1, total: ROWS });
    expect(exact.rules[0]).toMatchObject({ rule: 'min', status: 'passed' });
    const run = await h.call('GET', `/v1/evaluation/runs/${x.run_id}`);
    expect(run.body.sample).toMatchObject({ type: 'dataset', range: `0:${ROWS}` });

    fs.writeFileSync(file, text.replace(`node ${script}`, 'exit 3'));
    const failed = await ci(file, ['--branch', 'cmd']);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toContain('could not run: candidate command exited 3');
  });

  it('exits 2 when the server does not answer, and still writes the JSON and JUnit reports', async () => {
    const file = experimentFile(dir, '{models: [gen-a]}');
    const res = await ci(file, ['--json', out('down.json'), '--junit', out('down.xml')], {
      EVALGATE_BASE_URL: 'http://127.0.0.1:9',
      EVALGATE_MAX_RETRIES: '0',
    });
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toMatch(/experiment qa could not run: .*(connect|ECONNREFUSED|connection)/i);
    const report = JSON.parse(fs.readFileSync(out('down.json'), 'utf8'));
    expect(report).toMatchObject({ exit_code: 2, status: 'error' });
    expect(fs.readFileSync(out('down.xml'), 'utf8')).toMatch(
      /<testcase classname="evalgate\.qa" name="run" time="0">\s*<error /,
    );
  });

  it('exits 2 with a line and column for each problem of the experiment file', async () => {
    const file = path.join(dir, 'bad.yaml');
    fs.writeFileSync(
      file,
      `version: 1
experiments:
  qa:
    container: app
    candidate: {models: [gen-a]}
    evaluators: [exact]
    gate:
      exact: {min: 0.5}
`,
    );
    const res = await ci(file, []);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`${file}:3:3: experiments.qa: 'dataset' is missing`);
    expect(res.stderr).toContain(`${file}:7:5: experiments.qa.gate: unknown field 'gate'`);

    fs.writeFileSync(
      file,
      `version: 1
experiments:
  qa:
    container: app
    dataset: {name: qa}
    candidate: {models: [gen-a]}
    evaluators: [exact]
    gates:
      lenient: {min: 0.5}
`,
    );
    const gate = await ci(file, []);
    expect(gate.code).toBe(2);
    expect(gate.stderr).toContain(
      `${file}:9:7: experiments.qa.gates.lenient: gate on evaluator 'lenient', which is not among the experiment's evaluators (exact)`,
    );
    const missing = await ci(path.join(dir, 'none.yaml'), []);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('none.yaml:1:1: no such file');
  });

  it('exits 2 for an evaluator the server does not know, naming it', async () => {
    const file = experimentFile(dir, '{models: [gen-a]}').replace(/$/, '');
    fs.writeFileSync(
      file,
      fs.readFileSync(file, 'utf8').replace('[exact, lenient]', '[exact, lenient, nosuch]'),
    );
    const res = await ci(file, []);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/experiment qa could not run: .*nosuch/);
  });

  it("runs as a GitHub composite action: steps with the runner's variables, outputs and step summary", async () => {
    const workspace = tempDir('evalgate-ci-workspace-').dir;
    const tmp = tempDir('evalgate-ci-runner-').dir;
    // The CLI on PATH (the install step's "already installed" branch): this checkout's bundle.
    const bin = path.join(tmp, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(
      path.join(bin, 'evalgate'),
      `#!/usr/bin/env bash\nexec "${process.execPath}" "${cliBundle()}" "$@"\n`,
      { mode: 0o755 },
    );
    fs.copyFileSync(experimentFile(dir, '{models: [gen-b]}'), path.join(workspace, 'evals.yaml'));
    const summary = path.join(tmp, 'summary.md');
    fs.writeFileSync(summary, '');
    const base = cliEnv(h);
    delete base.EVALGATE_BASE_URL;
    delete base.EVALGATE_API_KEY;
    const env = {
      ...(base as Record<string, string>),
      PATH: `${bin}:${process.env.PATH}`,
      GITHUB_ACTIONS: 'true',
      GITHUB_WORKSPACE: workspace,
      GITHUB_STEP_SUMMARY: summary,
      GITHUB_REF: 'refs/heads/feature',
      GITHUB_REF_NAME: 'feature',
      GITHUB_SHA: 'dddd4444',
      GITHUB_REPOSITORY: 'acme/app',
      GITHUB_RUN_ID: '314',
      GITHUB_TOKEN: 'unused',
      RUNNER_TEMP: tmp,
    };
    const inputs = { 'server-url': h.url, 'api-key': h.admin.key, 'experiment-file': 'evals.yaml' };
    const failed = await runAction(path.join(ROOT, 'action.yml'), inputs, env, tmp);
    expect(failed.steps.map((s) => [s.name, s.skipped])).toEqual([
      ['Set up Node.js', true],
      ['Install the Evalgate CLI', false],
      ['Run the experiments', false],
    ]);
    expect(failed.steps[1]!.stdout).toContain(`Using the evalgate on PATH: ${bin}/evalgate`);
    expect(failed.code, failed.steps[2]!.stderr).toBe(1);
    expect(failed.outputs).toEqual({
      'exit-code': '1',
      report: 'evalgate-report.md',
      json: 'evalgate-report.json',
    });
    expect(failed.steps[2]!.stderr).toContain('exact (launch 0) drop_at_confidence');
    const md = fs.readFileSync(path.join(workspace, 'evalgate-report.md'), 'utf8');
    expect(md).toContain('## Evalgate CI: ❌ failed');
    expect(md).toContain(
      'commit `dddd4444`, branch `feature` · [job](https://github.com/acme/app/actions/runs/314)',
    );
    expect(fs.readFileSync(summary, 'utf8')).toContain(md);
    expect(fs.readFileSync(path.join(workspace, 'evalgate-junit.xml'), 'utf8')).toContain('failures="1"');
    expect(JSON.parse(fs.readFileSync(path.join(workspace, 'evalgate-report.json'), 'utf8')).exit_code).toBe(
      1,
    );

    fs.copyFileSync(experimentFile(dir, '{models: [gen-a]}'), path.join(workspace, 'evals.yaml'));
    const passed = await runAction(
      path.join(ROOT, 'action.yml'),
      { ...inputs, experiments: 'qa', junit: '' },
      env,
      tmp,
    );
    expect(passed.code, passed.steps[2]!.stderr).toBe(0);
    expect(passed.outputs['exit-code']).toBe('0');
    fs.rmSync(workspace, { recursive: true, force: true });
    fs.rmSync(tmp, { recursive: true, force: true });
  });
});
