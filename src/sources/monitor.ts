import type { Kysely } from 'kysely';
import { CONTENT_PERMISSION } from '../auth/content.js';
import type { Item, Range } from '../catalog/items.js';
import { logItem } from '../catalog/logs/items.js';
import { toTaskLog } from '../catalog/logs/service.js';
import type { Database } from '../db/schema.js';
import { formatRange } from '../engine/plan.js';
import { guardBlockOf } from '../guards/recorded.js';
import { parseJson } from '../shared/json.js';
import { sessionItem } from './sessions.js';
import type { SourceKind } from './types.js';

/**
 * A selected call as an item. A monitor that selects calls by guard verdicts is there to judge the
 * guards' decisions, so a call a guard stopped (recorded as failed: `content_filter`) is scored rather
 * than an error: its input as recorded, its output what was recorded of the answer or, when nothing came
 * back (an input or parallel block), the block the caller was answered. Any other failed call, and every
 * failed call of other monitors, stays an error of its position.
 */
function selectedItem(row: Parameters<typeof toTaskLog>[0], judgesGuards: boolean): Item {
  const log = toTaskLog(row);
  const item = logItem(log, 'none');
  const block = judgesGuards && item.unreadable ? guardBlockOf(log) : null;
  if (block) {
    delete item.unreadable;
    if (log.output === null || log.output === '') item.output = block.message;
  }
  return item;
}

/**
 * The items of positions [range.start, range.end) of a monitor's run: the task logs it selected, in
 * position order, mapped as a container's logs are (input = request messages, output = response text;
 * a failed call is an error of its position, never judged, but for guard blocks under a monitor that
 * selects by guard verdicts: see `selectedItem`). A position whose log is gone reads as an item without
 * output (recorded as missing).
 */
export async function readMonitorItems(
  db: Kysely<Database>,
  monitorId: string,
  range: Range,
  judgesGuards = false,
): Promise<Item[]> {
  const rows = await db
    .selectFrom('monitor_selections as ms')
    .innerJoin('task_logs as t', 't.id', 'ms.log_id')
    .selectAll('t')
    .select('ms.position')
    .where('ms.monitor_id', '=', monitorId)
    .where('ms.position', '>=', range.start)
    .where('ms.position', '<', range.end)
    .orderBy('ms.position')
    .execute();
  const byPosition = new Map(rows.map((r) => [Number(r.position), r]));
  const last = rows.length ? Number(rows[rows.length - 1]?.position) + 1 : range.start;
  const out: Item[] = [];
  for (let p = range.start; p < Math.min(range.end, last); p++) {
    const row = byPosition.get(p);
    if (!row) {
      out.push({ id: '', input: null, output: null, expected: null, metadata: {}, raw: null });
      continue;
    }
    out.push(selectedItem(row, judgesGuards));
  }
  return out;
}

/**
 * The items of positions [range.start, range.end) of a session monitor's run: the sessions it selected
 * (`monitor_selections.log_id` is the session's id), each as a sessions run reads it (the conversation
 * for the evaluators). A position whose session is gone reads as an item without output.
 */
async function readSessionItems(db: Kysely<Database>, monitorId: string, range: Range): Promise<Item[]> {
  const rows = await db
    .selectFrom('monitor_selections as ms')
    .innerJoin('task_sessions as s', 's.id', 'ms.log_id')
    .select(['ms.position', 's.id', 's.turn_count', 's.external_key'])
    .where('ms.monitor_id', '=', monitorId)
    .where('ms.position', '>=', range.start)
    .where('ms.position', '<', range.end)
    .orderBy('ms.position')
    .execute();
  const byPosition = new Map(rows.map((r) => [Number(r.position), r]));
  const last = rows.length ? Number(rows[rows.length - 1]?.position) + 1 : range.start;
  const out: Item[] = [];
  for (let p = range.start; p < Math.min(range.end, last); p++) {
    const row = byPosition.get(p);
    out.push(
      row
        ? await sessionItem(db, row)
        : { id: '', input: null, output: null, expected: null, metadata: {}, raw: null },
    );
  }
  return out;
}

/** What reading a monitor's positions depends on: its unit, and whether it selects by guard verdicts. */
async function readingOf(
  db: Kysely<Database>,
  monitorId: string,
): Promise<{ sessions: boolean; judgesGuards: boolean }> {
  const row = await db
    .selectFrom('monitors')
    .select(['unit', 'filter'])
    .where('id', '=', monitorId)
    .executeTakeFirst();
  const filter = parseJson<{ guards?: unknown }>(row?.filter ?? null, {}) ?? {};
  return { sessions: row?.unit === 'session', judgesGuards: filter.guards !== undefined };
}

/** The positions a monitor has selected so far (its run's positions run from 0). */
async function countSelections(db: Kysely<Database>, monitorId: string): Promise<number> {
  const row = await db
    .selectFrom('monitor_selections')
    .select((eb) => eb.fn.max('position').as('last'))
    .where('monitor_id', '=', monitorId)
    .executeTakeFirst();
  return row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1;
}

/**
 * The task logs a monitor selected, by position in its long-lived run (`monitor_selections`). Only a
 * monitor makes such a side (no run request names it); reading it is reading its container's task logs.
 */
export const monitorSource: SourceKind = {
  type: 'monitor',
  reads: [{ permission: CONTENT_PERMISSION.task_log, what: "a container's task logs" }],
  count: (db, side) => countSelections(db, side.ref),
  read: async (db, side, range) => {
    const reading = await readingOf(db, side.ref);
    return reading.sessions
      ? readSessionItems(db, side.ref, range)
      : readMonitorItems(db, side.ref, range, reading.judgesGuards);
  },
  view: (side) => ({ type: side.type, range: formatRange(side.range) }),
};
