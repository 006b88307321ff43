import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { CONTENT_PERMISSION } from '../auth/content.js';
import { grants, type Permission } from '../auth/permissions.js';
import { requireContainer } from '../catalog/containers/service.js';
import type { Database } from '../db/schema.js';
import type { EvaluatorSnapshot, RunPlan } from '../engine/plan.js';
import type { ScorerRegistry } from '../engine/scorers/registry.js';
import { createRun } from '../engine/store/birth.js';
import { findRunCounters } from '../engine/store/runs.js';
import { finishRun, requestCancel } from '../engine/store/transitions.js';
import type { RunQueue } from '../executor/run-queue.js';
import type { ListResponse, Page } from '../http/schemas.js';
import type { UpstreamUrlCheck } from '../llm/models/types.js';
import type { RunContext } from '../runs/context.js';
import { snapshotEvaluators } from '../runs/resolution.js';
import { judgeNeeds } from '../scoring/judge/scorer.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import { usd } from '../shared/numbers.js';
import * as repo from './repository.js';
import {
  type AlertRule,
  type CreateMonitor,
  DEFAULT_IDLE_SECONDS,
  type Monitor,
  type MonitorFilter,
  type PatchMonitor,
} from './schemas.js';
import { selectInto } from './selection.js';

export interface MonitorContext {
  db: Kysely<Database>;
  runs: RunContext;
  queue: RunQueue;
  environments: readonly string[];
  chunkSize: number;
  workerId: string;
  /** The upstream safety policy, applied to alert webhook URLs. */
  checkUrl: UpstreamUrlCheck;
}

function need(permissions: readonly string[], needed: Permission, why: string): void {
  if (!grants(permissions, needed)) {
    throw new ApiError('permission_denied', `This API key lacks the '${needed}' permission (${why})`, {
      required: needed,
    });
  }
}

/**
 * A monitor reads the container's calls and scores them on the creator's behalf, as a run does: its
 * evaluators ask what the scorer registry says their kinds ask (a model-calling kind, to call models).
 */
function checkAccess(
  scorerKinds: ScorerRegistry,
  permissions: readonly string[],
  evaluators: EvaluatorSnapshot[] | null,
): void {
  need(permissions, 'evaluators:read', 'the monitor uses evaluators');
  need(permissions, CONTENT_PERMISSION.task_log, "the monitor reads the container's task logs");
  for (const ask of scorerKinds.permissionsAskedBy(evaluators ?? [], 'the monitor'))
    need(permissions, ask.permission, ask.why);
}

export async function requireMonitor(db: Kysely<Database>, projectId: string, ref: string) {
  const row = await repo.findMonitor(db, projectId, ref);
  if (!row) throw ApiError.notFound('Monitor', ref);
  return row;
}

export async function toMonitor(db: Kysely<Database>, row: repo.MonitorRow): Promise<Monitor> {
  const [progress, counters] = await Promise.all([
    repo.progressOf(db, row.id, row.run_id),
    findRunCounters(db, row.run_id),
  ]);
  const oldest = progress.oldestUnscored ? Date.parse(progress.oldestUnscored) : null;
  return {
    object: 'monitor',
    id: row.id,
    name: row.name,
    container: row.container_id,
    evaluators: parseJson<string[]>(row.evaluators, []),
    sampling_rate: row.sampling_rate,
    unit: row.unit === 'session' ? 'session' : 'call',
    idle_seconds: row.idle_seconds,
    filter: parseJson<MonitorFilter>(row.filter, {}),
    enabled: row.enabled === 1,
    environment: row.environment,
    alert: parseJson<AlertRule | null>(row.alert, null),
    alert_state: row.alert_state === 'firing' || row.alert_state === 'resolved' ? row.alert_state : null,
    run_id: row.run_id,
    selected: progress.selected,
    spend: usd(counters ? counters.judge_cost + counters.generation_cost : 0),
    lag_seconds: oldest === null ? 0 : Math.max(0, (Date.now() - oldest) / 1000),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A session monitor's rules: per-call filters and backfills are for call monitors only. */
function unitIssues(body: CreateMonitor): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (body.unit !== 'session') {
    if (body.idle_seconds !== undefined)
      issues.push({ loc: ['body', 'idle_seconds'], msg: "Only for unit 'session'", type: 'extra_forbidden' });
    return issues;
  }
  if (body.filter !== undefined && Object.keys(body.filter).length > 0)
    issues.push({
      loc: ['body', 'filter'],
      msg: "Session monitors take no per-call filter (models, routes, metadata, guards); use unit 'call'",
      type: 'extra_forbidden',
    });
  if (body.backfill !== undefined)
    issues.push({
      loc: ['body', 'backfill'],
      msg: 'Session monitors score sessions active from their creation on; backfill is for call monitors',
      type: 'extra_forbidden',
    });
  return issues;
}

/** Evaluators a monitor can use: none that needs an expected value or a baseline. */
function evaluatorIssues(evaluators: EvaluatorSnapshot[]): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  evaluators.forEach((ev, i) => {
    if (ev.type === 'tool_call_match') {
      issues.push({
        loc: ['body', 'evaluators', i],
        msg: `Evaluator '${ev.name}' compares with expected tool calls, which live traffic does not have`,
        type: 'value_error',
      });
    }
    if (ev.type !== 'judge') return;
    const needs = judgeNeeds(ev);
    if (needs.expected || needs.baseline) {
      issues.push({
        loc: ['body', 'evaluators', i],
        msg: `Evaluator '${ev.name}' needs ${needs.baseline ? 'a baseline' : 'an expected value'}, which live traffic does not have`,
        type: 'value_error',
      });
    }
  });
  return issues;
}

