import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shareHash } from '../../src/review/items.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness, type TestKey } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { referenceFigures, statsPython } from './python-stats.js';

// Must-show 1 at the API level: a judge run over 200 samples, a rule sending its failures and a 10 % share
// to a queue, two reviewers, no item reviewed twice by one person, claims expiring, and agreement figures
// equal to scikit-learn's and SciPy's on the same pairs.

const N = 200;
/** The mock judge's grade of output `a<i>`: 1..5 in turn. */
const judgeScore = (i: number) => (i % 5) + 1;
/** The people's grade: the judge's, except at every 7th position, where they are one lower (not below 1). */
const humanScore = (i: number, reviewer: number) =>
  i % 7 === 0
    ? Math.max(1, judgeScore(i) - 1)
    : reviewer === 1 && i % 11 === 0
      ? Math.min(5, judgeScore(i) + 1)
      : judgeScore(i);

let h: Harness;
let mock: MockUpstream;
let runId: string;
let judgeId: string;
let alice: TestKey;
let bob: TestKey;
let python: string;

function positionOf(prompt: string): number {
  const m = /Output:\n a(\d+)|\ba(\d+)\b/.exec(prompt);
  return Number(m?.[1] ?? m?.[2] ?? -1);
}

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      const i = positionOf(String(messages.at(-1)?.content ?? ''));
      return { json: { score: judgeScore(i), reasoning: `graded a${i}` } };
    },
  });
  h = await startHarness();
  const model = await h.call('POST', '/v1/models', {
    body: {
      label: 'judge-model',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'j',
    },
  });
  expect(model.status, model.text).toBe(201);
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: N }, (_, i) => ({ input: `q${i}`, output: ` a${i}` }));
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'two-hundred', items } })).status).toBe(201);
  const judge = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'grade',
      model: 'judge-model',
      prompt: 'Grade the answer from 1 to 5.\n\nOutput:\n{{output}}',
      pass_threshold: 2,
      scale: { type: 'ordinal', min: 1, max: 5 },
    },
  });
  expect(judge.status, judge.text).toBe(201);
  judgeId = judge.body.id;
  const run = await h.call('POST', '/v1/evaluation/runs', {
    body: {
      container: 'c',
      evaluators: [judgeId],
      sample: { type: 'dataset', dataset: 'two-hundred', range: `0:${N}` },
    },
  });
  expect(run.status, run.text).toBe(201);
  runId = run.body.id;
  await waitFor(
    async () => (await h.call('GET', `/v1/evaluation/runs/${runId}`)).body.status === 'completed',
    120_000,
  );
  // Reviewers see the run's samples: they need what reading them needs (the run reads a dataset and, as
  // its omitted ground truth, the container's task logs).
  const reviewing = ['review:read', 'review:write', 'evaluation:read', 'data:read', 'logs:read'];
  alice = await h.key(reviewing);
  bob = await h.key(reviewing);
  python = await statsPython();
}, 600_000);

afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe('a review queue over a judge run', () => {
  let queue: string;
  const failed = Array.from({ length: N }, (_, i) => i).filter((i) => judgeScore(i) < 2);
  // The run's id is known once it exists: the share is computed then, with the server's hash.
  const share = () =>
    Array.from({ length: N }, (_, i) => i).filter((i) => shareHash(7, runId, 0, i) < 0.1 * 2 ** 32);
  const expected = () => new Set([...failed, ...share()]);

  it('stores the prompt hash on every judge sample', async () => {
    const samples = await h.call('GET', `/v1/evaluation/runs/${runId}/samples?limit=100`);
    expect(samples.status).toBe(200);
    const rows = await h.services.db
      .selectFrom('run_samples')
      .select(['prompt_hash', 'status'])
      .where('run_id', '=', runId)
      .execute();
    expect(rows).toHaveLength(N);
    const hashes = new Set(rows.map((r) => r.prompt_hash));
    expect(hashes.size).toBe(1);
    expect([...hashes][0]).toMatch(/^[0-9a-f]{16}$/);
  });

  it("queues the run's failures and a seeded 10 % share, each once", async () => {
    // A retry starts from no queue (a first try that failed after creating it would leave its name taken).
    expect([200, 404]).toContain((await h.call('DELETE', '/v1/annotation-queues/grades')).status);
    const created = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'grades', evaluators: ['grade'], comment: true, reviewers_per_item: 2 },
    });
    expect(created.status, created.text).toBe(201);
    queue = created.body.id;
    const added = await h.call('POST', `/v1/annotation-queues/${queue}/items`, {
      body: {
        rules: [
          { run: runId, failed: true },
          { run: runId, share: 0.1, seed: 7 },
        ],
      },
    });
    expect(added.status, added.text).toBe(200);
    expect(failed).toHaveLength(40);
    // The share is about 20 of 200, and which positions it takes hangs on the run's random id. The bounds
    // only rule out a share that selects nothing or nearly everything; for a fair 10 % share they fail
    // about once in 40,000 runs (the binomial tails below 5 and above 39).
    expect(share().length).toBeGreaterThanOrEqual(5);
    expect(share().length).toBeLessThanOrEqual(39);
    expect(added.body.added).toBe(expected().size);
    // The same rules again add nothing.
    const again = await h.call('POST', `/v1/annotation-queues/${queue}/items`, {
      body: { rules: [{ run: runId, failed: true }] },
    });
    expect(again.body).toMatchObject({ added: 0, already_queued: 40 });
    const got = await h.call('GET', `/v1/annotation-queues/grades`);
    expect(got.body.counts).toMatchObject({ total: expected().size, open: expected().size, done: 0 });
  });

  it('lets two reviewers score every item once each, never the same item twice', async () => {
    const seen = new Map<string, Set<string>>();
    const reviewers = [alice, bob];
    const active = [true, true];
    while (active.some(Boolean)) {
      for (const [r, key] of reviewers.entries()) {
        if (!active[r]) continue;
        const claim = await h.call('POST', `/v1/annotation-queues/${queue}/claim?hide_judge=true`, {
          key: key.key,
        });
        expect(claim.status, claim.text).toBe(200);
        if (claim.body.item === null) {
          active[r] = false;
          expect(claim.body.remaining).toBe(0);
          continue;
        }
        const view = claim.body.item;
        expect(view.judge).toBeNull(); // blind until scored
        const item = view.item;
        const mine = seen.get(key.id) ?? new Set();
        expect(mine.has(item.id)).toBe(false);
        mine.add(item.id);
        seen.set(key.id, mine);
        const position = item.position as number;
        const res = await h.call('POST', `/v1/annotation-queues/${queue}/items/${item.id}/review`, {
          key: key.key,
          body: { scores: [{ evaluator: 'grade', score: humanScore(position, r) }], comment: `r${r}` },
        });
        expect(res.status, res.text).toBe(201);
        // Reviewing it again is a conflict: corrections go through /correct.
        const twice = await h.call('POST', `/v1/annotation-queues/${queue}/items/${item.id}/review`, {
          key: key.key,
          body: { scores: [{ evaluator: 'grade', score: 3 }] },
        });
        expect(twice.status).toBe(409);
        const after = await h.call('GET', `/v1/annotation-queues/${queue}/items/${item.id}?hide_judge=true`, {
          key: key.key,
        });
        expect(after.body.judge[0].score).toBe(judgeScore(position)); // shown once scored
      }
    }
    const total = expected().size;
    expect(seen.get(alice.id)?.size).toBe(total);
    expect(seen.get(bob.id)?.size).toBe(total);
    const got = await h.call('GET', `/v1/annotation-queues/${queue}`);
    expect(got.body.counts).toMatchObject({ total, open: 0, done: total, reviews: 2 * total });
    const done = await h.call('GET', `/v1/annotation-queues/${queue}/items?state=done&limit=5`);
    expect(done.body.total).toBe(total);
    expect(done.body.data).toHaveLength(5);
  });

  it("gives agreement figures equal to scikit-learn's and SciPy's on the same pairs", async () => {
    const res = await h.call('GET', `/v1/evaluators/${judgeId}/agreement?queue=grades&seed=3&resamples=2000`);
    expect(res.status, res.text).toBe(200);
    const body = res.body;
    expect(body.groups).toHaveLength(1);
    // The pairs, rebuilt from the reviews: the judge's grade of the position and each person's.
    const judge: number[] = [];
    const human: number[] = [];
    const pairItems: string[] = [];
    const items = new Map<string, number>();
    for (let offset = 0; ; offset += 100) {
      const page = await h.call('GET', `/v1/annotation-queues/${queue}/items?limit=100&offset=${offset}`);
      for (const it of page.body.data) items.set(it.id, it.position);
      if (page.body.data.length < 100) break;
    }
    for (let offset = 0; ; offset += 100) {
      const page = await h.call('GET', `/v1/annotation-queues/${queue}/reviews?limit=100&offset=${offset}`);
      for (const r of page.body.data) {
        judge.push(judgeScore(items.get(r.item_id)!));
        human.push(r.score);
        pairItems.push(r.item_id);
      }
      if (page.body.data.length < 100) break;
    }
    expect(body.n).toBe(judge.length);
    // The reference bootstrap draws items too: an item's two reviews are drawn together.
    const ref = await referenceFigures(python, judge, human, 3, 2000, pairItems);
    const g = body.groups[0];
    for (const k of ['percent_agreement', 'kappa', 'weighted_kappa', 'pearson', 'spearman', 'mae'] as const) {
      expect(Math.abs(g[k] - ref[k]), k).toBeLessThan(1e-9);
    }
    expect(g.confusion.labels).toEqual(ref.labels);
    expect(g.confusion.matrix).toEqual(ref.confusion);
    // A different generator draws different resamples: the intervals agree within sampling noise.
    expect(Math.abs(g.intervals.kappa[0] - ref.kappa_interval[0])).toBeLessThan(0.05);
    expect(Math.abs(g.intervals.kappa[1] - ref.kappa_interval[1])).toBeLessThan(0.05);
    expect(g.intervals.kappa[0]).toBeLessThan(g.kappa);
    expect(g.intervals.kappa[1]).toBeGreaterThan(g.kappa);
    // Two reviewers on every item: inter-annotator agreement too.
    expect(body.inter_annotator.n).toBe(expected().size);
    expect(body.inter_annotator.kappa).toBeGreaterThan(0.5);
    // The same seed gives the same interval.
    const again = await h.call(
      'GET',
      `/v1/evaluators/${judgeId}/agreement?queue=grades&seed=3&resamples=2000`,
    );
    expect(again.body.groups[0].intervals).toEqual(g.intervals);
    const perQueue = await h.call('GET', `/v1/annotation-queues/${queue}/agreement?seed=3&resamples=2000`);
    expect(perQueue.status).toBe(200);
    expect(perQueue.body.evaluators[0].groups[0].kappa).toBe(g.kappa);
  }, 120_000);

  it('keeps the history of a corrected review', async () => {
    const list = await h.call('GET', `/v1/annotation-queues/${queue}/reviews?limit=1`, { key: alice.key });
    const first = list.body.data[0];
    const fixed = await h.call('POST', `/v1/annotation-queues/${queue}/reviews/${first.id}/correct`, {
      key: alice.key,
      body: { score: 5, comment: 'on second thought' },
    });
    expect(fixed.status, fixed.text).toBe(201);
    expect(fixed.body).toMatchObject({ score: 5, comment: 'on second thought', item_id: first.item_id });
    const history = await h.call(
      'GET',
      `/v1/annotation-queues/${queue}/reviews?item=${first.item_id}&history=true`,
    );
    expect(history.body.data.find((r: { id: string }) => r.id === first.id).superseded_by).toBe(
      fixed.body.id,
    );
    const current = await h.call('GET', `/v1/annotation-queues/${queue}/reviews?item=${first.item_id}`);
    expect(current.body.data.map((r: { id: string }) => r.id)).not.toContain(first.id);
    const stale = await h.call('POST', `/v1/annotation-queues/${queue}/reviews/${first.id}/correct`, {
      body: { score: 1 },
    });
    expect(stale.status).toBe(409);
  });
});

