import { type Kysely, sql } from 'kysely';
import type { LogRow } from '../../capture/task-log-store.js';
import type { Database } from '../../db/schema.js';

export {
  findLog,
  type LogDraft,
  type LogRow,
  type NewLogRow,
  reserveSeqs,
} from '../../capture/task-log-store.js';

/** How many logs the container has (seqs are gap-free from 1, so the counter is the count). */
export async function lastSeq(db: Kysely<Database>, containerId: string): Promise<number> {
  const row = await db
    .selectFrom('task_log_counters')
    .select('last_seq')
    .where('container_id', '=', containerId)
    .executeTakeFirst();
  return row ? Number(row.last_seq) : 0;
}

export interface LogFilter {
  model?: string;
  /** ISO time; logs created at or after it. */
  since?: string;
  /** A stored prompt of the project, by id (`prm_…`) or name. */
  prompt?: { ref: string; projectId: string };
  promptVersion?: number;
  /** ISO time; logs created before it. */
  until?: string;
  /** Text the call's input or output contains (ASCII letters in either case). */
  text?: string;
  /** Logs an evaluator scored in a run over them, with that verdict and within those score bounds. */
  scored?: { evaluatorId: string; passed?: boolean; minScore?: number; maxScore?: number };
}

const filtered = (f: LogFilter) => Object.values(f).some((v) => v !== undefined);

/** `%text%` for LIKE, its wildcards and escape character taken literally. */
const containing = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function base(db: Kysely<Database>, containerId: string, f: LogFilter) {
  let q = db.selectFrom('task_logs').where('container_id', '=', containerId);
  if (f.model !== undefined) q = q.where('model', '=', f.model);
  if (f.since !== undefined) q = q.where('created_at', '>=', f.since);
  const prompt = f.prompt;
  if (prompt !== undefined) {
    q = q.where('prompt_id', 'in', (eb) =>
      eb
        .selectFrom('prompts')
        .select('prompts.id')
        .where('prompts.project_id', '=', prompt.projectId)
        .where(prompt.ref.startsWith('prm_') ? 'prompts.id' : 'prompts.name', '=', prompt.ref),
    );
  }
  if (f.promptVersion !== undefined) q = q.where('prompt_version', '=', f.promptVersion);
  if (f.until !== undefined) q = q.where('created_at', '<', f.until);
  if (f.text !== undefined) {
    const pattern = containing(f.text);
    q = q.where((eb) =>
      eb.or([
        eb(sql<string>`lower(coalesce(output, ''))`, 'like', sql<string>`${pattern} escape '\\'`),
        eb(sql<string>`lower(input)`, 'like', sql<string>`${pattern} escape '\\'`),
      ]),
    );
  }
  const { scored } = f;
  if (scored !== undefined) {
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom('run_samples')
          .select('run_samples.item_id')
          .whereRef('run_samples.item_id', '=', 'task_logs.id')
          .where('run_samples.evaluator_id', '=', scored.evaluatorId)
          .where('run_samples.status', '=', 'scored')
          .$if(scored.passed !== undefined, (s) => s.where('run_samples.passed', '=', scored.passed ? 1 : 0))
          .$if(scored.minScore !== undefined, (s) => s.where('run_samples.score', '>=', scored.minScore!))
          .$if(scored.maxScore !== undefined, (s) => s.where('run_samples.score', '<=', scored.maxScore!)),
      ),
    );
  }
  return q;
}

export async function countLogs(db: Kysely<Database>, containerId: string, f: LogFilter): Promise<number> {
  if (!filtered(f)) return lastSeq(db, containerId);
  const row = await base(db, containerId, f)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Logs at positions [from, to) of the (filtered) seq order. */
export async function readLogs(
  db: Kysely<Database>,
  containerId: string,
  f: LogFilter,
  from: number,
  to: number,
): Promise<LogRow[]> {
  if (to <= from) return [];
  const q = base(db, containerId, f).selectAll().orderBy('seq');
  // Unfiltered, position p is seq p + 1: an index range instead of an OFFSET scan.
  if (!filtered(f)) return q.where('seq', '>', from).where('seq', '<=', to).execute();
  return q
    .limit(to - from)
    .offset(from)
    .execute();
}
