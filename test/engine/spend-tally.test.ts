// Database-independent: the spend ledger and tally are in-memory.
import { describe, expect, it } from 'vitest';
import { runTally } from '../../src/engine/ledger.js';
import { Tally } from '../../src/shared/tally.js';

/*
 * The one count of paid calls (src/shared/tally.ts), as a run's ledger uses it (by kind, taken into one
 * statement on the run's counters) and as a grader uses it (by model, tokens only where reported).
 */

describe('Tally', () => {
  it("counts a run's calls by kind; take hands them over once and starts again at zero", () => {
    const t = runTally();
    expect(t.take()).toBeNull();
    t.add('judge', { usage: { prompt_tokens: 10, completion_tokens: 5 }, cost: 0.0001, priced: true });
    t.add('judge', { usage: null, cost: 0, priced: false });
    t.add('generation', { usage: { prompt_tokens: 3, completion_tokens: 2 }, cost: 0.00002 });
    const taken = t.take();
    expect(taken?.judge).toMatchObject({ calls: 2, unpriced: 1, reported: 1, prompt: 10, completion: 5 });
    expect(taken?.judge.cost).toBeCloseTo(0.0001, 12);
    expect(taken?.generation).toMatchObject({ calls: 1, unpriced: 0, prompt: 3, completion: 2, total: 5 });
    // Both kinds are always present, so that the run's counters get one statement.
    expect(t.take()).toBeNull();
    t.add('generation', { usage: null, cost: 0 });
    expect(t.take()).toMatchObject({ judge: { calls: 0 }, generation: { calls: 1 } });
  });

  it('merges what another tally took; totals add every key, money without floating-point noise', () => {
    const a = new Tally();
    a.add('m1', {
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 3 },
      cost: 0.1,
      latencyMs: 5,
    });
    a.add('m2', { usage: { prompt_tokens: 2, completion_tokens: 2 }, cost: 0.2, latencyMs: 7 });
    const b = new Tally();
    b.merge(a.take());
    expect(b.of('m1')).toMatchObject({ calls: 1, total: 3 });
    expect(b.of('m2')).toMatchObject({ calls: 1, total: 4 });
    expect(b.of('absent')).toMatchObject({ calls: 0, cost: 0 });
    expect(b.total()).toMatchObject({
      calls: 2,
      cost: 0.3,
      prompt: 3,
      completion: 3,
      total: 7,
      latencyMs: 12,
    });
    expect(Object.keys(b.byKey()).sort()).toEqual(['m1', 'm2']);
  });
});