async function alertIssues(
  ctx: MonitorContext,
  alert: AlertRule | null | undefined,
  evaluators: readonly { id: string; name: string }[],
): Promise<ValidationIssue[]> {
  if (!alert) return [];
  const issues: ValidationIssue[] = [];
  if (!evaluators.some((e) => e.id === alert.evaluator || e.name === alert.evaluator)) {
    issues.push({
      loc: ['body', 'alert', 'evaluator'],
      msg: `'${alert.evaluator}' is not one of the monitor's evaluators`,
      type: 'value_error',
    });
  }
  let url: URL | null = null;
  try {
    url = new URL(alert.webhook_url);
  } catch {
    // reported below
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    issues.push({
      loc: ['body', 'alert', 'webhook_url'],
      msg: 'Must be an http(s) URL',
      type: 'value_error',
    });
  } else {
    const verdict = await ctx.checkUrl(alert.webhook_url);
    if (!verdict.ok) {
      issues.push({
        loc: ['body', 'alert', 'webhook_url'],
        msg: `A webhook URL passes the same safety policy as a model's base URL, which refuses this one: ${verdict.reason} (EVALGATE_ALLOWED_UPSTREAM_HOSTS opens a host)`,
        type: 'value_error',
      });
    }
  }
  return issues;
}

/** The alert rule as stored: the evaluator by id. */
function storedAlert(
  alert: AlertRule | null | undefined,
  evaluators: readonly { id: string; name: string }[],
) {
  if (!alert) return null;
  const ev = evaluators.find((e) => e.id === alert.evaluator || e.name === alert.evaluator);
  return JSON.stringify({
    ...alert,
    evaluator: ev?.id ?? alert.evaluator,
    min_samples: alert.min_samples ?? 10,
  });
}

export async function createMonitor(
  ctx: MonitorContext,
  principal: { projectId: string; permissions: readonly string[] },
  body: CreateMonitor,
): Promise<Monitor> {
  const { projectId, permissions } = principal;
  checkAccess(ctx.runs.scorerKinds, permissions, null);
  const shape: ValidationIssue[] = [];
  const environment = body.environment ?? 'main';
  if (!ctx.environments.includes(environment)) {
    shape.push({
      loc: ['body', 'environment'],
      msg: `Unknown environment; this deployment has: ${ctx.environments.join(', ')}`,
      type: 'value_error',
    });
  }
  shape.push(...unitIssues(body));
  if (body.backfill?.until && body.backfill.until <= body.backfill.since) {
    shape.push({ loc: ['body', 'backfill', 'until'], msg: 'until must be after since', type: 'value_error' });
  }
  const container = await requireContainer(ctx.db, projectId, body.container);
  const evaluators = await snapshotEvaluators(
    ctx.runs,
    projectId,
    body.evaluators,
    container.id,
    false,
  ).catch((err: unknown) => {
    // Problems found before the evaluators are known are reported with theirs.
    if (err instanceof ApiError && err.code === 'validation_error')
      throw ApiError.validation([...shape, ...err.issues]);
    throw err;
  });
  const issues = [
    ...shape,
    ...evaluatorIssues(evaluators),
    ...(await alertIssues(ctx, body.alert, evaluators)),
  ];
  if (await repo.findMonitor(ctx.db, projectId, body.name)) {
    issues.push({ loc: ['body', 'name'], msg: `A monitor named '${body.name}' exists`, type: 'value_error' });
  }
  if (issues.length) throw ApiError.validation(issues);
  checkAccess(ctx.runs.scorerKinds, permissions, evaluators);

  const id = newId('mon');
  const runId = newId('run');
  const now = nowIso();
  // Selection starts at the container's present end; calls recorded from `now` on are the monitor's.
  const selectedThrough = await repo.containerEndSeq(ctx.db, container.id);
  const side = {
    type: 'monitor' as const,
    ref: id,
    models: [],
    range: { start: 0, end: Number.MAX_SAFE_INTEGER },
  };
  const none = { type: 'generate' as const, ref: null, models: [], range: { start: 0, end: 0 } };
  const plan: RunPlan = {
    projectId,
    containerId: container.id,
    sides: { sample: side, ground_truth: none, baseline: null },
    generated: null,
    launches: [{ index: 0, model: null }],
    evaluators,
  };
  const row = {
    id,
    project_id: projectId,
    container_id: container.id,
    name: body.name,
    run_id: runId,
    evaluators: JSON.stringify(evaluators.map((e) => e.id)),
    sampling_rate: body.sampling_rate ?? 1,
    filter: JSON.stringify(body.filter ?? {}),
    enabled: body.enabled === false ? 0 : 1,
    environment,
    alert: storedAlert(body.alert, evaluators),
    alert_secret: randomBytes(32).toString('hex'),
    alert_state: null,
    selected_through: selectedThrough,
    unit: body.unit ?? 'call',
    idle_seconds: body.unit === 'session' ? (body.idle_seconds ?? DEFAULT_IDLE_SECONDS) : null,
    // A session monitor notes the sessions of calls recorded from its creation on.
    sessions_through: selectedThrough,
    created_at: now,
    updated_at: now,
  };
  await ctx.db.transaction().execute(async (tx) => {
    await repo.insertMonitor(tx, row);
    // The monitor's run exists running from the start: its chunks come as the monitor selects calls.
    await createRun(tx, plan, {
      kind: 'monitor',
      id: runId,
      monitorId: id,
      processId: ctx.workerId,
      environment,
      name: null,
      metadata: null,
      config: { monitor: id },
      datasetIds: [],
    });
  });
  if (body.backfill && row.enabled === 1) {
    // Calls from the monitor's creation on are its live traffic, selected as they are committed.
    const asked = body.backfill.until;
    const until = asked && Date.parse(asked) < Date.parse(now) ? new Date(asked).toISOString() : now;
    const logs = await repo.logsBetween(ctx.db, container.id, body.backfill.since, until);
    await selectInto(
      ctx.db,
      ctx.queue,
      // A backfill is the one selection of calls older than the monitor.
      { ...row, created_at: '' },
      logs.map((l) => ({
        id: l.id,
        projectId: l.project_id,
        containerId: l.container_id,
        seq: Number(l.seq),
        model: l.model,
        metadata: l.metadata,
        createdAt: l.created_at,
      })),
      ctx.chunkSize,
    );
  }
  const stored = await requireMonitor(ctx.db, projectId, id);
  return { ...(await toMonitor(ctx.db, stored)), alert_secret: row.alert_secret };
}

