import type { Kysely } from 'kysely';
import { type Static, Type } from 'typebox';
import type { Database } from '../../db/schema.js';
import type { EvaluatorRow } from '../../evaluators/repository.js';
import { requireEvaluator } from '../../evaluators/service.js';
import { FreeObject, Nullable } from '../../http/schemas.js';
import { ApiError } from '../../shared/errors.js';
import { requireQueue } from '../queues.js';
import { LruPromises } from './cache.js';
import { type AgreementFigures, type AgreementInput, answersOf } from './compute.js';
import { Figures } from './figures-schema.js';
import {
  DEFAULT_RESAMPLES,
  dataVersion,
  MAX_RESAMPLES,
  MAX_WORK,
  readInput,
  resamplesFor,
} from './inputs.js';
import { StatisticsThreads } from './threads.js';

type Db = Kysely<Database>;

export const AgreementQuery = Type.Object(
  {
    queue: Type.Optional(
      Type.String({ minLength: 1, maxLength: 300, description: "Only this queue's reviews" }),
    ),
    run: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: "A run over reviewed items (an exported dataset): the judge against each row's expected",
      }),
    ),
    compare: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 300,
        description: 'A second evaluator, measured the same way, side by side',
      }),
    ),
    seed: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'Bootstrap seed (0)' }),
    ),
    resamples: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: MAX_RESAMPLES,
        description: `Bootstrap resamples (${DEFAULT_RESAMPLES}; pairs × resamples at most ${MAX_WORK}, the default lowered to fit)`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type AgreementQuery = Static<typeof AgreementQuery>;

const Interval = Nullable(Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }));
const InterAnnotator = Type.Object({
  n: Type.Integer({ minimum: 0, description: 'Items with two reviewers or more' }),
  percent_agreement: Nullable(Type.Number({ description: 'Between the first two reviewers of each item' })),
  kappa: Nullable(Type.Number({ description: "Cohen's κ between the first two reviewers of each item" })),
  weighted_kappa: Nullable(Type.Number({ description: 'Quadratically weighted κ (ordinal scales)' })),
  reviewers: Type.Integer({ minimum: 0, description: 'The most reviewers of one item' }),
  fleiss_kappa: Nullable(
    Type.Number({ description: "Fleiss' κ over every reviewer's answer (categorical scales)" }),
  ),
  krippendorff_alpha: Nullable(Type.Number({ description: "Krippendorff's α over every reviewer's answer" })),
  alpha_level: Type.Union([Type.Literal('nominal'), Type.Literal('ordinal'), Type.Literal('interval')], {
    description: "α's level of measurement: nominal (pass/fail, labels), ordinal (grades), interval (scores)",
  }),
  intervals: Type.Object(
    {
      percent_agreement: Interval,
      kappa: Interval,
      weighted_kappa: Interval,
      fleiss_kappa: Interval,
      krippendorff_alpha: Interval,
    },
    { description: '95 % bootstrap intervals, resampling items (seeded)' },
  ),
});

const OneAgreement = {
  evaluator: Type.Object({ id: Type.String(), name: Type.String(), scale: FreeObject() }),
  n: Type.Integer({ minimum: 0, description: 'Judge–human pairs in all' }),
  groups: Type.Array(Figures, {
    description: 'One per judge prompt (hash): a changed prompt is never averaged in',
  }),
  inter_annotator: Nullable(InterAnnotator),
};

const AgreementOf = Type.Object(OneAgreement);
export const Agreement = Type.Object({
  object: Type.Literal('evaluator.agreement'),
  ...OneAgreement,
  queue_id: Nullable(Type.String()),
  run_id: Nullable(Type.String()),
  bootstrap: Type.Object({ seed: Type.Integer(), resamples: Type.Integer() }),
  compare: Type.Optional(AgreementOf),
});
export type Agreement = Static<typeof Agreement>;

