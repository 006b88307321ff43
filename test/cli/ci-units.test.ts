// Database-independent: the experiment file, gate arithmetic and CI variables are pure functions.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ciContext } from '../../src/cli/ci/ci-env.js';
import { nextLink } from '../../src/cli/ci/comments.js';
import { ExperimentFileError, parseExperiments } from '../../src/cli/ci/experiment-file.js';
import { ExperimentFile } from '../../src/cli/ci/experiment-schema.js';
import { evaluateGates, GateSetupError, intervalAt } from '../../src/cli/ci/gates.js';
import { runBodyOf } from '../../src/cli/ci/launch.js';
import type { Evalgate, Run, RunComparison } from '../../src/client/index.js';
import { tempDir } from '../helpers/temp.js';
import { ROOT } from './cli-helpers.js';

function problems(text: string): string[] {
  try {
    parseExperiments(text, 'e.yaml');
  } catch (err) {
    if (err instanceof ExperimentFileError) return err.lines();
    throw err;
  }
  return [];
}

const VALID = `version: 1
experiments:
  qa:
    container: app
    dataset: {name: qa}
    candidate: {models: [gen-a]}
    evaluators: [exact]
`;

describe('the experiment file', () => {
  it('has its JSON Schema committed as written out from the code', () => {
    const file = JSON.parse(
      fs.readFileSync(path.join(ROOT, 'schemas/evalgate-experiments.schema.json'), 'utf8'),
    );
    const { $schema, ...rest } = file;
    expect($schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(rest).toEqual(JSON.parse(JSON.stringify(ExperimentFile)));
  });

  it('parses a valid file into named experiments', () => {
    expect(parseExperiments(VALID, 'e.yaml')).toEqual([
      {
        name: 'qa',
        experiment: {
          container: 'app',
          dataset: { name: 'qa' },
          candidate: { models: ['gen-a'] },
          evaluators: ['exact'],
        },
      },
    ]);
  });

  it('names the line and column of every problem', () => {
    expect(problems('version: 1\nexperiments:\n  qa: [1\n')).toEqual([
      expect.stringMatching(/^e\.yaml:4:1: .*/),
    ]);
    expect(problems(VALID.replace('version: 1', 'version: 2'))).toEqual(['e.yaml:1:10: version: must be 1']);
    expect(
      problems(
        VALID.replace(
          '    evaluators: [exact]',
          '    evaluators: [exact]\n    gates:\n      exact: {min: high, metric: pass}',
        ),
      ),
    ).toEqual([
      'e.yaml:9:20: experiments.qa.gates.exact.min: must be number',
      'e.yaml:9:34: experiments.qa.gates.exact.metric: must be one of "avg_score", "accuracy"',
    ]);
    expect(problems(VALID.replace('{models: [gen-a]}', '{models: [gen-a], command: "x"}'))).toEqual([
      'e.yaml:6:16: experiments.qa.candidate: give models (and/or prompts), or command, not both',
    ]);
    expect(problems(VALID.replace('{name: qa}', '{name: qa, range: "0:2", revision: 3}'))).toEqual([
      "e.yaml:5:39: experiments.qa.dataset.revision: unknown field 'revision'",
    ]);
    expect(problems(VALID.replace('{name: qa}', '{name: qa, range: "9:2"}'))).toEqual([
      'e.yaml:5:32: experiments.qa.dataset.range: start must not be greater than end',
    ]);
    expect(problems(VALID.replace('  qa:', '  "q a":'))).toEqual([
      "e.yaml:3:3: experiments.q a: unknown experiment name 'q a'",
    ]);
  });
});

describe('an experiment of prompt versions and parameters in the file', () => {
  const EXPERIMENT = VALID.replace(
    '{models: [gen-a]}',
    '{models: [gen-a, gen-b], prompts: [qa@3, qa@staging, qa], parameters: {temperature: 0.2, seed: 7}}',
  ).replace('{name: qa}', '{name: qa, version: 7, range: "0:20"}');

  it('becomes one run: each prompt version × model over the pinned dataset version', async () => {
    const [x] = parseExperiments(EXPERIMENT, 'e.yaml');
    const ctx = ciContext({});
    const body = await runBodyOf(null as unknown as Evalgate, x!, ctx);
    expect(body.sample).toEqual({
      type: 'generate',
      models: ['gen-a', 'gen-b'],
      prompts: [{ name: 'qa', version: 3 }, { name: 'qa', label: 'staging' }, { name: 'qa' }],
      parameters: { temperature: 0.2, seed: 7 },
      range: '0:20',
    });
    expect(body.ground_truth).toEqual({ type: 'dataset', dataset: 'qa', version: 7, range: '0:20' });
  });

  it('names the line and column of a wrong prompt, parameter or combination', () => {
    expect(problems(VALID.replace('{models: [gen-a]}', '{prompts: ["qa@"]}'))).toEqual([
      expect.stringMatching(/^e\.yaml:6:26: experiments\.qa\.candidate\.prompts\.0: must match pattern/),
    ]);
    expect(
      problems(VALID.replace('{models: [gen-a]}', '{prompts: [qa], parameters: {temprature: 1}}')),
    ).toEqual(["e.yaml:6:45: experiments.qa.candidate.parameters.temprature: unknown field 'temprature'"]);
    expect(problems(VALID.replace('{models: [gen-a]}', '{command: "x", parameters: {seed: 1}}'))).toEqual([
      'e.yaml:6:31: experiments.qa.candidate.parameters: parameters go with models or prompts',
    ]);
    expect(problems(VALID.replace('{name: qa}', '{name: qa, version: 0}'))).toEqual([
      'e.yaml:5:34: experiments.qa.dataset.version: must be >= 1',
    ]);
  });
});

const comparison = (c: Partial<RunComparison['comparisons'][number]>): RunComparison =>
  ({
    comparisons: [
      {
        evaluator: { id: 'ev_1', name: 'exact' },
        launch: { index: 0, model: null },
        baseline_launch: { index: 0, model: null },
        matched: 10,
        mean_difference: -0.1,
        stdev: 0.2,
        confidence_interval: { level: 0.95, lower: -0.243, upper: 0.043 },
        verdict: 'inconclusive',
        pass_rate: { positions: 10, run: 0.8, baseline: 0.9, change: -0.1 },
        regressions: [],
        ...c,
      },
    ],
  }) as unknown as RunComparison;

const run = (perEval: Record<string, unknown>): Run =>
  ({
    id: 'run_x',
    status: 'completed',
    results: { per_model: [{ launch_index: 0, model: null, per_eval: perEval }] },
  }) as unknown as Run;

describe('the gates', () => {
  const figures = {
    evaluator_name: 'exact',
    avg_score: 0.8,
    accuracy: 0.8,
    num_total: 10,
    num_errors: 2,
    num_missing: 0,
  };

  it('recomputes the paired interval at another confidence level (Student t, n − 1 df)', () => {
    const c = comparison({}).comparisons[0]!;
    expect(intervalAt(c, 0.95)).toBe(c.confidence_interval);
    // t(0.8, 9) = 0.8834: -0.1 ± 0.8834 × 0.2 / √10
    const at60 = intervalAt(c, 0.6)!;
    expect(at60.lower).toBeCloseTo(-0.1 - 0.05587, 4);
    expect(at60.upper).toBeCloseTo(-0.1 + 0.05587, 4);
  });

  it('fails each rule on its own figure and skips drop rules without a baseline', () => {
    const gates = { exact: { min: 0.9, max_drop: 0.05, drop_at_confidence: 0.6, max_error_rate: 0.1 } };
    const [o] = evaluateGates(run({ ev_1: figures }), run({ ev_1: figures }), comparison({}), gates);
    expect(o!.rules.map((r) => [r.rule, r.status])).toEqual([
      ['min', 'failed'],
      ['max_drop', 'failed'],
      ['drop_at_confidence', 'failed'],
      ['max_error_rate', 'failed'],
    ]);
    const [alone] = evaluateGates(run({ ev_1: figures }), null, null, gates);
    expect(alone!.rules.map((r) => r.status)).toEqual(['failed', 'skipped', 'skipped', 'failed']);
  });

  it('refuses a gate on an evaluator the run has no results for', () => {
    expect(() => evaluateGates(run({ ev_1: figures }), null, null, { lenient: { min: 0 } })).toThrow(
      GateSetupError,
    );
    expect(() => evaluateGates(run({ ev_1: figures }), null, null, { lenient: { min: 0 } })).toThrow(
      "gate on evaluator 'lenient': run run_x has no results for it (its evaluators: exact)",
    );
  });
});

describe('the CI environment', () => {
  it('reads GitHub pull requests from the event payload, else from the ref; GitLab from its variables', () => {
    const { dir } = tempDir('evalgate-ci-env-');
    const event = path.join(dir, 'event.json');
    fs.writeFileSync(event, JSON.stringify({ pull_request: { number: 42 } }));
    const gh = ciContext({
      GITHUB_ACTIONS: 'true',
      GITHUB_SHA: 'abc',
      GITHUB_HEAD_REF: 'feature',
      GITHUB_REF_NAME: '42/merge',
      GITHUB_BASE_REF: 'main',
      GITHUB_EVENT_PATH: event,
      GITHUB_REPOSITORY: 'o/r',
      GITHUB_RUN_ID: '9',
    });
    expect(gh).toEqual({
      provider: 'github',
      commit: 'abc',
      branch: 'feature',
      pullRequest: 42,
      targetBranch: 'main',
      jobUrl: 'https://github.com/o/r/actions/runs/9',
    });
    expect(ciContext({ GITHUB_ACTIONS: 'true', GITHUB_REF: 'refs/pull/7/merge' }).pullRequest).toBe(7);
    expect(ciContext({ GITHUB_ACTIONS: 'true', GITHUB_REF_NAME: 'main' }, { branch: 'x' })).toMatchObject({
      branch: 'x',
      pullRequest: null,
    });
    expect(
      ciContext({
        GITLAB_CI: 'true',
        CI_COMMIT_SHA: 'def',
        CI_MERGE_REQUEST_IID: '5',
        CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: 'f',
        CI_MERGE_REQUEST_TARGET_BRANCH_NAME: 'main',
      }),
    ).toMatchObject({ provider: 'gitlab', commit: 'def', branch: 'f', pullRequest: 5, targetBranch: 'main' });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("reads the Link header's next page", () => {
    expect(
      nextLink(
        '<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last"',
      ),
    ).toBe('https://api.github.com/x?page=2');
    expect(nextLink('<https://api.github.com/x?page=1>; rel="prev"')).toBeNull();
    expect(nextLink(null)).toBeNull();
  });
});
