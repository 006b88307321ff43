import { type Kysely, sql } from 'kysely';
import type { Database, EvalRunTable } from '../db/schema.js';
import type { RunPlan } from '../engine/plan.js';
import { isGenerated } from '../engine/plan.js';
import { checkSampleAccess } from '../runs/access.js';
import type { RunContext } from '../runs/context.js';
import { sampleNamespace } from '../scoring/graders/sample.js';
import { chatAnswer } from '../shared/chat-answer.js';
import { ApiError, type ErrorBody } from '../shared/errors.js';
import { isObject, type JsonObject, parseJson } from '../shared/json.js';
import {
  evalRequest,
  type GenerationRequest,
  GenerationTemplateError,
} from '../sources/openai-generation.js';
import { badRequest } from './errors.js';
import { itemVerdicts } from './eval-runs-view.js';

/** Output items of an eval run: one per item (run position), read from the run's per-sample rows. */

const ID = /^outputitem_(\d+)_(.+)$/;
const itemId = (runId: string, position: number) => `outputitem_${position}_${runId}`;

function positionOf(id: string, runId: string, loc: string[]): number {
  const m = ID.exec(id);
  if (!m || m[2] !== runId) {
    throw badRequest([{ loc, msg: `'${id}' is not an output item of run ${runId}`, type: 'value_error' }]);
  }
  return Number(m[1]);
}

interface Sample {
  input: unknown[];
  output: { role: string; content: string; tool_calls?: unknown[] }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cached_tokens: number };
  model: string;
  finish_reason: string;
  error: ErrorBody | null;
  seed: number | null;
  temperature: number;
  top_p: number;
  max_completion_tokens: number | null;
}

/** The sample of an output item in chat terms: messages with content and tool calls, usage, model. */
function sampleOf(
  output: unknown,
  input: unknown[],
  params: Record<string, unknown>,
  error: ErrorBody | null,
): Sample {
  const ns = sampleNamespace(output ?? '');
  const o = isObject(output) ? output : {};
  const answered = chatAnswer(output).finishReason;
  const usage = isObject(o.usage) ? o.usage : {};
  const prompt = Number(usage.prompt_tokens ?? usage.input_tokens ?? 0);
  const completion = Number(usage.completion_tokens ?? usage.output_tokens ?? 0);
  // A chat completion's prompt_tokens_details, a Responses object's input_tokens_details.
  const details = isObject(usage.prompt_tokens_details)
    ? usage.prompt_tokens_details
    : isObject(usage.input_tokens_details)
      ? usage.input_tokens_details
      : {};
  const cached = Number(details.cached_tokens ?? 0);
  const message: Sample['output'][number] = { role: 'assistant', content: ns.output_text };
  if (ns.output_tools.length) message.tool_calls = ns.output_tools;
  return {
    input,
    output: output === null || output === undefined ? [] : [message],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      cached_tokens: Number.isFinite(cached) ? cached : 0,
    },
    model: typeof o.model === 'string' ? o.model : '',
    finish_reason:
      answered !== null
        ? answered
        : ns.output_tools.length
          ? 'tool_calls'
          : output === null || output === undefined
            ? ''
            : 'stop',
    error,
    seed: typeof params.seed === 'number' ? params.seed : null,
    temperature: typeof params.temperature === 'number' ? params.temperature : 1,
    top_p: typeof params.top_p === 'number' ? params.top_p : 1,
    max_completion_tokens:
      typeof params.max_completion_tokens === 'number' ? params.max_completion_tokens : null,
  };
}

/** The runs' database, and the app's source kinds (what reading a run's rows needs). */
type Runs = Pick<RunContext, 'db' | 'sourceKinds'>;

interface Context {
  db: Kysely<Database>;
  link: EvalRunTable;
  plan: RunPlan | null;
}

/**
 * The run's plan, once the caller may read what its output items show: the rows its sides read (stored
 * completions and responses as task logs, an uploaded file as the file; 403 otherwise).
 */
async function planOf(runs: Runs, runId: string, permissions: readonly string[]) {
  const run = await runs.db.selectFrom('runs').select('plan').where('id', '=', runId).executeTakeFirst();
  checkSampleAccess(runs, run?.plan ?? 'null', permissions);
  return parseJson<RunPlan | null>(run?.plan ?? null, null);
}

