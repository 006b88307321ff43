import type { GuardVerdictTable } from '../db/schema-guards.js';
import { newId } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import { compileGuard } from './compile.js';
import { findGuardEvaluator } from './evaluator-guard.js';
import type { AppliesTo, GuardCheck } from './schemas.js';
import { enabledPolicies, insertVerdicts, type PolicyRow } from './store.js';
import type { CompiledCheck, GuardRuntimePorts, Verdict } from './types.js';

/*
 * The guards the gateway applies: each project's enabled policies, compiled once per version of a policy
 * and kept for a short while (a change made through this process drops them at once; other replicas see
 * it within the cache's lifetime), matched to each call by container, key and model.
 */

interface CompiledPolicy {
  id: string;
  appliesTo: AppliesTo;
  checks: CompiledCheck[];
}

/** The checks of one call, by stage, in policy order then check order. */
export interface CallChecks {
  input: CompiledCheck[];
  parallel: CompiledCheck[];
  output: CompiledCheck[];
}

/** Who makes a call, as a policy's `applies_to` matches it. */
export interface CallParty {
  projectId: string;
  keyId: string;
  containerId: string | null;
  model: string;
}

export type { CompiledCheck, GuardMetrics, GuardRuntimePorts } from './types.js';

export interface GuardRuntime {
  ports: GuardRuntimePorts;
  /** The checks that apply to a call, or null when none do (the call runs as if there were no guards). */
  checksFor(party: CallParty): Promise<CallChecks | null>;
  /** Drops a project's compiled policies (after a change). */
  changed(projectId: string): void;
  /** Keeps a call's verdicts (scores on its task log) and counts them; never fails the call. */
  record(projectId: string, taskLogId: string | null, verdicts: Verdict[]): void;
}

/** A call matches a policy attached to its container, its key or its model; a policy attached to nothing matches every call. */
function applies(p: AppliesTo, party: CallParty): boolean {
  if (p.containers.length === 0 && p.keys.length === 0 && p.models.length === 0) return true;
  return (
    (party.containerId !== null && p.containers.includes(party.containerId)) ||
    p.keys.includes(party.keyId) ||
    p.models.includes(party.model)
  );
}

export function createGuardRuntime(ports: GuardRuntimePorts): GuardRuntime {
  const cacheMs = ports.cacheMs ?? 2000;
  const projects = new Map<string, { at: number; policies: Promise<CompiledPolicy[]> }>();
  const compiled = new Map<string, { version: string; policy: CompiledPolicy }>();

  async function compilePolicy(row: PolicyRow): Promise<CompiledPolicy> {
    const version = `${row.updated_at}`;
    const kept = compiled.get(row.id);
    if (kept && kept.version === version) return kept.policy;
    const checks: CompiledCheck[] = [];
    for (const check of parseJson<GuardCheck[]>(row.checks, [])) {
      const g = check.guard;
      if (g.type === 'evaluator') {
        checks.push({
          policyId: row.id,
          check,
          guard: null,
          evaluator: await findGuardEvaluator(ports.db, row.project_id, g.evaluator),
        });
      } else {
        checks.push({ policyId: row.id, check, guard: compileGuard(g), evaluator: null });
      }
    }
    const policy = {
      id: row.id,
      appliesTo: parseJson<AppliesTo>(row.applies_to, { containers: [], keys: [], models: [] }),
      checks,
    };
    compiled.set(row.id, { version, policy });
    return policy;
  }

  async function load(projectId: string): Promise<CompiledPolicy[]> {
    const rows = await enabledPolicies(ports.db, projectId);
    const out: CompiledPolicy[] = [];
    for (const row of rows) out.push(await compilePolicy(row));
    return out;
  }

  // The policies last read for each project: what applies while the database cannot be asked (as the
  // gateway's model and container look-ups do), so that an outage does not fail calls already guarded.
  const lastKnown = new Map<string, CompiledPolicy[]>();

  function policiesOf(projectId: string): Promise<CompiledPolicy[]> {
    const now = Date.now();
    const hit = projects.get(projectId);
    if (hit && now - hit.at < cacheMs) return hit.policies;
    const policies = load(projectId).then(
      (loaded) => {
        lastKnown.set(projectId, loaded);
        return loaded;
      },
      (err: unknown) => {
        const last = lastKnown.get(projectId);
        if (last) return last;
        throw err;
      },
    );
    projects.set(projectId, { at: now, policies });
    // A failed load is not kept: the next call asks again.
    policies.catch(() => projects.delete(projectId));
    return policies;
  }

  return {
    ports,
    async checksFor(party) {
      const policies = await policiesOf(party.projectId);
      if (policies.length === 0) return null;
      const out: CallChecks = { input: [], parallel: [], output: [] };
      for (const p of policies) {
        if (!applies(p.appliesTo, party)) continue;
        for (const c of p.checks) out[c.check.stage].push(c);
      }
      return out.input.length + out.parallel.length + out.output.length === 0 ? null : out;
    },
    changed(projectId) {
      projects.delete(projectId);
    },
    record(projectId, taskLogId, verdicts) {
      if (verdicts.length === 0) return;
      for (const v of verdicts) ports.metrics?.guardVerdict(v.guard, v.stage, v.verdict);
      // A score belongs to a task log: an unrecorded call's verdicts are only counted. Passes are on the
      // task log (metadata.guards) and in the counts; a row is kept for every verdict that did something,
      // so that a clean call writes nothing more than its task log.
      const kept = verdicts.filter((v) => v.verdict !== 'passed');
      if (taskLogId === null || kept.length === 0) return;
      const createdAt = new Date().toISOString();
      const rows: GuardVerdictTable[] = kept.map((v) => ({
        id: newId('gv'),
        project_id: projectId,
        task_log_id: taskLogId,
        policy_id: v.policyId,
        guard: v.guard,
        stage: v.stage,
        action: v.action,
        verdict: v.verdict,
        score: v.score,
        passed: v.passed === null ? null : v.passed ? 1 : 0,
        reason: v.reason,
        error: v.error ? JSON.stringify(v.error) : null,
        latency_ms: v.latencyMs,
        created_at: createdAt,
      }));
      insertVerdicts(ports.db, rows).catch((err: unknown) =>
        ports.warn?.(`guard verdicts not stored: ${err instanceof Error ? err.message : String(err)}`),
      );
    },
  };
}
