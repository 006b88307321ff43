import type { Kysely, Selectable } from 'kysely';
import type { Database, RunSampleTable } from '../db/schema.js';
import type { RunPlan } from '../engine/plan.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { type JsonObject, parseJson } from '../shared/json.js';
import { usd } from '../shared/numbers.js';
import * as repo from './repository.js';
import type { RunSample } from './schemas.js';

function toSample(r: Selectable<RunSampleTable>): RunSample {
  return {
    object: 'evaluation.sample',
    launch_index: Number(r.launch_index),
    evaluator_id: r.evaluator_id,
    position: Number(r.position),
    item_id: r.item_id,
    status: r.status,
    missing_reason: r.missing_reason ?? null,
    score: r.score,
    passed: r.passed === null ? null : r.passed === 1,
    reasoning: r.reasoning,
    error: parseJson<JsonObject | null>(r.error, null),
    logs: r.logs,
    input: parseJson<unknown>(r.input, null),
    output: parseJson<unknown>(r.output, null),
    expected: parseJson<unknown>(r.expected, null),
    baseline: parseJson<unknown>(r.baseline, null),
    usage: parseJson<JsonObject | null>(r.usage, null),
    cost: usd(Number(r.cost)),
    latency_ms: r.latency_ms,
    extra: parseJson<JsonObject | null>(r.extra, null),
    prompt_hash: r.prompt_hash ?? null,
    created_at: r.created_at,
  };
}

export async function listSamples(
  db: Kysely<Database>,
  run: repo.RunRow,
  query: { launch?: number; evaluator?: string; passed?: boolean; errored?: boolean; status?: string },
  page: Page,
): Promise<ListResponse<RunSample>> {
  let evaluatorId = query.evaluator;
  if (evaluatorId !== undefined) {
    // Evaluators may be named by id or by the name they had when the run was created.
    const plan = parseJson<RunPlan | null>(run.plan, null);
    evaluatorId =
      plan?.evaluators.find((e) => e.id === evaluatorId || e.name === evaluatorId)?.id ?? evaluatorId;
  }
  const { rows, total } = await repo.listSamples(
    db,
    run.id,
    { launch: query.launch, evaluatorId, passed: query.passed, errored: query.errored, status: query.status },
    page,
  );
  return { object: 'list', data: rows.map(toSample), total };
}
