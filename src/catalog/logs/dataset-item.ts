import type { Kysely } from 'kysely';
import { findLog } from '../../capture/task-log-store.js';
import type { Database } from '../../db/schema.js';
import type { Drafted } from '../datasets/origins.js';
import { toTaskLog } from './service.js';

/**
 * A task log as a dataset item: input = its request messages, output = its answer (what the application
 * said, right or wrong: a failing call is a case to fix, not a reference), expected = its
 * `metadata.expected` where it has one (else null: set it when adding or editing the item). The item's
 * metadata says which model answered and how the call ended.
 */
export async function logDraft(db: Kysely<Database>, projectId: string, id: string): Promise<Drafted | null> {
  const row = await findLog(db, projectId, id);
  if (!row) return null;
  const log = toTaskLog(row);
  const meta = log.metadata as Record<string, unknown>;
  return {
    draft: {
      input: log.input,
      output: log.output,
      expected: meta.expected ?? null,
      metadata: {
        model: log.model,
        status: log.status,
        ...(log.error ? { error: log.error } : {}),
        ...(log.container_id ? { container_id: log.container_id } : {}),
      },
      origin: { kind: 'task_log', id: log.id },
    },
    needs: [],
  };
}
