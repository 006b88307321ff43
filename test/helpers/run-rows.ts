import type { NewRun } from '../../src/engine/store/transitions.js';
import { newId, nowIso } from '../../src/shared/ids.js';

/**
 * A run row as `queueRun` takes it, with nothing in it but its project and container (no evaluators, no
 * sides, an empty plan): for tests of the run's lifecycle, which need a run and not what it scores.
 */
export function bareRunRow(projectId: string, containerId: string, overrides: Partial<NewRun> = {}): NewRun {
  const now = nowIso();
  return {
    id: newId('run'),
    project_id: projectId,
    container_id: containerId,
    environment: 'main',
    evaluators: '[]',
    dataset_ids: '[]',
    config: '{}',
    metadata: null,
    plan: '{}',
    results: null,
    metrics: null,
    spend: 0,
    error: null,
    process_id: null,
    idempotency_key: null,
    request_hash: null,
    cancel_requested: 0,
    created_at: now,
    started_at: null,
    finished_at: null,
    error_at: null,
    updated_at: now,
    ...overrides,
  };
}