async function requireRunOf(db: Db, projectId: string, runId: string): Promise<string> {
  const run = await db
    .selectFrom('runs')
    .select('id')
    .where('id', '=', runId)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  if (!run) throw ApiError.notFound('Run', runId);
  return run.id;
}

/** The process's statistics threads and its cache of answers (made on first use, one per process). */
export interface AgreementRuntime {
  threads: StatisticsThreads;
  results: LruPromises<Agreement>;
}

/** Answers kept: the most recently asked, each for one version of its data. */
const CACHED_ANSWERS = 64;

let shared: AgreementRuntime | null = null;

export function agreementRuntime(): AgreementRuntime {
  shared ??= { threads: new StatisticsThreads(), results: new LruPromises(CACHED_ANSWERS) };
  return shared;
}

type OneAgreement = Static<typeof AgreementOf>;

function agreementOf(ev: EvaluatorRow, input: AgreementInput, figures: AgreementFigures): OneAgreement {
  return {
    evaluator: { id: ev.id, name: ev.name, scale: input.scale },
    n: input.pairs.length,
    groups: figures.groups,
    inter_annotator: figures.inter_annotator,
  };
}

/**
 * Judge–human agreement of an evaluator (its reviews, one queue's, or a run over reviewed items). The
 * pairs are read here; the statistics run on a statistics thread. The answer is kept per version of the
 * data (a new review or a changed evaluator makes a new one), and identical requests share one computation.
 */
export async function evaluatorAgreement(
  db: Db,
  projectId: string,
  evaluatorRef: string,
  q: AgreementQuery,
  runtime: AgreementRuntime = agreementRuntime(),
): Promise<Agreement> {
  const queueId = q.queue === undefined ? null : (await requireQueue(db, projectId, q.queue)).id;
  const runId = q.run === undefined ? null : await requireRunOf(db, projectId, q.run);
  const source = { queueId, runId };
  const evaluators = [await requireEvaluator(db, projectId, evaluatorRef)];
  if (q.compare !== undefined) evaluators.push(await requireEvaluator(db, projectId, q.compare));
  const seed = q.seed ?? 0;
  const version = await dataVersion(db, projectId, evaluators, source);
  const key = JSON.stringify([projectId, queueId, runId, seed, q.resamples ?? null, version]);
  return runtime.results.get(key, async () => {
    const inputs: AgreementInput[] = [];
    for (const ev of evaluators) inputs.push(await readInput(db, projectId, ev, source));
    const boot = {
      seed,
      resamples: resamplesFor(
        q.resamples,
        inputs.reduce((n, input) => n + answersOf(input), 0),
      ),
    };
    const figures = await runtime.threads.run({ sets: inputs, boot });
    const [main, compare] = evaluators.map((ev, i) => agreementOf(ev, inputs[i]!, figures[i]!));
    return {
      object: 'evaluator.agreement',
      ...(main as OneAgreement),
      queue_id: queueId,
      run_id: runId,
      bootstrap: boot,
      ...(compare ? { compare } : {}),
    };
  });
}

export const QueueAgreement = Type.Object({
  object: Type.Literal('annotation_queue.agreement'),
  queue_id: Type.String(),
  evaluators: Type.Array(Agreement),
});

/** Agreement of each of a queue's rubric evaluators over the queue's reviews. */
export async function queueAgreement(
  db: Db,
  projectId: string,
  queueRef: string,
  q: Pick<AgreementQuery, 'seed' | 'resamples'>,
) {
  const queue = await requireQueue(db, projectId, queueRef);
  const ids = JSON.parse(queue.evaluators) as string[];
  const evaluators: Agreement[] = [];
  for (const id of ids) {
    const exists = await db.selectFrom('evaluators').select('id').where('id', '=', id).executeTakeFirst();
    if (exists) evaluators.push(await evaluatorAgreement(db, projectId, id, { ...q, queue: queue.id }));
  }
  return { object: 'annotation_queue.agreement' as const, queue_id: queue.id, evaluators };
}
