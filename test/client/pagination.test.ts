import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Evalgate, Page } from '../../src/client/index.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { clientOf } from './helpers.js';

// Auto-pagination over 250 runs, on both databases (page order and totals come from each one's SQL).

const RUNS = 250;

describe('auto-pagination', () => {
  let h: Harness;
  let client: Evalgate;
  const created = new Set<string>();
  const requested: string[] = [];

  beforeAll(async () => {
    // Nothing executes: the runs stay queued, so creating them is cheap and their status is known.
    h = await startHarness({ env: { EVALGATE_SERVE_EXECUTES: '0' } });
    const counting: typeof fetch = (input, init) => {
      requested.push(String(input));
      return fetch(input, init);
    };
    client = clientOf(h, { fetch: counting });
    await client.containers.create({ label: 'support' });
    await client.models.register({ label: 'judge', base_url: 'http://127.0.0.1:9/v1' });
    await client.evaluators.create({ type: 'judge', name: 'exact', model: 'judge', prompt: '{{output}}' });
    await client.datasets.create({ label: 'one', items: [{ input: 'q', output: 'a', expected: 'a' }] });
    const source = { type: 'dataset' as const, dataset: 'one' };
    const body = { container: 'support', evaluators: ['exact'], sample: source, ground_truth: source };
    const workers = Array.from({ length: 10 }, async (_, w) => {
      for (let i = w; i < RUNS; i += 10)
        created.add((await client.runs.create({ ...body, metadata: { i } })).id);
    });
    await Promise.all(workers);
    expect(created.size).toBe(RUNS);
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  it('iterates every run across pages with for await, each once', async () => {
    requested.length = 0;
    const seen: string[] = [];
    for await (const run of client.runs.list({ status: 'queued', limit: 100 })) seen.push(run.id);
    expect(seen).toHaveLength(RUNS);
    expect(new Set(seen)).toEqual(created);
    // Three pages: offsets 0, 100, 200.
    expect(requested.map((u) => new URL(u).searchParams.get('offset'))).toEqual([null, '100', '200']);
    // Newest first.
    const order = await client.runs.list({ limit: 100 }).toArray();
    const times = order.map((r) => r.created_at);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it("follows the server's default page size when no limit is given", async () => {
    requested.length = 0;
    let count = 0;
    for await (const _ of client.runs.list({ container: 'support' })) count += 1;
    expect(count).toBe(RUNS);
    expect(requested).toHaveLength(Math.ceil(RUNS / 20));
  });

  it('gives the first page when awaited, with the next ones on demand', async () => {
    const page = await client.runs.list({ limit: 100 });
    expect(page).toBeInstanceOf(Page);
    expect(page.data).toHaveLength(100);
    expect(page.total).toBe(RUNS);
    expect(page.hasNextPage()).toBe(true);
    const second = await page.nextPage();
    expect(second?.offset).toBe(100);
    const third = await second!.nextPage();
    expect(third?.data).toHaveLength(50);
    expect(third!.hasNextPage()).toBe(false);
    expect(await third!.nextPage()).toBeNull();
    const pages: number[] = [];
    for await (const p of page.pages()) pages.push(p.data.length);
    expect(pages).toEqual([100, 100, 50]);
    // Starting from an offset iterates from there on.
    expect(await client.runs.list({ limit: 100, offset: 240 }).toArray()).toHaveLength(10);
    // A filter that matches nothing is one empty page.
    expect(await client.runs.list({ status: 'completed' }).toArray()).toEqual([]);
  });
});
