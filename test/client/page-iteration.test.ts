// Database-independent: the client's pages are driven by a fetcher handed in (an in-memory list here).
import { describe, expect, it } from 'vitest';
import { Page, PagePromise } from '../../src/client/pagination.js';

/** A list of `n` numbers served `limit` at a time, recording the offsets asked for. */
function served(n: number, limit: number) {
  const items = Array.from({ length: n }, (_, i) => i);
  const asked: number[] = [];
  const fetchPage = async (offset: number) => {
    asked.push(offset);
    return { object: 'list' as const, data: items.slice(offset, offset + limit), total: n };
  };
  return { fetchPage, asked };
}

describe('PagePromise', () => {
  it('asks for nothing until awaited or iterated, then for the first page once', async () => {
    const { fetchPage, asked } = served(5, 2);
    const list = new PagePromise(fetchPage);
    expect(asked).toEqual([]);
    const first = await list;
    expect(first).toBeInstanceOf(Page);
    expect(first.data).toEqual([0, 1]);
    expect(first.total).toBe(5);
    expect(first.offset).toBe(0);
    await list;
    expect(asked).toEqual([0]);
  });

  it('iterates every item of every page, following offsets until the total', async () => {
    const { fetchPage, asked } = served(5, 2);
    const seen: number[] = [];
    for await (const n of new PagePromise(fetchPage)) seen.push(n);
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(asked).toEqual([0, 2, 4]);
    expect(await new PagePromise(fetchPage, 3).toArray()).toEqual([3, 4]);
  });

  it("passes the first page's failure to then, catch and finally", async () => {
    let finished = false;
    const failing = new PagePromise<number>(async () => {
      throw new Error('401 unauthorized');
    });
    await expect(failing.finally(() => (finished = true))).rejects.toThrow('401 unauthorized');
    expect(finished).toBe(true);
    expect(await failing.catch((e: unknown) => (e as Error).message)).toBe('401 unauthorized');
  });
});

describe('Page', () => {
  it('walks page by page and says when there is none after', async () => {
    const { fetchPage } = served(3, 2);
    const first = await new PagePromise(fetchPage);
    expect(first.hasNextPage()).toBe(true);
    const second = await first.nextPage();
    expect(second?.data).toEqual([2]);
    expect(second?.offset).toBe(2);
    expect(second?.hasNextPage()).toBe(false);
    expect(await second?.nextPage()).toBeNull();
    const offsets: number[] = [];
    for await (const page of first.pages()) offsets.push(page.offset);
    expect(offsets).toEqual([0, 2]);
  });

  it('stops at an empty page even when the total says there is more', async () => {
    const page = new Page(
      async () => ({ object: 'list' as const, data: [], total: 10 }),
      { object: 'list', data: [], total: 10 },
      4,
    );
    expect(page.hasNextPage()).toBe(false);
    expect(await page.toArray()).toEqual([]);
  });
});
