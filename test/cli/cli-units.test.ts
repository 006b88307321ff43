// Database-independent: the CLI's output formatting and request bodies, with no server.
import { describe, expect, it } from 'vitest';
import { CliExit, describeError } from '../../src/cli/client-context.js';
import { checkGates, parseGates } from '../../src/cli/gating.js';
import { usd } from '../../src/cli/output.js';
import { splitJsonArray } from '../../src/cli/row-sources.js';
import { runBody } from '../../src/cli/run-body.js';
import { markdownSummary } from '../../src/cli/run-results.js';
import { NotFoundError, type Run, UnprocessableEntityError } from '../../src/client/index.js';

const base = { container: 'app', evaluator: ['exact'], metadata: [] as string[] };

describe('runs create: the run body from the flags', () => {
  it('--dataset is the sample and the ground truth; --range applies to both', () => {
    expect(runBody({ ...base, dataset: 'qa', range: '10:20', metadata: ['commit=abc', 'ci=yes'] })).toEqual({
      container: 'app',
      evaluators: ['exact'],
      sample: { type: 'dataset', dataset: 'qa', range: '10:20' },
      ground_truth: { type: 'dataset', dataset: 'qa', range: '10:20' },
      metadata: { commit: 'abc', ci: 'yes' },
    });
  });

  it('--ground-truth overrides; --logs samples the container; --baseline takes the three forms', () => {
    expect(runBody({ ...base, dataset: 'qa', groundTruth: 'logs' }).ground_truth).toEqual({
      type: 'container',
      container: 'app',
    });
    const logs = runBody({ ...base, logs: true, baseline: 'dataset:old', environment: 'b' });
    expect(logs.sample).toEqual({ type: 'container', container: 'app' });
    expect(logs.ground_truth).toEqual({ type: 'container', container: 'app' });
    expect(logs.baseline).toEqual({ type: 'dataset', dataset: 'old' });
    expect(logs.environment).toBe('b');
    expect(runBody({ ...base, logs: true, baseline: 'generate:gen-a', range: '0:5' }).baseline).toEqual({
      type: 'generate',
      models: ['gen-a'],
    });
    expect(runBody({ ...base, logs: true, baseline: 'logs', range: '0:5' }).baseline).toEqual({
      type: 'container',
      container: 'app',
      range: '0:5',
    });
  });

  it('--generate takes its inputs from the ground truth; with --range it covers the whole slice', () => {
    expect(
      runBody({ ...base, generate: 'gen-a, gen-b', groundTruth: 'dataset:qa', range: '100:130' }),
    ).toEqual({
      container: 'app',
      evaluators: ['exact'],
      sample: { type: 'generate', models: ['gen-a', 'gen-b'], range: '0:30' },
      ground_truth: { type: 'dataset', dataset: 'qa', range: '100:130' },
    });
    expect(runBody({ ...base, generate: 'gen-a' }).ground_truth).toEqual({
      type: 'container',
      container: 'app',
    });
  });

  it('refuses ambiguous or malformed flags with a usage error', () => {
    const bad = [
      { ...base },
      { ...base, dataset: 'qa', logs: true },
      { ...base, evaluator: [], dataset: 'qa' },
      { ...base, dataset: 'qa', range: '5' },
      { ...base, dataset: 'qa', range: '9:3' },
      { ...base, dataset: 'qa', groundTruth: 'generate:x' },
      { ...base, dataset: 'qa', baseline: 'generate:a,b' },
      { ...base, dataset: 'qa', metadata: ['novalue'] },
    ];
    for (const flags of bad) expect(() => runBody(flags), JSON.stringify(flags)).toThrow(CliExit);
  });
  it('--cache sends the run through the response cache, with an optional TTL', () => {
    expect(runBody({ ...base, dataset: 'qa', cache: true }).cache).toEqual({});
    expect(runBody({ ...base, dataset: 'qa', cache: '600' }).cache).toEqual({ ttl_seconds: 600 });
    expect(runBody({ ...base, dataset: 'qa' }).cache).toBeUndefined();
    expect(() => runBody({ ...base, dataset: 'qa', cache: 'soon' })).toThrow(CliExit);
  });
});

function run(perModel: unknown[], status = 'completed'): Run {
  return {
    object: 'evaluation.run',
    id: 'run_1',
    status,
    results: { overall: null, metadata: null, per_model: perModel, launch_count: perModel.length },
    metrics: { progress: { done: 4, total: 4 }, duration_ms: 1500 },
    spend: 0.0012,
    error: null,
  } as unknown as Run;
}

const perEval = (name: string, accuracy: number | null, avg: number | null) => ({
  evaluator_name: name,
  accuracy,
  avg_score: avg,
  num_passed: 3,
  num_failed: 1,
  num_errors: 0,
  num_missing: 0,
  num_total: 4,
});

