import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { callFailure, type Item, type Range } from '../items.js';
import { lastSeq, readLogs } from './repository.js';
import type { TaskLog } from './schemas.js';
import { toTaskLog } from './service.js';

/**
 * A task log as an item: input = request messages, output = response text, the whole log as `raw`. A
 * call that failed is unreadable with its own error (scored by no evaluator); `expected` is the log's
 * `metadata.expected` where the source reads one.
 */
export function logItem(log: TaskLog, expected: 'metadata' | 'none' = 'metadata'): Item {
  const metadata = log.metadata as Record<string, unknown>;
  const item: Item = {
    id: log.id,
    input: log.input,
    output: log.output,
    expected: expected === 'metadata' ? (metadata.expected ?? null) : null,
    metadata,
    raw: log,
  };
  const failure = callFailure(log);
  if (failure) item.unreadable = failure;
  return item;
}

/**
 * The canonical items of positions [range.start, range.end) of a container's task logs, in seq order:
 * input = request messages, output = response text, expected = metadata.expected (or null).
 */
export async function readContainerLogItems(
  db: Kysely<Database>,
  containerId: string,
  range: Range,
): Promise<Item[]> {
  const rows = await readLogs(db, containerId, {}, range.start, range.end);
  return rows.map((row) => logItem(toTaskLog(row)));
}

export async function countContainerLogs(db: Kysely<Database>, containerId: string): Promise<number> {
  return lastSeq(db, containerId);
}
