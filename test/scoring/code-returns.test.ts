// Database-independent: the code scorer's results, read from the sandbox, no store.
import { afterAll, describe, expect, it } from 'vitest';
import { createCodeScorer } from '../../src/scoring/code/scorer.js';
import { ScorerSetupError } from '../../src/scoring/types.js';
import { tempDir } from '../helpers/temp.js';
import { item, pairs, scoreWith, skipScoring, testOptions } from './helpers.js';

describe.skipIf(skipScoring)('code evaluators: the user contract', () => {
  const tmp = tempDir();
  const options = testOptions(tmp.dir);
  afterAll(() => tmp.remove());

  it('accepts a number, a bool and a dict with score, passed and reason', async () => {
    const source = `
def evaluate(sample, ground_truth, baseline):
    kind = sample["output"]
    if kind == "number": return 0.75
    if kind == "int": return 2
    if kind == "true": return True
    if kind == "false": return False
    if kind == "dict": return {"score": 0.5, "passed": True, "reason": "half right"}
    if kind == "dict-bool": return {"score": False}
    return {"score": 1}
`;
    const out = await scoreWith(
      options,
      source,
      pairs(
        ['number', 'int', 'true', 'false', 'dict', 'dict-bool', 'plain-dict'].map((output) => ({ output })),
      ),
    );
    expect(out.map((o) => [o.score, o.passed, o.reason, o.error])).toEqual([
      [0.75, null, null, null],
      [2, null, null, null],
      [1, true, null, null],
      [0, false, null, null],
      [0.5, true, 'half right', null],
      [0, false, null, null],
      [1, null, null, null],
    ]);
    for (const o of out) expect(o.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('passes every canonical field plus raw, and None for absent sides', async () => {
    const source = `
def evaluate(sample, ground_truth, baseline):
    assert baseline is None
    assert sorted(sample) == ["expected", "id", "input", "metadata", "output", "raw"], sorted(sample)
    assert sample["metadata"] == {"lang": "en"} and sample["raw"] == {"row": 7}
    assert ground_truth is None or ground_truth["expected"] == "4"
    return {"score": 1, "reason": f"{sample['id']}:{sample['input']}:{ground_truth is None}"}
`;
    const out = await scoreWith(options, source, [
      {
        position: 0,
        sample: item('a', { input: '2+2', output: '4', metadata: { lang: 'en' }, raw: { row: 7 } }),
        groundTruth: item('a', { expected: '4' }),
        baseline: null,
      },
      {
        position: 1,
        sample: item('b', { input: 'x', output: 'y', metadata: { lang: 'en' }, raw: { row: 7 } }),
        groundTruth: null,
        baseline: null,
      },
    ]);
    expect(out.map((o) => o.error)).toEqual([null, null]);
    expect(out.map((o) => o.reason)).toEqual(['a:2+2:False', 'b:x:True']);
  });

  it('runs async evaluators, and sync ones that return an awaitable', async () => {
    const source = `
import asyncio

async def helper(text):
    await asyncio.sleep(0.001)
    return len(text) / 10

async def evaluate(sample, ground_truth, baseline):
    return {"score": await helper(sample["output"]), "passed": True}
`;
    const out = await scoreWith(options, source, pairs([{ output: 'abc' }, { output: 'abcdefghij' }]));
    expect(out.map((o) => [o.score, o.passed])).toEqual([
      [0.3, true],
      [1, true],
    ]);
    const syncReturningCoroutine = `
async def later(x):
    return x == "yes"

def evaluate(sample, ground_truth, baseline):
    return later(sample["output"])
`;
    const out2 = await scoreWith(
      options,
      syncReturningCoroutine,
      pairs([{ output: 'yes' }, { output: 'no' }]),
    );
    expect(out2.map((o) => o.passed)).toEqual([true, false]);
  });

  it('records an exception as a per-sample error with the end of the traceback', async () => {
    const source = `
def parse(text):
    return int(text)

def evaluate(sample, ground_truth, baseline):
    return parse(sample["output"]) > 0
`;
    const out = await scoreWith(
      options,
      source,
      pairs([{ output: '5' }, { output: 'five' }, { output: '-1' }]),
    );
    expect(out[0]).toMatchObject({ score: 1, passed: true, error: null });
    expect(out[2]).toMatchObject({ score: 0, passed: false, error: null });
    expect(out[1]!.score).toBeNull();
    expect(out[1]!.error!.code).toBe('evaluator_exception');
    const message = out[1]!.error!.message;
    expect(message).toContain("ValueError: invalid literal for int() with base 10: 'five'");
    expect(message).toContain('line 3, in parse');
    expect(message).toContain('return int(text)');
    expect(message).not.toContain('runner.py');
  });

  it('keeps what each sample prints and warns, on that sample only', async () => {
    const source = `
import os, sys, warnings

def evaluate(sample, ground_truth, baseline):
    n = sample["output"]
    if n == 1:
        print("one", 1)
    if n == 2:
        print("to stderr", file=sys.stderr)
        warnings.warn("careful")
    if n == 3:
        os.write(1, b"raw fd 1 write\\n")
        os.write(2, b"raw fd 2 write\\n")
        sys.__stdout__.write("dunder stdout\\n")
        sys.__stdout__.flush()
    if n == 4:
        print("x" * 100_000)
        raise RuntimeError("after printing")
    return 1
`;
    const out = await scoreWith(options, source, pairs([0, 1, 2, 3, 4, 5].map((output) => ({ output }))));
    expect(out.map((o) => o.error?.code ?? null)).toEqual([
      null,
      null,
      null,
      null,
      'evaluator_exception',
      null,
    ]);
    expect(out.map((o) => o.score)).toEqual([1, 1, 1, 1, null, 1]);
    expect(out[0]!.logs).toBeNull();
    expect(out[1]!.logs).toBe('one 1\n');
    expect(out[2]!.logs).toContain('to stderr');
    expect(out[2]!.logs).toContain('UserWarning: careful');
    // C-level writes to fd 1 cannot reach the protocol: the batch still parsed.
    expect(out[3]!.logs).toBeNull();
    expect(out[4]!.logs!.length).toBeLessThan(4200);
    expect(out[4]!.logs).toContain('more characters dropped');
    expect(out[5]!.logs).toBeNull();
  });

  it('rejects other return values with a clear per-sample error', async () => {
    const source = `
def evaluate(sample, ground_truth, baseline):
    return {
        "none": None,
        "str": "1.0",
        "nan": float("nan"),
        "inf": float("inf"),
        "list": [1],
        "no-score": {"passed": True},
        "text-score": {"score": "high"},
        "bad-passed": {"score": 1, "passed": "yes"},
        "bad-reason": {"score": 1, "reason": 42},
        "ok": 1.0,
    }[sample["output"]]
`;
    const kinds = [
      'none',
      'str',
      'nan',
      'inf',
      'list',
      'no-score',
      'text-score',
      'bad-passed',
      'bad-reason',
      'ok',
    ];
    // With ground truth present (without it, None counts as missing data: test/runs/code.test.ts).
    const rows = kinds.map((output) => ({ output, expected: 'x' }));
    const out = await scoreWith(options, source, pairs(rows));
    const codes = out.map((o) => o.error?.code ?? null);
    expect(codes).toEqual([...kinds.slice(0, -1).map(() => 'invalid_return'), null]);
    const messages = out.map((o) => o.error?.message ?? '');
    expect(messages[0]).toMatch(/returned None.*expected a number, a bool, or a dict/);
    expect(messages[1]).toContain("str ('1.0')");
    expect(messages[2]).toContain('finite number, got nan');
    expect(messages[5]).toContain("without 'score'");
    expect(messages[6]).toContain("'score' must be a number");
    expect(messages[7]).toContain("'passed' must be a bool");
    expect(messages[8]).toContain("'reason' must be a string");
  });

  it('fails setup when the source raises while loading or lacks evaluate', async () => {
    const attempt = (source: string) =>
      createCodeScorer(options, { id: 'evl_bad', source, requirements: [] }).then(
        () => null,
        (err: unknown) => err,
      );
    const raised = await attempt('import not_a_module_anywhere\ndef evaluate(s, g, b):\n    return 1\n');
    expect(raised).toBeInstanceOf(ScorerSetupError);
    expect((raised as ScorerSetupError).code).toBe('evaluator_load_failed');
    expect((raised as ScorerSetupError).message).toContain("No module named 'not_a_module_anywhere'");
    const missing = await attempt('evaluate = 3\n');
    expect((missing as ScorerSetupError).code).toBe('evaluator_load_failed');
    expect((missing as ScorerSetupError).message).toContain('must define a function evaluate');
  });

  it('scores many positions across workers in order', async () => {
    const source = 'def evaluate(sample, ground_truth, baseline):\n    return int(sample["output"]) * 2\n';
    const inputs = pairs(Array.from({ length: 5000 }, (_, i) => ({ output: String(i) })));
    const out = await scoreWith({ ...options, batchSize: 300 }, source, inputs);
    expect(out).toHaveLength(5000);
    expect(out.every((o, i) => o.score === i * 2)).toBe(true);
  });
});