export async function listMonitors(
  db: Kysely<Database>,
  projectId: string,
  container: string | undefined,
  page: Page,
): Promise<ListResponse<Monitor>> {
  const containerId = container ? (await requireContainer(db, projectId, container)).id : null;
  const { rows, total } = await repo.listMonitors(db, projectId, containerId, page);
  return { object: 'list', data: await Promise.all(rows.map((r) => toMonitor(db, r))), total };
}

export async function patchMonitor(
  ctx: MonitorContext,
  principal: { projectId: string; permissions: readonly string[] },
  ref: string,
  body: PatchMonitor,
): Promise<Monitor> {
  const row = await requireMonitor(ctx.db, principal.projectId, ref);
  checkAccess(ctx.runs.scorerKinds, principal.permissions, null);
  const evaluatorIds = parseJson<string[]>(row.evaluators, []);
  const names = await ctx.db
    .selectFrom('evaluators')
    .select(['id', 'name'])
    .where('id', 'in', evaluatorIds.length ? evaluatorIds : [''])
    .execute();
  const evaluators = evaluatorIds.map((id) => ({ id, name: names.find((n) => n.id === id)?.name ?? id }));
  const issues = await alertIssues(ctx, body.alert, evaluators);
  if (
    body.name !== undefined &&
    body.name !== row.name &&
    (await repo.findMonitor(ctx.db, principal.projectId, body.name))
  ) {
    issues.push({ loc: ['body', 'name'], msg: `A monitor named '${body.name}' exists`, type: 'value_error' });
  }
  if (issues.length) throw ApiError.validation(issues);
  const resuming = body.enabled === true && row.enabled !== 1;
  await repo.updateMonitor(
    ctx.db,
    row.id,
    {
      ...(body.name !== undefined && { name: body.name }),
      ...(body.sampling_rate !== undefined && { sampling_rate: body.sampling_rate }),
      ...(body.filter !== undefined && { filter: JSON.stringify(body.filter) }),
      ...(body.enabled !== undefined && { enabled: body.enabled ? 1 : 0 }),
      // A new rule starts with no state: its first evaluation decides.
      ...(body.alert !== undefined && { alert: storedAlert(body.alert, evaluators), alert_state: null }),
    },
    resuming ? row.container_id : undefined,
  );
  return toMonitor(ctx.db, await requireMonitor(ctx.db, principal.projectId, row.id));
}

/** Deletes the monitor and ends its run (`cancelled`, keeping what it scored and spent). */
export async function deleteMonitor(
  ctx: MonitorContext,
  projectId: string,
  ref: string,
): Promise<{ id: string }> {
  const row = await requireMonitor(ctx.db, projectId, ref);
  await repo.deleteMonitor(ctx.db, row.id);
  await requestCancel(ctx.db, row.run_id);
  await ctx.queue.cancel(row.run_id);
  const counters = await findRunCounters(ctx.db, row.run_id);
  await finishRun(ctx.db, row.run_id, 'cancelled', {
    results: null,
    metrics: null,
    spend: counters ? counters.judge_cost + counters.generation_cost : 0,
  });
  return { id: row.id };
}