describe('--fail-under', () => {
  it('parses the plain and the per-evaluator forms, including evaluator names with dots', () => {
    expect(parseGates(['accuracy=0.8', 'avg_score=0.7', 'help.v2.accuracy=0.9'])).toEqual([
      { evaluator: null, metric: 'accuracy', threshold: 0.8, text: '0.8' },
      { evaluator: null, metric: 'avg_score', threshold: 0.7, text: '0.7' },
      { evaluator: 'help.v2', metric: 'accuracy', threshold: 0.9, text: '0.9' },
    ]);
    for (const bad of ['accuracy', 'recall=0.5', 'accuracy=high', '.accuracy=0.5', 'accuracy=']) {
      expect(() => parseGates([bad]), bad).toThrow(CliExit);
    }
  });

  it('checks every launch × evaluator a gate covers, naming launch and model', () => {
    const r = run([
      { launch_index: 0, model: { slug: 'gen-a' }, per_eval: { evl_1: perEval('exact', 0.62, 0.62) } },
      { launch_index: 1, model: { slug: 'gen-b' }, per_eval: { evl_1: perEval('exact', 0.9, 0.9) } },
    ]);
    expect(checkGates(r, parseGates(['exact.accuracy=0.8']))).toEqual([
      { passed: false, text: 'exact accuracy 0.62 < 0.8 (launch 0, model gen-a)' },
      { passed: true, text: 'exact accuracy 0.9 ≥ 0.8 (launch 1, model gen-b)' },
    ]);
    const missing = checkGates(r, parseGates(['nope.accuracy=0.1']));
    expect(missing).toEqual([
      { passed: false, text: "accuracy cannot be checked: run run_1 has no results for evaluator 'nope'" },
    ]);
    // An evaluator without verdicts has no accuracy: a gate on it fails rather than passing unchecked.
    const none = run([{ launch_index: 0, model: null, per_eval: { evl_1: perEval('exact', null, 0.5) } }]);
    expect(checkGates(none, parseGates(['accuracy=0.1']))).toEqual([
      { passed: false, text: 'exact accuracy n/a < 0.1 (launch 0)' },
    ]);
  });

  it('renders a markdown summary with the figures and the gates', () => {
    const r = run([
      { launch_index: 0, model: { slug: 'gen-a' }, per_eval: { evl_1: perEval('ex|act', 0.75, 0.5) } },
    ]);
    const text = markdownSummary(r, [{ passed: false, text: 'ex|act accuracy 0.75 < 0.8 (launch 0)' }]);
    expect(text).toContain('### Evalgate run `run_1`: completed');
    expect(text).toContain(
      '| launch | model | evaluator | avg score | accuracy | passed | failed | errors | missing |',
    );
    expect(text).toContain('| 0 | gen-a | ex\\|act | 0.500 | 0.750 | 3 | 1 | 0 | 0 |');
    expect(text).toContain('Samples 4/4 · spend $0.0012 · duration 1.5 s');
    expect(text).toContain('- ❌ ex\\|act accuracy 0.75 < 0.8 (launch 0)');
  });
});

async function split(text: string, size: number): Promise<unknown[]> {
  async function* chunks() {
    for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
  }
  const out: unknown[] = [];
  for await (const element of splitJsonArray(chunks(), 'f.json')) out.push(JSON.parse(element));
  return out;
}

describe('JSON arrays split element by element', () => {
  const rows = [
    { input: 'a ] } { [ , "', output: 'x\\"y', n: [1, [2, { z: 3 }]] },
    { input: 'é ✓', expected: null },
    {},
  ];
  const text = ` \n[${rows.map((r) => JSON.stringify(r, null, 2)).join(' ,\n')}]\n`;

  it('yields the same elements whatever the chunk boundaries', async () => {
    for (const size of [1, 2, 3, 7, 64, text.length]) expect(await split(text, size)).toEqual(rows);
    expect(await split('[]', 1)).toEqual([]);
    expect(await split('[1, "two" ,true]', 2)).toEqual([1, 'two', true]);
  });

  it('reports what is not one array', async () => {
    for (const bad of ['{"a":1}', '[{"a":1}', '[{"a":1},]', '[{"a":1}] x', '[{"a":1} {"b":2}]', '[,{}]']) {
      await expect(split(bad, 3), bad).rejects.toThrow(CliExit);
    }
  });
});

describe('errors become one line (a 422 lists every problem)', () => {
  it('formats the client errors', () => {
    const headers = new Headers();
    const notFound = new NotFoundError("404 Run 'run_x' not found", {
      status: 404,
      code: 'not_found',
      headers,
    });
    expect(describeError(notFound)).toEqual({ exitCode: 1, lines: ["404 not_found: Run 'run_x' not found"] });
    const invalid = new UnprocessableEntityError('422 …', {
      status: 422,
      code: 'validation_error',
      headers,
      detail: [
        { loc: ['body', 'model'], msg: 'Field required for judge evaluators', type: 'missing' },
        { loc: ['body', 'prompt'], msg: 'Field required for judge evaluators', type: 'missing' },
      ],
    });
    expect(describeError(invalid).lines).toEqual([
      '422 validation_error: 2 problems',
      '  body.model: Field required for judge evaluators (missing)',
      '  body.prompt: Field required for judge evaluators (missing)',
    ]);
    expect(describeError(new CliExit(2, ['run run_1 ended error']))).toEqual({
      exitCode: 2,
      lines: ['run run_1 ended error'],
    });
  });
});

describe('money in tables', () => {
  it('writes every amount in one plain notation, small ones to 1e-10 USD', () => {
    expect(usd(9e-7)).toBe('$0.0000009');
    expect(usd(0.0000054)).toBe('$0.0000054');
    expect(usd(0.0000050999999999999995)).toBe('$0.0000051');
    expect(usd(1.25)).toBe('$1.2500');
    expect(usd(0)).toBe('$0');
    expect(usd(null)).toBe('-');
  });
});
