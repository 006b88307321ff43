import type { Kysely } from 'kysely';
import { findContainer } from '../catalog/containers/repository.js';
import type { Page } from '../db/paging.js';
import type { Database } from '../db/schema.js';
import type { GuardPolicyTable } from '../db/schema-guards.js';
import type { ListResponse } from '../http/schemas.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import { checkIssues, withDefaults } from './compile.js';
import { policyNotFound } from './errors.js';
import { findGuardEvaluator } from './evaluator-guard.js';
import type {
  AppliesTo,
  CreateGuardPolicy,
  GuardCheck,
  GuardCheckInput,
  GuardPolicy,
  GuardVerdict,
  UpdateGuardPolicy,
  VerdictKind,
} from './schemas.js';
import * as store from './store.js';

/** What the policy routes need: the database, and the gateway's cache of policies to drop on a change. */
export interface GuardPorts {
  db: Kysely<Database>;
  changed?(projectId: string): void;
}

export function toPolicy(row: store.PolicyRow): GuardPolicy {
  return {
    id: row.id,
    object: 'guard_policy',
    name: row.name,
    description: row.description,
    enabled: row.enabled === 1,
    applies_to: parseJson<AppliesTo>(row.applies_to, { containers: [], keys: [], models: [] }),
    checks: parseJson<GuardCheck[]>(row.checks, []),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function toVerdict(row: store.VerdictRow): GuardVerdict {
  return {
    id: row.id,
    object: 'guard_verdict',
    task_log_id: row.task_log_id,
    policy_id: row.policy_id,
    guard: row.guard,
    stage: row.stage as GuardVerdict['stage'],
    action: row.action as GuardVerdict['action'],
    verdict: row.verdict as VerdictKind,
    score: row.score === null ? null : Number(row.score),
    passed: row.passed === null ? null : row.passed === 1,
    reason: row.reason,
    error: parseJson<GuardVerdict['error']>(row.error, null),
    latency_ms: Number(row.latency_ms),
    created_at: row.created_at,
  };
}

/** The checks with their defaults, or 422 naming every problem (an evaluator of another project is one). */
async function validChecks(
  db: Kysely<Database>,
  projectId: string,
  checks: GuardCheckInput[],
): Promise<GuardCheck[]> {
  const filled = checks.map((c) => ({ ...c, ...withDefaults(c) }));
  const issues = checkIssues(filled);
  for (const [i, c] of filled.entries()) {
    if (c.guard.type !== 'evaluator') continue;
    const ev = await findGuardEvaluator(db, projectId, c.guard.evaluator);
    if (!ev) {
      issues.push({
        loc: ['body', 'checks', i, 'guard', 'evaluator'],
        msg: `evaluator '${c.guard.evaluator}' not found in this project`,
        type: 'not_found',
      });
    }
  }
  if (issues.length) throw ApiError.validation(issues);
  return filled.map(withDefaults);
}

/** Containers by id or label (kept as ids), keys by id, each of the project; 422 naming the unknown ones. */
async function validAppliesTo(
  db: Kysely<Database>,
  projectId: string,
  given: CreateGuardPolicy['applies_to'],
): Promise<AppliesTo> {
  const issues: ValidationIssue[] = [];
  const containers: string[] = [];
  for (const [i, ref] of (given?.containers ?? []).entries()) {
    const row = await findContainer(db, projectId, ref);
    if (row) containers.push(row.id);
    else
      issues.push({
        loc: ['body', 'applies_to', 'containers', i],
        msg: `container '${ref}' not found`,
        type: 'not_found',
      });
  }
  const keys = given?.keys ?? [];
  if (keys.length) {
    const found = await db
      .selectFrom('api_keys')
      .select('id')
      .where('project_id', '=', projectId)
      .where('id', 'in', keys)
      .execute();
    const known = new Set(found.map((k) => k.id));
    keys.forEach((k, i) => {
      if (!known.has(k))
        issues.push({
          loc: ['body', 'applies_to', 'keys', i],
          msg: `key '${k}' not found`,
          type: 'not_found',
        });
    });
  }
  if (issues.length) throw ApiError.validation(issues);
  return { containers: [...new Set(containers)], keys, models: given?.models ?? [] };
}

export async function requirePolicy(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<store.PolicyRow> {
  const row = await store.findPolicy(db, projectId, ref);
  if (!row) throw policyNotFound(ref);
  return row;
}

export async function createPolicy(
  ports: GuardPorts,
  projectId: string,
  body: CreateGuardPolicy,
): Promise<GuardPolicy> {
  const [checks, appliesTo] = await Promise.all([
    validChecks(ports.db, projectId, body.checks),
    validAppliesTo(ports.db, projectId, body.applies_to),
  ]);
  const now = new Date().toISOString();
  const row: GuardPolicyTable = {
    id: newId('grd'),
    project_id: projectId,
    name: body.name,
    description: body.description ?? null,
    enabled: body.enabled === false ? 0 : 1,
    applies_to: JSON.stringify(appliesTo),
    checks: JSON.stringify(checks),
    created_at: now,
    updated_at: now,
  };
  await store.insertPolicy(ports.db, row);
  ports.changed?.(projectId);
  return toPolicy(row);
}

export async function updatePolicy(
  ports: GuardPorts,
  projectId: string,
  ref: string,
  body: UpdateGuardPolicy,
): Promise<GuardPolicy> {
  const row = await requirePolicy(ports.db, projectId, ref);
  const patch: Partial<GuardPolicyTable> = { updated_at: new Date().toISOString() };
  if (body.name !== undefined) patch.name = body.name;
  if (body.description !== undefined) patch.description = body.description;
  if (body.enabled !== undefined) patch.enabled = body.enabled ? 1 : 0;
  if (body.checks !== undefined)
    patch.checks = JSON.stringify(await validChecks(ports.db, projectId, body.checks));
  if (body.applies_to !== undefined)
    patch.applies_to = JSON.stringify(await validAppliesTo(ports.db, projectId, body.applies_to));
  await store.updatePolicy(ports.db, row.id, patch);
  ports.changed?.(projectId);
  return toPolicy({ ...row, ...patch });
}

export async function deletePolicy(ports: GuardPorts, projectId: string, ref: string) {
  const row = await requirePolicy(ports.db, projectId, ref);
  await store.deletePolicy(ports.db, row.id);
  ports.changed?.(projectId);
  return { id: row.id, object: 'guard_policy' as const, deleted: true as const };
}

export async function listPolicies(
  ports: GuardPorts,
  projectId: string,
  page: Page,
): Promise<ListResponse<GuardPolicy>> {
  const { rows, total } = await store.listPolicies(ports.db, projectId, page);
  return { object: 'list', data: rows.map(toPolicy), total };
}

export async function listVerdicts(
  ports: GuardPorts,
  projectId: string,
  filter: store.VerdictFilter,
  page: Page,
): Promise<ListResponse<GuardVerdict>> {
  const { rows, total } = await store.listVerdicts(ports.db, projectId, filter, page);
  return { object: 'list', data: rows.map(toVerdict), total };
}
