// Database-independent: the split of a model's concurrency between workers is arithmetic over their reports.
import { describe, expect, it } from 'vitest';
import { LocalModelLimiter } from '../../src/ratelimit/model-limiter-memory.js';
import { othersInFlight } from '../../src/ratelimit/model-limiter-redis.js';

const never = new AbortController().signal;
const limits = (concurrency: number) => ({ concurrency, rpm: null, tpm: null });

/** Whether an acquire is granted at once (a settled promise within a turn of the event loop). */
async function grantedNow(limiter: LocalModelLimiter, concurrency: number): Promise<boolean> {
  let granted = false;
  // A waiter still queued when the limiter closes is rejected: that is not a failure here.
  limiter.acquire('m', limits(concurrency), never).then(
    () => {
      granted = true;
    },
    () => {},
  );
  await new Promise((r) => setImmediate(r));
  return granted;
}

describe('reports of calls in flight', () => {
  it('reads each member’s report made under the membership seen now', () => {
    expect(othersInFlight('a,b,c', ['2|a,b,c', '0|a,b,c', '5|a,b,c'])).toEqual([2, 0, 5]);
  });

  it('is unknown while a member has not reported under the current membership', () => {
    expect(othersInFlight('a,b,c', ['2|a,b,c', '6|a,b', '0|a,b,c'])).toBeNull();
    expect(othersInFlight('a,b', ['1|a,b', null])).toBeNull();
    expect(othersInFlight('a,b', ['garbled', '1|a,b'])).toBeNull();
  });
});

describe('a worker’s share of a model’s concurrency', () => {
  it('is its share less what the others run beyond theirs', async () => {
    const limiter = new LocalModelLimiter();
    const s = limiter.state('m');
    // Three workers share 6 (2 each); this one is rank 0; rank 1 still runs 5 from an earlier, larger share.
    Object.assign(s, { members: 3, rank: 0, others: [0, 5, 1] });
    expect(await grantedNow(limiter, 6)).toBe(false);
    // Rank 1 is down to 3 (one over its share): one slot is free here, not two.
    s.others = [0, 3, 1];
    limiter.pump(s);
    await new Promise((r) => setImmediate(r));
    expect(s.active).toBe(1);
    expect(await grantedNow(limiter, 6)).toBe(false);
    // Everyone within their share: this worker may run its whole share.
    s.others = [1, 2, 0];
    limiter.pump(s);
    await new Promise((r) => setImmediate(r));
    expect(s.active).toBe(2);
    await limiter.close();
  });

  it('starts nothing while the membership is unconfirmed, and everything when alone', async () => {
    const limiter = new LocalModelLimiter();
    const s = limiter.state('m');
    Object.assign(s, { members: 2, rank: 1, others: null });
    expect(await grantedNow(limiter, 4)).toBe(false);
    Object.assign(s, { members: 1, rank: 0, others: [0] });
    limiter.pump(s);
    await new Promise((r) => setImmediate(r));
    expect(s.active).toBe(1);
    for (let i = 0; i < 3; i++) expect(await grantedNow(limiter, 4)).toBe(true);
    expect(await grantedNow(limiter, 4)).toBe(false);
    await limiter.close();
  });
});
