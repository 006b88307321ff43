// Database-independent: the TypeScript client's review methods; the review store runs on both databases in test/review.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConflictError,
  type Evalgate,
  NotFoundError,
  PermissionDeniedError,
  UnprocessableEntityError,
} from '../../src/client/index.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { clientOf } from './helpers.js';

// The client's review resources against a real server: queues, items (by reference and by rule), claims,
// reviews, skips, flags, corrections, agreement, export and the judge catalog, with the typed errors.

let h: Harness;
let mock: MockUpstream;
let runId: string;
const N = 5;

beforeAll(async () => {
  // The judge passes the even positions.
  mock = await startMockUpstream({
    reply: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      const i = Number(/a(\d+)/.exec(String(messages.at(-1)?.content ?? ''))?.[1] ?? 0);
      return { json: { score: i % 2 === 0 ? 1 : 0, reasoning: `a${i}` } };
    },
  });
  h = await startHarness();
  await h.call('POST', '/v1/models', {
    body: { label: 'jm', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: N }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
  await h.call('POST', '/v1/datasets', { body: { label: 'five', items } });
  await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'ok',
      model: 'jm',
      prompt: 'Is it right? {{output}}',
      pass_threshold: 0.5,
      scale: { type: 'pass_fail' },
    },
  });
  const run = await h.call('POST', '/v1/evaluation/runs', {
    body: {
      container: 'c',
      evaluators: ['ok'],
      sample: { type: 'dataset', dataset: 'five', range: `0:${N}` },
    },
  });
  runId = run.body.id;
  await waitFor(
    async () => (await h.call('GET', `/v1/evaluation/runs/${runId}`)).body.status === 'completed',
    60_000,
  );
}, 300_000);

afterAll(async () => {
  await h?.close();
  await mock?.close();
}, 300_000);

describe('client.queues', { timeout: 120_000 }, () => {
  let client: Evalgate;
  let other: Evalgate;

  it('creates, lists, gets and updates queues', async () => {
    client = clientOf(h);
    const queue = await client.queues.create({ name: 'checks', evaluators: ['ok'], comment: true });
    expect(queue).toMatchObject({ object: 'annotation_queue', name: 'checks', reviewers_per_item: 1 });
    expect(queue.rubric.evaluators[0]!.scale).toEqual({ type: 'pass_fail' });
    const updated = await client.queues.update('checks', { description: 'judge checks' });
    expect(updated.description).toBe('judge checks');
    expect((await client.queues.get(queue.id)).name).toBe('checks');
    const names: string[] = [];
    for await (const q of client.queues.list({ limit: 1 })) names.push(q.name);
    expect(names).toContain('checks');
    await expect(client.queues.create({ name: 'bad', evaluators: ['nope'] })).rejects.toBeInstanceOf(
      UnprocessableEntityError,
    );
  });

  it('adds items by rule and reference, and pages them', async () => {
    const added = await client.queues.items.add('checks', {
      rules: [{ run: runId, failed: true }],
      run_samples: [{ run: runId, position: 0 }],
    });
    expect(added).toMatchObject({ object: 'annotation_items.added', added: 3, already_queued: 0 });
    const items = [];
    for await (const item of client.queues.items.list('checks', { limit: 2 })) items.push(item);
    expect(items.map((i) => i.position).sort()).toEqual([0, 1, 3]);
    const open = await client.queues.items.list('checks', { state: 'open' });
    expect(open.total).toBe(3);
  });

  it('claims, reviews, skips, flags and corrects', async () => {
    const first = await client.queues.claim('checks', { hideJudge: true });
    expect(first.remaining).toBe(2);
    expect(first.item?.judge).toBeNull();
    const itemId = first.item!.item.id;
    // A score outside the scale is a 422 naming it.
    const bad = await client.queues.items
      .review('checks', itemId, { scores: [{ evaluator: 'ok', label: 'great' }] })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(UnprocessableEntityError);
    const done = await client.queues.items.review('checks', itemId, {
      scores: [{ evaluator: 'ok', passed: false }],
      comment: 'wrong',
    });
    expect(done).toMatchObject({ object: 'annotation_item', id: itemId, state: 'done' });
    const seen = await client.queues.items.get('checks', itemId);
    expect(seen.judge?.[0]?.prompt_hash).toMatch(/^[0-9a-f]{16}$/);
    // Reviewing it again is a conflict: a review changes by correction.
    await expect(
      client.queues.items.review('checks', itemId, { scores: [{ evaluator: 'ok', passed: true }] }),
    ).rejects.toBeInstanceOf(ConflictError);

    const second = await client.queues.claim('checks');
    expect(await client.queues.items.skip('checks', second.item!.item.id)).toMatchObject({ state: 'open' });
    const third = await client.queues.claim('checks');
    expect(third.item!.item.id).not.toBe(second.item!.item.id);
    const flagged = await client.queues.items.flag('checks', third.item!.item.id, { reason: 'cut off' });
    expect(flagged.state).toBe('flagged');

    const reviews = await client.queues.reviews.list('checks');
    expect(reviews.total).toBe(1);
    const corrected = await client.queues.reviews.correct('checks', reviews.data[0]!.id, { passed: true });
    expect(corrected.passed).toBe(true);
    const history = await client.queues.reviews.list('checks', { history: true });
    expect(history.total).toBe(2);
  });

  it('reads agreement, exports, and lists the judge catalog', async () => {
    const agreement = await client.evaluators.agreement('ok', { queue: 'checks' });
    expect(agreement).toMatchObject({ object: 'evaluator.agreement', n: 1 });
    expect(agreement.groups[0]!.percent_agreement).toBe(1);
    const perQueue = await client.queues.agreement('checks', { seed: 1 });
    expect(perQueue.evaluators[0]!.evaluator.name).toBe('ok');
    const dataset = await client.queues.export('checks', { label: 'checked' });
    expect(dataset.item_count).toBe(1);
    const templates = await client.evaluatorTemplates.list();
    expect(templates.data.map((t) => t.name)).toContain('faithfulness');
    expect((await client.evaluatorTemplates.get('faithfulness')).name).toBe('faithfulness');
    await expect(client.evaluatorTemplates.get('nope@9')).rejects.toBeInstanceOf(NotFoundError);
  });

  it("answers 404 to another project's key and 403 without review:write", async () => {
    other = clientOf(h, { apiKey: (await h.key(['*'], 'elsewhere')).key });
    await expect(other.queues.get('checks')).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.queues.items.list('checks')).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.evaluators.agreement('ok')).rejects.toBeInstanceOf(NotFoundError);
    const reader = clientOf(h, { apiKey: (await h.key(['review:read'])).key });
    expect((await reader.queues.get('checks')).name).toBe('checks');
    await expect(reader.queues.claim('checks')).rejects.toBeInstanceOf(PermissionDeniedError);
    expect((await client.queues.delete('checks')).deleted).toBe(true);
    await expect(client.queues.get('checks')).rejects.toBeInstanceOf(NotFoundError);
  });
});
