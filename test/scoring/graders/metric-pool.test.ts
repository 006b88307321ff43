// Database-independent: the metric pool's worker threads, no store.
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  computeSimilarity,
  INLINE_CHARS,
  metricPoolState,
} from '../../../src/scoring/graders/metric-pool.js';
import { similarity } from '../../../src/scoring/graders/text.js';
import { seeded } from '../../helpers/random.js';

const THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));
const open = () => new AbortController().signal;

function words(seed: number, chars: number): string {
  const { pick } = seeded(seed);
  const vocabulary = ['alpha', 'beta', 'gamma', 'delta', 'kappa', 'omega', 'sigma', 'tau'];
  let out = '';
  while (out.length < chars) out += `${pick(vocabulary)} `;
  return out.slice(0, chars);
}

describe('the metric pool', () => {
  it('scores small texts inline, with no thread', async () => {
    const before = metricPoolState();
    const a = words(1, INLINE_CHARS / 2);
    const b = words(2, INLINE_CHARS / 2);
    expect(await computeSimilarity('rouge_l', a, b, open())).toBe(similarity('rouge_l', a, b));
    expect(metricPoolState()).toMatchObject({ started: before.started, finished: before.finished });
  });

  it('scores larger texts on its threads, queued past their number, with the values computed inline', async () => {
    const before = metricPoolState();
    const jobs = Array.from({ length: THREADS + 3 }, (_, i) => {
      const metric = (['fuzzy_match', 'bleu', 'rouge_l', 'gleu', 'rouge_2'] as const)[i % 5] ?? 'bleu';
      return { metric, a: words(10 + i, 3000), b: words(20 + i, 2000) };
    });
    const values = await Promise.all(jobs.map((j) => computeSimilarity(j.metric, j.a, j.b, open())));
    expect(values).toEqual(jobs.map((j) => similarity(j.metric, j.a, j.b)));
    const after = metricPoolState();
    expect(after.finished).toBe(before.finished + jobs.length);
    expect(after.threads).toBeLessThanOrEqual(THREADS);
    expect(after).toMatchObject({ busy: 0, queued: 0 });
  });

  it('drops a waiting job whose caller gave up, and stops a running one', async () => {
    // Long enough (about a second) that the others wait behind them.
    const long = () => computeSimilarity('fuzzy_match', words(30, 90_000), words(31, 90_000), open());
    const running = Array.from({ length: THREADS }, long);
    const gaveUp = new AbortController();
    const waiting = computeSimilarity('bleu', words(32, 5000), words(33, 5000), gaveUp.signal);
    const before = metricPoolState();
    expect(before.queued).toBe(1);
    gaveUp.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    expect(metricPoolState()).toMatchObject({ queued: 0, abandoned: before.abandoned });
    await Promise.all(running);

    const stop = new AbortController();
    const stopped = computeSimilarity('fuzzy_match', words(34, 90_000), words(35, 90_000), stop.signal);
    expect(metricPoolState().busy).toBe(1);
    stop.abort();
    await expect(stopped).rejects.toMatchObject({ name: 'AbortError' });
    expect(metricPoolState()).toMatchObject({ busy: 0, abandoned: before.abandoned + 1 });
    // An already aborted caller is refused at once.
    await expect(computeSimilarity('meteor', 'a', 'b', stop.signal)).rejects.toMatchObject({
      name: 'AbortError',
    });
  }, 60_000);
});
