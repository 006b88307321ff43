import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvField } from '../../src/review/export-scores.js';
import { majorityOf, outcomeOf } from '../../src/review/settle.js';
import { type Harness, registerStubModel, startHarness, type TestKey } from '../helpers/harness.js';

// Every reviewer's answer survives an export, and a disagreement is settled by someone allowed to:
// by majority, by choosing a review, or by giving the answer.

let h: Harness;
let alice: TestKey;
let bob: TestKey;
let carol: TestKey;
let other: TestKey;
const items: string[] = [];

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
  const log = await h.call('POST', '/v1/containers/c/logs', {
    body: [0, 1, 2, 3].map((i) => ({
      model: 'x',
      input: [{ role: 'user', content: `q${i}` }],
      output: `a${i}`,
    })),
  });
  expect(log.status, log.text).toBeLessThan(300);
  const logs = await h.call('GET', '/v1/containers/c/logs?limit=10');
  const q = await h.call('POST', '/v1/annotation-queues', {
    body: { name: 'team', evaluators: ['pf'], comment: true, reviewers_per_item: 3 },
  });
  expect(q.status, q.text).toBe(201);
  const added = await h.call('POST', '/v1/annotation-queues/team/items', {
    body: { task_logs: logs.body.data.map((l: { id: string }) => l.id) },
  });
  expect(added.body.added).toBe(4);
  const listed = await h.call('GET', '/v1/annotation-queues/team/items?limit=10');
  items.push(...listed.body.data.map((i: { id: string }) => i.id));
  alice = await h.key(REVIEWING);
  bob = await h.key(REVIEWING);
  carol = await h.key(REVIEWING);
  other = await h.key(['*'], 'elsewhere');
  const review = async (who: TestKey, item: string, passed: boolean, comment: string) => {
    const r = await h.call('POST', `/v1/annotation-queues/team/items/${item}/review`, {
      key: who.key,
      body: { scores: [{ evaluator: 'pf', passed }], comment },
    });
    expect(r.status, r.text).toBe(201);
  };
  // Item 0: a tie. Item 1: all alike. Item 2: two against one. Item 3: one review only.
  await review(alice, items[0]!, true, 'alice: fine');
  await review(bob, items[0]!, false, 'bob: wrong, says "no"');
  await review(alice, items[1]!, true, 'ok');
  await review(bob, items[1]!, true, 'ok too');
  await review(alice, items[2]!, false, 'no');
  await review(bob, items[2]!, false, 'no');
  await review(carol, items[2]!, true, 'yes,\nreally');
  await review(alice, items[3]!, true, 'single');
});

afterAll(async () => {
  await h?.close();
});

interface Line {
  item_id: string;
  status: string;
  reviews: { reviewer: string; passed: boolean; comment: string; review_id: string }[];
  settled: { passed: boolean; method: string; settled_by: string | null } | null;
}

async function jsonl(): Promise<Map<string, Line>> {
  const res = await h.call('GET', '/v1/annotation-queues/team/scores');
  expect(res.status, res.text).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/application\/x-ndjson/);
  const lines = res.text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
  return new Map(lines.map((l) => [l.item_id, l]));
}

