// Database-independent: the code scorer's worker pool, no store.
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createWorkerPool } from '../../src/scoring/code/pool.js';
import { createCodeScorer, sandboxStatus } from '../../src/scoring/code/scorer.js';
import { ScorerSetupError } from '../../src/scoring/types.js';
import { tempDir } from '../helpers/temp.js';
import { pairs, scoreWith, skipScoring, testOptions, withScorer } from './helpers.js';

describe.skipIf(skipScoring)('code evaluators: workers', () => {
  const tmp = tempDir();
  const options = testOptions(tmp.dir, { timeoutMs: 1000 });
  afterAll(() => tmp.remove());

  it('recycles a worker after the configured number of samples', async () => {
    const source = `
count = 0
def evaluate(sample, ground_truth, baseline):
    global count
    count += 1
    return count
`;
    const out = await scoreWith(
      { ...options, recycleAfter: 10, batchSize: 5, workersPerScorer: 1 },
      source,
      pairs(Array.from({ length: 30 }, () => ({ output: 'x' }))),
    );
    const counts = out.map((o) => o.score);
    const run = Array.from({ length: 10 }, (_, i) => i + 1);
    expect(counts).toEqual([...run, ...run, ...run]);
  });

  it('hands the rest of a batch to a new worker before the CPU-seconds limit is reached', async () => {
    const source = `
import time
count = 0
def evaluate(sample, ground_truth, baseline):
    global count
    count += 1
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    return count
`;
    const limits = { ...options.sandbox.limits, cpuSeconds: 1 };
    const out = await scoreWith(
      { ...options, timeoutMs: 5000, workersPerScorer: 1, sandbox: { ...options.sandbox, limits } },
      source,
      pairs(Array.from({ length: 50 }, () => ({ output: 'x' }))),
    );
    expect(out.filter((o) => o.error)).toEqual([]);
    // The counter restarted at least twice: three or more workers shared the 2.5 CPU-seconds.
    expect(out.filter((o) => o.score === 1).length).toBeGreaterThanOrEqual(3);
  });

  it('times out each slow sample on its own and keeps the order of the batch', async () => {
    const source = `
import time
def evaluate(sample, ground_truth, baseline):
    if sample["output"] == "slow":
        time.sleep(60)
    return int(sample["id"])
`;
    const rows = ['ok', 'slow', 'ok', 'ok', 'slow', 'ok'].map((output, i) => ({ output, id: String(i) }));
    const out = await scoreWith({ ...options, workersPerScorer: 1 }, source, pairs(rows));
    expect(out.map((o) => o.error?.code ?? o.score)).toEqual([0, 'timeout', 2, 3, 'timeout', 5]);
    expect(out[1]!.latencyMs).toBe(1000);
  });

  it('charges a crash to the sample that caused it, then carries on', async () => {
    const source = `
import ctypes, os
def evaluate(sample, ground_truth, baseline):
    if sample["output"] == "segfault":
        ctypes.string_at(0)
    if sample["output"] == "exit":
        os._exit(1)
    return 1
`;
    const rows = ['ok', 'segfault', 'ok', 'exit', 'ok'].map((output) => ({ output }));
    const out = await scoreWith({ ...options, workersPerScorer: 1 }, source, pairs(rows));
    expect(out.map((o) => o.error?.code ?? o.score)).toEqual([1, 'worker_crashed', 1, 'worker_crashed', 1]);
    expect(out[1]!.error!.message).toContain('the worker died while evaluating this sample');
  });

  it('stops on abort, and the scorer still works afterwards', async () => {
    const source = `
import time
def evaluate(sample, ground_truth, baseline):
    if sample["output"] == "slow":
        time.sleep(0.5)
    return 1
`;
    await withScorer({ ...options, timeoutMs: 10_000 }, source, async (scorer) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('run cancelled')), 200);
      const started = Date.now();
      const slow = pairs(Array.from({ length: 20 }, () => ({ output: 'slow' })));
      await expect(scorer.scoreBatch(slow, controller.signal)).rejects.toThrow('run cancelled');
      expect(Date.now() - started).toBeLessThan(2000);
      const out = await scorer.scoreBatch(pairs([{ output: 'fast' }]), new AbortController().signal);
      expect(out[0]!.score).toBe(1);
    });
  });

  it('bounds parallel workers with a process-wide pool', async () => {
    const pool = createWorkerPool(1, 300_000);
    const source = `
import time
def evaluate(sample, ground_truth, baseline):
    time.sleep(0.2)
    return 1
`;
    const one = { ...options, pool, workers: 1, workersPerScorer: 1 };
    const started = Date.now();
    await Promise.all([
      scoreWith(one, source, pairs([{ output: 'a' }])),
      scoreWith(one, source, pairs([{ output: 'b' }])),
    ]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });

  it('hands out a distinct uid to each live worker', () => {
    const pool = createWorkerPool(2, 400_000);
    const uids = Array.from({ length: 5 }, () => pool.allocateUid());
    expect(new Set(uids).size).toBe(5);
    for (const uid of uids) expect(uid).toBeGreaterThanOrEqual(400_000);
    pool.releaseUid(uids[0]!);
  });

  it('reports an unavailable sandbox, refuses to run, and runs with rlimits only when allowed', async () => {
    const config = loadConfig({ EVALGATE_DATA_DIR: tmp.dir, EVALGATE_BWRAP: '/nonexistent/bwrap' });
    const status = await sandboxStatus(config);
    expect(status.available).toBe(false);
    expect(status.reason).toContain('not installed');
    const noSandbox = { ...options, sandbox: { ...options.sandbox, bwrap: '/nonexistent/bwrap' } };
    const source = `
def evaluate(sample, ground_truth, baseline):
    if sample["output"] == "big":
        return len(bytearray(4 * 1024 ** 3))
    return 1
`;
    const refused = await createCodeScorer(noSandbox, { id: 'evl_x', source, requirements: [] }).catch(
      (e) => e,
    );
    expect(refused).toBeInstanceOf(ScorerSetupError);
    expect((refused as ScorerSetupError).code).toBe('sandbox_unavailable');
    const out = await scoreWith(
      { ...noSandbox, allowUnsafe: true },
      source,
      pairs([{ output: 'a' }, { output: 'big' }]),
    );
    expect(out[0]!.score).toBe(1);
    expect(out[1]!.error!.message).toContain('MemoryError');
  });

  it('finds the sandbox available on this machine', async () => {
    const status = await sandboxStatus(loadConfig({ EVALGATE_DATA_DIR: tmp.dir }));
    expect(status).toEqual({ available: true });
  });
});
