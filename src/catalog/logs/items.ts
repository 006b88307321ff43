import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { Item, Range } from '../items.js';
import { lastSeq, readLogs } from './repository.js';
import { toTaskLog } from './service.js';

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
  return rows.map((row) => {
    const log = toTaskLog(row);
    const metadata = log.metadata as Record<string, unknown>;
    return {
      id: log.id,
      input: log.input,
      output: log.output,
      expected: metadata.expected ?? null,
      metadata,
      raw: log,
    };
  });
}

export async function countContainerLogs(db: Kysely<Database>, containerId: string): Promise<number> {
  return lastSeq(db, containerId);
}