describe('claims', () => {
  it('expire, and the item returns to the queue for someone else', async () => {
    const q = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'short-claims', evaluators: ['grade'], claim_seconds: 1 },
    });
    expect(q.status, q.text).toBe(201);
    await h.call('POST', '/v1/annotation-queues/short-claims/items', {
      body: {
        run_samples: [
          { run: runId, position: 1 },
          { run: runId, position: 2 },
        ],
      },
    });
    const a = await h.call('POST', '/v1/annotation-queues/short-claims/claim', { key: alice.key });
    expect(a.status, a.text).toBe(200);
    const b = await h.call('POST', '/v1/annotation-queues/short-claims/claim', { key: bob.key });
    expect(a.body.item.item.id).not.toBe(b.body.item.item.id);
    // Asking again returns the claim one holds.
    const bAgain = await h.call('POST', '/v1/annotation-queues/short-claims/claim', { key: bob.key });
    expect(bAgain.body.item.item.id).toBe(b.body.item.item.id);
    const bItem = b.body.item.item.id;
    const aItem = a.body.item.item.id;
    // Bob cannot review Alice's claimed item: 409.
    const stolen = await h.call('POST', `/v1/annotation-queues/short-claims/items/${aItem}/review`, {
      key: bob.key,
      body: { scores: [{ evaluator: 'grade', score: 2 }] },
    });
    expect(stolen.status).toBe(409);
    expect(stolen.body.error.code).toBe('conflict');
    expect(
      (
        await h.call('POST', `/v1/annotation-queues/short-claims/items/${bItem}/review`, {
          key: bob.key,
          body: { scores: [{ evaluator: 'grade', score: 2 }] },
        })
      ).status,
    ).toBe(201);
    expect(
      (await h.call('POST', '/v1/annotation-queues/short-claims/claim', { key: bob.key })).body.item,
    ).toBeNull();
    await new Promise((r) => setTimeout(r, 1300));
    const taken = await h.call('POST', '/v1/annotation-queues/short-claims/claim', { key: bob.key });
    expect(taken.body.item.item.id).toBe(aItem);
    const late = await h.call('POST', `/v1/annotation-queues/short-claims/items/${aItem}/review`, {
      key: alice.key,
      body: { scores: [{ evaluator: 'grade', score: 2 }] },
    });
    expect(late.status).toBe(409);
  });

  it('skips and flags only what one holds', async () => {
    await h.call('POST', '/v1/annotation-queues', { body: { name: 'skips', evaluators: ['grade'] } });
    await h.call('POST', '/v1/annotation-queues/skips/items', {
      body: {
        run_samples: [
          { run: runId, position: 3 },
          { run: runId, position: 4 },
        ],
      },
    });
    const c = await h.call('POST', '/v1/annotation-queues/skips/claim', { key: alice.key });
    const first = c.body.item.item.id;
    expect(
      (await h.call('POST', `/v1/annotation-queues/skips/items/${first}/skip`, { key: bob.key })).status,
    ).toBe(409);
    const skipped = await h.call('POST', `/v1/annotation-queues/skips/items/${first}/skip`, {
      key: alice.key,
    });
    expect(skipped.body).toMatchObject({ state: 'open' });
    const next = await h.call('POST', '/v1/annotation-queues/skips/claim', { key: alice.key });
    expect(next.body.item.item.id).not.toBe(first);
    const flagged = await h.call('POST', `/v1/annotation-queues/skips/items/${next.body.item.item.id}/flag`, {
      key: alice.key,
      body: { reason: 'the output is cut off' },
    });
    expect(flagged.body.state).toBe('flagged');
    expect(
      (await h.call('POST', '/v1/annotation-queues/skips/claim', { key: alice.key })).body.item,
    ).toBeNull();
    // Bob may still take the item Alice skipped.
    const forBob = await h.call('POST', '/v1/annotation-queues/skips/claim', { key: bob.key });
    expect(forBob.body.item.item.id).toBe(first);
  });
});
