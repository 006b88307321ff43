import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { recordedLabel } from '../../scoring/graders/label.js';
import { parseJson } from '../../shared/json.js';
import type { Scale } from '../../shared/scale.js';

/** One judge answer and one human answer on the same item, on the evaluator's scale. */
export interface Pair {
  item: string;
  promptHash: string | null;
  judge: Answer;
  human: Answer;
}

/** An answer reduced to what agreement compares: a score, a pass/fail (1/0), a label. */
export interface Answer {
  score: number | null;
  passed: number | null;
  label: string | null;
}

type Db = Kysely<Database>;

function judgeAnswer(s: {
  score: number | null;
  passed: number | null;
  extra: string | null;
  reasoning: string | null;
}): Answer {
  return { score: s.score, passed: s.passed, label: recordedLabel(s.extra, s.reasoning) };
}

const PAGE = 5000;

/**
 * Judge–human pairs of an evaluator from its current human reviews (optionally of one queue): each review
 * of a run's position paired with the judge's row at that position. Read in pages, ordered by review id.
 */
export async function reviewPairs(
  db: Db,
  projectId: string,
  evaluatorId: string,
  queueId: string | null,
): Promise<Pair[]> {
  const out: Pair[] = [];
  let after = '';
  for (;;) {
    let q = db
      .selectFrom('annotation_reviews as r')
      .innerJoin('annotation_items as i', 'i.id', 'r.item_id')
      .innerJoin('run_samples as s', (j) =>
        j
          .onRef('s.run_id', '=', 'i.run_id')
          .onRef('s.launch_index', '=', 'i.launch_index')
          .onRef('s.position', '=', 'i.position')
          .onRef('s.evaluator_id', '=', 'r.evaluator_id'),
      )
      .select([
        'r.id',
        'r.item_id',
        'r.score as h_score',
        'r.passed as h_passed',
        'r.label as h_label',
        's.score',
        's.passed',
        's.extra',
        's.reasoning',
        's.prompt_hash',
      ])
      .where('r.project_id', '=', projectId)
      .where('r.evaluator_id', '=', evaluatorId)
      .where('r.superseded_by', 'is', null)
      .where('s.status', '=', 'scored')
      .where('r.id', '>', after);
    if (queueId !== null) q = q.where('r.queue_id', '=', queueId);
    const rows = await q.orderBy('r.id').limit(PAGE).execute();
    for (const r of rows) {
      out.push({
        item: r.item_id,
        promptHash: r.prompt_hash ?? null,
        judge: judgeAnswer(r),
        human: { score: r.h_score, passed: r.h_passed, label: r.h_label },
      });
    }
    if (rows.length < PAGE) return out;
    after = rows[rows.length - 1]!.id;
  }
}

/** A human answer as exported into a dataset's `expected` (a number, a bool or a label), on a scale. */
function expectedAnswer(expected: string | null, scale: Scale): Answer | null {
  const v = parseJson<unknown>(expected, null);
  if (scale.type === 'labels') return typeof v === 'string' ? { score: null, passed: null, label: v } : null;
  if (scale.type === 'pass_fail') {
    if (typeof v === 'boolean') return { score: v ? 1 : 0, passed: v ? 1 : 0, label: null };
    if (v === 0 || v === 1) return { score: v, passed: v, label: null };
    return null;
  }
  return typeof v === 'number' ? { score: v, passed: null, label: null } : null;
}

/**
 * Judge–human pairs of a run over reviewed items (a dataset exported from a queue): each scored row's
 * judge answer against the human answer the row carries as `expected`.
 */
export async function runPairs(
  db: Db,
  runId: string,
  evaluatorId: string,
  scale: Scale,
  passThreshold: number | null,
): Promise<Pair[]> {
  const out: Pair[] = [];
  let after = -1;
  let launch = 0;
  for (;;) {
    const rows = await db
      .selectFrom('run_samples')
      .select([
        'launch_index',
        'position',
        'score',
        'passed',
        'extra',
        'reasoning',
        'prompt_hash',
        'expected',
      ])
      .where('run_id', '=', runId)
      .where('evaluator_id', '=', evaluatorId)
      .where('status', '=', 'scored')
      .where((eb) =>
        eb.or([
          eb('launch_index', '>', launch),
          eb.and([eb('launch_index', '=', launch), eb('position', '>', after)]),
        ]),
      )
      .orderBy('launch_index')
      .orderBy('position')
      .limit(PAGE)
      .execute();
    for (const r of rows) {
      const human = expectedAnswer(r.expected, scale);
      if (!human) continue;
      if (human.passed === null && human.score !== null && passThreshold !== null) {
        human.passed = human.score >= passThreshold ? 1 : 0;
      }
      out.push({
        item: `${runId}/${r.launch_index}/${r.position}`,
        promptHash: r.prompt_hash ?? null,
        judge: judgeAnswer(r),
        human,
      });
    }
    if (rows.length < PAGE) return out;
    const last = rows[rows.length - 1]!;
    launch = Number(last.launch_index);
    after = Number(last.position);
  }
}

/** One item's current answers on an evaluator, one per reviewer, in the order given. */
export interface Rated {
  item: string;
  answers: Answer[];
}

/** What reviewers' answers among themselves are measured on. */
export interface ReviewerAnswers {
  /** The first two reviewers' answers of each item reviewed twice or more (Cohen's κ and its kin). */
  pairs: Pair[];
  /** Every reviewer's answer of each item (Fleiss' κ and Krippendorff's α over any number of reviewers). */
  units: Rated[];
}

/** People's current reviews of each item on one evaluator: its first two reviewers paired, and all of them. */
export async function reviewerAnswers(
  db: Db,
  projectId: string,
  evaluatorId: string,
  queueId: string | null,
): Promise<ReviewerAnswers> {
  let q = db
    .selectFrom('annotation_reviews')
    .select(['item_id', 'reviewer', 'score', 'passed', 'label'])
    .where('project_id', '=', projectId)
    .where('evaluator_id', '=', evaluatorId)
    .where('superseded_by', 'is', null);
  if (queueId !== null) q = q.where('queue_id', '=', queueId);
  const units: Rated[] = [];
  let current = null as (Rated & { reviewers: Set<string> }) | null;
  // Ordered by item, then time: the first two reviewers of each item make its pair.
  for (const r of await q.orderBy('item_id').orderBy('id').execute()) {
    if (current?.item !== r.item_id) {
      current = { item: r.item_id, answers: [], reviewers: new Set() };
      units.push(current);
    }
    if (current.reviewers.has(r.reviewer)) continue;
    current.reviewers.add(r.reviewer);
    current.answers.push({ score: r.score, passed: r.passed, label: r.label });
  }
  const pairs: Pair[] = [];
  for (const u of units) {
    if (u.answers.length < 2) continue;
    pairs.push({ item: u.item, promptHash: null, judge: u.answers[0]!, human: u.answers[1]! });
  }
  return { pairs, units: units.map((u) => ({ item: u.item, answers: u.answers })) };
}