/** The output items at the given positions, in that order. */
async function itemsAt(ctx: Context, positions: number[], verdicts: Map<number, string>) {
  if (positions.length === 0) return [];
  const { db, link, plan } = ctx;
  const samples = await db
    .selectFrom('run_samples')
    .select(['evaluator_id', 'position', 'status', 'score', 'passed', 'output', 'error', 'created_at'])
    .where('run_id', '=', link.run_id)
    .where('position', 'in', positions)
    .execute();
  const datasetId = plan?.sides.ground_truth.ref ?? '';
  const rows = await db
    .selectFrom('dataset_items')
    .select(['position', 'data'])
    .where('dataset_id', '=', datasetId)
    .where('position', 'in', positions)
    .execute();
  const itemAt = new Map(rows.map((r) => [Number(r.position), parseJson<JsonObject>(r.data, {})]));
  const side = plan?.sides.sample;
  // A generate side's requests as its builder made them (an eval run's template over the item).
  const request =
    side && isGenerated(side) && side.request ? (side.request as unknown as GenerationRequest) : undefined;
  const criteria = plan?.evaluators ?? [];
  return positions.map((position) => {
    const own = samples.filter((s) => Number(s.position) === position);
    const row = itemAt.get(position) ?? {};
    const item = isObject(row.item) ? row.item : {};
    const first = own.find((s) => s.output !== null) ?? own[0];
    const error = own.map((s) => parseJson<ErrorBody | null>(s.error, null)).find((e) => e !== null) ?? null;
    let input: unknown[] = [];
    if (request) {
      try {
        input = evalRequest(
          request,
          { id: '', input: null, output: null, expected: null, metadata: {}, raw: row, evalItem: item },
          '',
        ).messages;
      } catch (err) {
        if (!(err instanceof GenerationTemplateError)) throw err;
      }
    }
    const output = first?.output ? parseJson<unknown>(first.output, null) : (row.sample ?? null);
    const results = criteria.map((ev) => {
      const s = own.find((x) => x.evaluator_id === ev.id);
      return {
        name: ev.name,
        type: ev.grader?.type ?? ev.type,
        passed: s?.passed === 1,
        score: s?.score ?? 0,
        sample: null,
        ...(s && s.status !== 'scored' ? { error: parseJson<ErrorBody | null>(s.error, null) } : {}),
      };
    });
    return {
      id: itemId(link.run_id, position),
      object: 'eval.run.output_item' as const,
      created_at: Math.floor(Date.parse(first?.created_at ?? link.created_at) / 1000),
      datasource_item: item,
      datasource_item_id: position,
      eval_id: link.eval_id,
      run_id: link.run_id,
      results,
      sample: sampleOf(output, input, request?.params ?? {}, error),
      status: verdicts.get(position) ?? 'fail',
    };
  });
}

export async function listOutputItems(
  runs: Runs,
  link: EvalRunTable,
  query: { after?: string; limit?: number; order?: 'asc' | 'desc'; status?: 'pass' | 'fail' },
  permissions: readonly string[],
) {
  const { db } = runs;
  const plan = await planOf(runs, link.run_id, permissions);
  const limit = query.limit ?? 20;
  const order = query.order ?? 'asc';
  let q = db
    .selectFrom(itemVerdicts(db, link.run_id).as('v'))
    .select([
      'position',
      sql<string>`case when errors = 0 and fails = 0 then 'pass' else 'fail' end`.as('verdict'),
    ]);
  if (query.status === 'pass') q = q.where(sql<boolean>`errors = 0 and fails = 0`);
  if (query.status === 'fail') q = q.where(sql<boolean>`(errors > 0 or fails > 0)`);
  if (query.after !== undefined) {
    q = q.where(
      'position',
      order === 'desc' ? '<' : '>',
      positionOf(query.after, link.run_id, ['query', 'after']),
    );
  }
  const page = await q
    .orderBy('position', order)
    .limit(limit + 1)
    .execute();
  const kept = page.slice(0, limit);
  const verdicts = new Map(kept.map((r) => [Number(r.position), r.verdict]));
  const data = await itemsAt(
    { db, link, plan },
    kept.map((r) => Number(r.position)),
    verdicts,
  );
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: page.length > limit,
  };
}

export async function retrieveOutputItem(
  runs: Runs,
  link: EvalRunTable,
  id: string,
  permissions: readonly string[],
) {
  const { db } = runs;
  const plan = await planOf(runs, link.run_id, permissions);
  const m = ID.exec(id);
  if (!m || m[2] !== link.run_id) throw ApiError.notFound('Output item', id);
  const position = Number(m[1]);
  const verdict = await db
    .selectFrom(itemVerdicts(db, link.run_id).as('v'))
    .select([
      'position',
      sql<string>`case when errors = 0 and fails = 0 then 'pass' else 'fail' end`.as('verdict'),
    ])
    .where('position', '=', position)
    .executeTakeFirst();
  if (!verdict) throw ApiError.notFound('Output item', id);
  const [item] = await itemsAt({ db, link, plan }, [position], new Map([[position, verdict.verdict]]));
  if (!item) throw ApiError.notFound('Output item', id);
  return item;
}
