import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { QueueRow, RubricEvaluator } from './queues.js';
import { type Answer, type Outcome, outcomeOf, type ReviewRow, type SettlementRow } from './settle.js';

/**
 * The human scores of a queue as JSON lines or CSV: every reviewer's answer and comment on each item and
 * evaluator, and the answer that counts (the only one, the one all gave, or the settled one; none while a
 * disagreement is open). Read in pages of items; nothing is dropped where reviewers disagree.
 */

type Db = Kysely<Database>;

const PAGE = 200;

/** One item on one evaluator, every review in it. */
export interface ScoredItem {
  item_id: string;
  kind: string;
  ref: string;
  run_id: string | null;
  launch_index: number | null;
  position: number | null;
  evaluator_id: string;
  evaluator: string;
  status: Outcome['status'];
  reviews: {
    review_id: string;
    reviewer: string;
    score: number | null;
    passed: boolean | null;
    label: string | null;
    comment: string | null;
    created_at: string;
  }[];
  settled: {
    score: number | null;
    passed: boolean | null;
    label: string | null;
    method: string;
    review_id: string | null;
    settled_by: string | null;
    comment: string | null;
  } | null;
}

const bool = (v: number | null) => (v === null ? null : v === 1);

function settledOf(outcome: Outcome): ScoredItem['settled'] {
  const a: Answer | null = outcome.answer;
  if (!a) return null;
  const s = outcome.settlement;
  return {
    score: a.score,
    passed: bool(a.passed),
    label: a.label,
    method: s ? s.method : outcome.status,
    review_id: s?.review_id ?? null,
    settled_by: s?.settled_by ?? null,
    comment: s?.comment ?? null,
  };
}

/** The queue's reviewed items, each with its reviews and settlement per evaluator, page by page. */
export async function* scoredItems(
  db: Db,
  queue: QueueRow,
  evaluators: RubricEvaluator[],
): AsyncGenerator<ScoredItem> {
  const ids = evaluators.map((e) => e.id);
  if (ids.length === 0) return;
  let after = '';
  for (;;) {
    const items = await db
      .selectFrom('annotation_items')
      .select(['id', 'kind', 'ref', 'run_id', 'launch_index', 'position'])
      .where('queue_id', '=', queue.id)
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)
      .execute();
    if (items.length === 0) return;
    after = items[items.length - 1]!.id;
    const itemIds = items.map((i) => i.id);
    const [reviews, settlements] = await Promise.all([
      db
        .selectFrom('annotation_reviews')
        .selectAll()
        .where('item_id', 'in', itemIds)
        .where('evaluator_id', 'in', ids)
        .where('superseded_by', 'is', null)
        .orderBy('id')
        .execute(),
      db
        .selectFrom('annotation_settlements')
        .selectAll()
        .where('item_id', 'in', itemIds)
        .where('evaluator_id', 'in', ids)
        .execute(),
    ]);
    const reviewsOf = new Map<string, ReviewRow[]>();
    for (const r of reviews) {
      const k = `${r.item_id}\n${r.evaluator_id}`;
      reviewsOf.set(k, [...(reviewsOf.get(k) ?? []), r]);
    }
    const settlementOf = new Map<string, SettlementRow>(
      settlements.map((s) => [`${s.item_id}\n${s.evaluator_id}`, s]),
    );
    for (const item of items) {
      for (const ev of evaluators) {
        const k = `${item.id}\n${ev.id}`;
        const rs = reviewsOf.get(k);
        if (!rs) continue;
        const outcome = outcomeOf(rs, settlementOf.get(k) ?? null);
        yield {
          item_id: item.id,
          kind: item.kind,
          ref: item.ref,
          run_id: item.run_id,
          launch_index: item.launch_index === null ? null : Number(item.launch_index),
          position: item.position === null ? null : Number(item.position),
          evaluator_id: ev.id,
          evaluator: ev.name,
          status: outcome.status,
          reviews: rs.map((r) => ({
            review_id: r.id,
            reviewer: r.reviewer,
            score: r.score,
            passed: bool(r.passed),
            label: r.label,
            comment: r.comment,
            created_at: r.created_at,
          })),
          settled: settledOf(outcome),
        };
      }
    }
    if (items.length < PAGE) return;
  }
}

/** A CSV field (RFC 4180): quoted where it holds a comma, a quote or a line break; null as empty. */
export function csvField(v: string | number | boolean | null): string {
  if (v === null) return '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export const CSV_COLUMNS = [
  'item_id',
  'kind',
  'ref',
  'run_id',
  'launch_index',
  'position',
  'evaluator',
  'review_id',
  'reviewer',
  'score',
  'passed',
  'label',
  'comment',
  'status',
  'settled_score',
  'settled_passed',
  'settled_label',
  'settled_method',
  'settled_by',
] as const;

/** The CSV rows of one item: one per review, each with the item's settled answer. */
function csvRows(s: ScoredItem): string[] {
  const settled = s.settled;
  return s.reviews.map((r) =>
    [
      s.item_id,
      s.kind,
      s.ref,
      s.run_id,
      s.launch_index,
      s.position,
      s.evaluator,
      r.review_id,
      r.reviewer,
      r.score,
      r.passed,
      r.label,
      r.comment,
      s.status,
      settled?.score ?? null,
      settled?.passed ?? null,
      settled?.label ?? null,
      settled?.method ?? null,
      settled?.settled_by ?? null,
    ]
      .map(csvField)
      .join(','),
  );
}

/** The export's lines (each ending in a newline): JSON lines, or CSV with a header. */
export async function* exportLines(
  db: Db,
  queue: QueueRow,
  evaluators: RubricEvaluator[],
  format: 'jsonl' | 'csv',
): AsyncGenerator<string> {
  if (format === 'csv') yield `${CSV_COLUMNS.join(',')}\r\n`;
  for await (const s of scoredItems(db, queue, evaluators)) {
    if (format === 'jsonl') yield `${JSON.stringify(s)}\n`;
    else for (const row of csvRows(s)) yield `${row}\r\n`;
  }
}