describe('the export of human scores', () => {
  it("keeps every reviewer's answer and comment, with the answer that counts where there is one", async () => {
    const byItem = await jsonl();
    expect(byItem.size).toBe(4);
    const tie = byItem.get(items[0]!)!;
    expect(tie.status).toBe('disagreement');
    expect(tie.settled).toBeNull();
    expect(tie.reviews.map((r) => [r.reviewer, r.passed, r.comment])).toEqual([
      [`key:${alice.id}`, true, 'alice: fine'],
      [`key:${bob.id}`, false, 'bob: wrong, says "no"'],
    ]);
    expect(byItem.get(items[1]!)).toMatchObject({ status: 'unanimous', settled: { passed: true } });
    expect(byItem.get(items[2]!)!.reviews).toHaveLength(3);
    expect(byItem.get(items[3]!)).toMatchObject({ status: 'single', settled: { passed: true } });
  });

  it('writes one CSV row per review that a CSV reader reads back, quotes and line breaks included', async () => {
    const res = await h.call('GET', '/v1/annotation-queues/team/scores?format=csv');
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/csv/);
    const rows = parse(res.text, { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(8);
    const tie = rows.filter((r) => r.item_id === items[0]);
    expect(tie.map((r) => [r.passed, r.comment, r.status, r.settled_passed])).toEqual([
      ['true', 'alice: fine', 'disagreement', ''],
      ['false', 'bob: wrong, says "no"', 'disagreement', ''],
    ]);
    expect(rows.find((r) => r.reviewer === `key:${carol.id}`)!.comment).toBe('yes,\nreally');
    expect([csvField(null), csvField('a,b'), csvField('say "x"'), csvField(3)]).toEqual([
      '',
      '"a,b"',
      '"say ""x"""',
      '3',
    ]);
  });

  it('refuses a bad format or evaluator (422), and another project (404)', async () => {
    expect((await h.call('GET', '/v1/annotation-queues/team/scores?format=xml')).status).toBe(422);
    expect((await h.call('GET', '/v1/annotation-queues/team/scores?evaluator=nope')).status).toBe(422);
    expect((await h.call('GET', '/v1/annotation-queues/team/scores', { key: other.key })).status).toBe(404);
  });
});

describe('settling a disagreement', () => {
  it('is for a key with review:admin only (403 for a reviewer), and 404 for another project', async () => {
    const asReviewer = await h.call('POST', '/v1/annotation-queues/team/settle', {
      key: alice.key,
      body: { method: 'majority' },
    });
    expect(asReviewer.status).toBe(403);
    expect(asReviewer.body.error?.details?.required ?? asReviewer.text).toMatch(/review:admin/);
    const elsewhere = await h.call('POST', `/v1/annotation-queues/team/items/${items[0]}/settle`, {
      key: other.key,
      body: { method: 'majority' },
    });
    expect(elsewhere.status).toBe(404);
  });

  it('settles by majority where there is one, leaving ties open', async () => {
    const admin = await h.key(['review:admin', 'review:read']);
    const res = await h.call('POST', '/v1/annotation-queues/team/settle', {
      key: admin.key,
      body: { method: 'majority' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ object: 'annotation_queue.settled', settled: 1, ties: 1 });
    const byItem = await jsonl();
    expect(byItem.get(items[2]!)).toMatchObject({
      status: 'settled',
      settled: { passed: false, method: 'majority', settled_by: `key:${admin.id}` },
    });
    expect(byItem.get(items[2]!)!.reviews).toHaveLength(3);
    expect(byItem.get(items[0]!)!.status).toBe('disagreement');
  });

  it('settles a tie by a chosen review or a given value; a majority of a tie is a 409', async () => {
    const url = `/v1/annotation-queues/team/items/${items[0]}/settle`;
    const tie = await h.call('POST', url, { body: { method: 'majority' } });
    expect(tie.status).toBe(409);
    expect(tie.body.error.details.reason).toBe('no_majority');
    const bad = await h.call('POST', url, { body: { method: 'value', label: 'x' } });
    expect(bad.status).toBe(422);
    const unknown = await h.call('POST', url, { body: { method: 'review', review: 'rev_nope' } });
    expect(unknown.status).toBe(422);
    const byItem = await jsonl();
    const bobs = byItem.get(items[0]!)!.reviews.find((r) => r.reviewer === `key:${bob.id}`)!;
    const chosen = await h.call('POST', url, {
      body: { method: 'review', review: bobs.review_id, comment: 'bob is right' },
    });
    expect(chosen.status, chosen.text).toBe(201);
    expect(chosen.body).toMatchObject({ method: 'review', passed: false, review_id: bobs.review_id });
    // Settled again, by value: the new settlement replaces the old one.
    const given = await h.call('POST', url, { body: { method: 'value', passed: true } });
    expect(given.status, given.text).toBe(201);
    const after = await jsonl();
    expect(after.get(items[0]!)).toMatchObject({
      status: 'settled',
      settled: { passed: true, method: 'value' },
    });
    expect(after.get(items[0]!)!.reviews).toHaveLength(2);
  });

  it('exports a dataset of the settled answers, every review kept in the metadata', async () => {
    const res = await h.call('POST', '/v1/annotation-queues/team/export', {
      body: { label: 'settled-pf', evaluator: 'pf' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.item_count).toBe(4);
    const rows = await h.call('GET', `/v1/datasets/${res.body.id}/items?limit=10`);
    expect(rows.status, rows.text).toBe(200);
    const tie = rows.body.data
      .map((r: { data: unknown }) => r.data)
      .find((r: { metadata: { review: { item_id: string } } }) => r.metadata.review.item_id === items[0]);
    expect(tie.expected).toBe(true);
    expect(tie.metadata.review.reviews.map((r: { comment: string }) => r.comment)).toEqual([
      'alice: fine',
      'bob: wrong, says "no"',
    ]);
  });
});

describe('the settling rules', () => {
  const a = (passed: number) => ({ score: passed, passed, label: null });
  it('finds a strict majority or none', () => {
    expect(majorityOf([a(1), a(0), a(1)])).toEqual(a(1));
    expect(majorityOf([a(1), a(0)])).toBeNull();
    expect(majorityOf([])).toBeNull();
  });
  it('tells one review, all alike and a disagreement apart', () => {
    expect(outcomeOf([a(1)], null).status).toBe('single');
    expect(outcomeOf([a(1), a(1)], null).status).toBe('unanimous');
    expect(outcomeOf([a(1), a(0)], null)).toEqual({ status: 'disagreement', answer: null, settlement: null });
  });
});
