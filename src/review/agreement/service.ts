import type { Kysely } from 'kysely';
import { type Static, Type } from 'typebox';
import type { Database } from '../../db/schema.js';
import { scaleOf } from '../../evaluators/scale.js';
import { requireEvaluator } from '../../evaluators/service.js';
import { FreeObject, Nullable } from '../../http/schemas.js';
import { ApiError } from '../../shared/errors.js';
import { requireQueue } from '../queues.js';
import { type BootstrapOptions, byPromptHash, Figures, figuresOf } from './figures.js';
import { reviewerPairs, reviewPairs, runPairs } from './pairs.js';

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
      Type.Integer({ minimum: 100, maximum: 10_000, description: 'Bootstrap resamples (1000)' }),
    ),
  },
  { additionalProperties: false },
);
export type AgreementQuery = Static<typeof AgreementQuery>;

const InterAnnotator = Type.Object({
  n: Type.Integer({ minimum: 0, description: 'Items with two reviewers' }),
  percent_agreement: Nullable(Type.Number()),
  kappa: Nullable(Type.Number()),
  weighted_kappa: Nullable(Type.Number()),
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

async function agreementOf(
  db: Db,
  projectId: string,
  evaluatorRef: string,
  source: { queueId: string | null; runId: string | null },
  boot: BootstrapOptions,
): Promise<Static<typeof AgreementOf>> {
  const ev = await requireEvaluator(db, projectId, evaluatorRef);
  const scale = scaleOf(ev);
  const pairs =
    source.runId !== null
      ? await runPairs(db, source.runId, ev.id, scale, ev.pass_threshold)
      : await reviewPairs(db, projectId, ev.id, source.queueId);
  const groups = [...byPromptHash(pairs)].map(([hash, group]) => figuresOf(scale, hash, group, boot));
  let inter: Static<typeof InterAnnotator> | null = null;
  if (source.runId === null) {
    const people = await reviewerPairs(db, projectId, ev.id, source.queueId);
    if (people.length) {
      const f = figuresOf(scale, null, people, { ...boot, resamples: 0 });
      inter = {
        n: f.n,
        percent_agreement: f.percent_agreement,
        kappa: f.kappa,
        weighted_kappa: f.weighted_kappa,
      };
    }
  }
  return { evaluator: { id: ev.id, name: ev.name, scale }, n: pairs.length, groups, inter_annotator: inter };
}

/** Judge–human agreement of an evaluator (its reviews, one queue's, or a run over reviewed items). */
export async function evaluatorAgreement(
  db: Db,
  projectId: string,
  evaluatorRef: string,
  q: AgreementQuery,
): Promise<Agreement> {
  const queueId = q.queue === undefined ? null : (await requireQueue(db, projectId, q.queue)).id;
  const runId = q.run === undefined ? null : await requireRunOf(db, projectId, q.run);
  const boot = { seed: q.seed ?? 0, resamples: q.resamples ?? 1000 };
  const source = { queueId, runId };
  const main = await agreementOf(db, projectId, evaluatorRef, source, boot);
  const compare =
    q.compare === undefined ? undefined : await agreementOf(db, projectId, q.compare, source, boot);
  return {
    object: 'evaluator.agreement',
    ...main,
    queue_id: queueId,
    run_id: runId,
    bootstrap: boot,
    ...(compare ? { compare } : {}),
  };
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
