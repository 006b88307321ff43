// Database-independent: an in-memory cache of promises.
import { describe, expect, it } from 'vitest';
import { PromiseCache } from '../../src/shared/promise-cache.js';

describe('PromiseCache', () => {
  it('makes each key once and shares the answer while it is pending and after', async () => {
    const cache = new PromiseCache<string, number>();
    let made = 0;
    let release!: (v: number) => void;
    const make = () => {
      made += 1;
      return new Promise<number>((resolve) => {
        release = resolve;
      });
    };
    const first = cache.get('a', make);
    const second = cache.get('a', make);
    expect(second).toBe(first);
    expect(made).toBe(1);
    release(42);
    await expect(first).resolves.toBe(42);
    await expect(cache.get('a', make)).resolves.toBe(42);
    expect(made).toBe(1);
    expect(cache.keys()).toEqual(['a']);
  });

  it('forgets a promise that rejects, so the next get tries again', async () => {
    const cache = new PromiseCache<string, number>();
    let attempt = 0;
    const make = async () => {
      attempt += 1;
      if (attempt === 1) throw new Error('first try fails');
      return attempt;
    };
    await expect(cache.get('k', make)).rejects.toThrow('first try fails');
    await Promise.resolve();
    expect(cache.peek('k')).toBeUndefined();
    await expect(cache.get('k', make)).resolves.toBe(2);
    expect(attempt).toBe(2);
  });

  it('does not forget a newer promise when an older one of the same key rejects', async () => {
    const cache = new PromiseCache<string, string>();
    let fail!: (e: Error) => void;
    const old = cache.get('k', () => new Promise<string>((_, reject) => (fail = reject)));
    cache.delete('k');
    const fresh = cache.get('k', async () => 'fresh');
    fail(new Error('late'));
    await expect(old).rejects.toThrow('late');
    expect(cache.peek('k')).toBe(fresh);
  });

  it('keeps keys apart, and clear forgets them all', async () => {
    const cache = new PromiseCache<number, string>();
    await cache.get(1, async (k) => `v${k}`);
    await cache.get(2, async (k) => `v${k}`);
    await expect(cache.peek(2)).resolves.toBe('v2');
    expect(cache.keys()).toEqual([1, 2]);
    cache.clear();
    expect(cache.keys()).toEqual([]);
    expect(cache.peek(1)).toBeUndefined();
  });
});
