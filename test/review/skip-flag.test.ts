import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, registerStubModel, startHarness, type TestKey } from '../helpers/harness.js';

// A skipped item never returns to the skipper and takes no review of theirs; a flag is recorded as a
// flag, not as a skip.

let h: Harness;
let alice: TestKey;
let bob: TestKey;
const REVIEWING = ['review:read', 'review:write', 'logs:read'];

beforeAll(async () => {
  h = await startHarness();
  await registerStubModel(h, 'm');
  const ev = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'pf',
      model: 'm',
      prompt: 'Is {{output}} fine?',
      scale: { type: 'pass_fail' },
    },
  });
  expect(ev.status, ev.text).toBe(201);
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  await h.call('POST', '/v1/containers/c/logs', {
    body: [0, 1].map((i) => ({ model: 'x', input: [{ role: 'user', content: `q${i}` }], output: `a${i}` })),
  });
  const logs = await h.call('GET', '/v1/containers/c/logs?limit=10');
  await h.call('POST', '/v1/annotation-queues', {
    body: { name: 'pair', evaluators: ['pf'], reviewers_per_item: 2 },
  });
  const added = await h.call('POST', '/v1/annotation-queues/pair/items', {
    body: { task_logs: logs.body.data.map((l: { id: string }) => l.id) },
  });
  expect(added.body.added).toBe(2);
  alice = await h.key(REVIEWING);
  bob = await h.key(REVIEWING);
});

afterAll(async () => {
  await h?.close();
});

const claim = async (who: TestKey) => {
  const r = await h.call('POST', '/v1/annotation-queues/pair/claim', { key: who.key });
  expect(r.status, r.text).toBe(200);
  return r.body.item?.item?.id as string | undefined;
};

describe('skipping and flagging', () => {
  it("refuses the skipper's review of a skipped item (409, reason skipped), and never offers it again", async () => {
    const item = await claim(alice);
    expect(item).toBeDefined();
    const skipped = await h.call('POST', `/v1/annotation-queues/pair/items/${item}/skip`, { key: alice.key });
    expect(skipped.status, skipped.text).toBe(200);
    const review = await h.call('POST', `/v1/annotation-queues/pair/items/${item}/review`, {
      key: alice.key,
      body: { scores: [{ evaluator: 'pf', passed: true }] },
    });
    expect(review.status).toBe(409);
    expect(review.body.error.details).toMatchObject({ item, reason: 'skipped' });
    const next = await claim(alice);
    expect(next).not.toBe(item);
    // Another reviewer still gets it.
    const forBob = await h.call('POST', `/v1/annotation-queues/pair/items/${item}/review`, {
      key: bob.key,
      body: { scores: [{ evaluator: 'pf', passed: true }] },
    });
    expect(forBob.status, forBob.text).toBe(201);
  });

  it('records a flag as a flag, not as a skip', async () => {
    const item = await claim(bob);
    expect(item).toBeDefined();
    const flagged = await h.call('POST', `/v1/annotation-queues/pair/items/${item}/flag`, {
      key: bob.key,
      body: { reason: 'broken output' },
    });
    expect(flagged.status, flagged.text).toBe(200);
    expect(flagged.body.state).toBe('flagged');
    const rows = await h.services.db
      .selectFrom('annotation_assignments')
      .select(['state'])
      .where('item_id', '=', item!)
      .where('reviewer', '=', `key:${bob.id}`)
      .execute();
    expect(rows.map((r) => r.state)).toEqual(['flagged']);
  });
});
