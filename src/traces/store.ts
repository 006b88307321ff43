import { type Insertable, type Kysely, sql, type Transaction } from 'kysely';
import { insertRows } from '../db/bulk.js';
import type { Database, SpanTable } from '../db/schema.js';

export type NewSpanRow = Insertable<SpanTable>;

// 24 parameters per row: 400 rows stay below SQLite's and PostgreSQL's bound-parameter limits.
const INSERT_ROWS = 400;
const LOOKUP_TRACES = 500;

const key = (projectId: string, traceId: string, spanId: string) => `${projectId}:${traceId}:${spanId}`;

/** The spans among `rows` already stored (an exporter's retry), by key. */
async function storedKeys(trx: Transaction<Database>, rows: NewSpanRow[]): Promise<Set<string>> {
  const byProject = new Map<string, Set<string>>();
  for (const r of rows) {
    const set = byProject.get(r.project_id) ?? new Set<string>();
    set.add(r.trace_id);
    byProject.set(r.project_id, set);
  }
  const out = new Set<string>();
  for (const [projectId, traces] of byProject) {
    const ids = [...traces];
    for (let i = 0; i < ids.length; i += LOOKUP_TRACES) {
      const found = await trx
        .selectFrom('spans')
        .select(['trace_id', 'span_id'])
        .where('project_id', '=', projectId)
        .where('trace_id', 'in', ids.slice(i, i + LOOKUP_TRACES))
        .execute();
      for (const f of found) out.add(key(projectId, f.trace_id, f.span_id));
    }
  }
  return out;
}

interface TraceDelta {
  project_id: string;
  trace_id: string;
  container_id: string | null;
  name: string | null;
  service_name: string | null;
  session_id: string | null;
  started_at: string;
  ended_at: string;
  span_count: number;
  error_count: number;
  model_call_count: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  updated_at: string;
}

/** What the new spans add to each trace's summary. */
function deltas(rows: NewSpanRow[], now: string): TraceDelta[] {
  const out = new Map<string, TraceDelta>();
  for (const r of rows) {
    const k = `${r.project_id}:${r.trace_id}`;
    const call = r.model_call
      ? (JSON.parse(r.model_call) as { usage: { input_tokens: number; output_tokens: number }; cost: number })
      : null;
    const service = (JSON.parse(r.resource) as Record<string, unknown>)['service.name'];
    const d = out.get(k) ?? {
      project_id: r.project_id,
      trace_id: r.trace_id,
      container_id: r.container_id ?? null,
      name: null,
      service_name: null,
      session_id: null,
      started_at: r.started_at,
      ended_at: r.ended_at,
      span_count: 0,
      error_count: 0,
      model_call_count: 0,
      input_tokens: 0,
      output_tokens: 0,
      cost: 0,
      updated_at: now,
    };
    if (r.parent_span_id === null || r.parent_span_id === undefined) {
      d.name = r.name;
      d.service_name = typeof service === 'string' ? service : null;
    }
    d.container_id ??= r.container_id ?? null;
    d.session_id ??= r.session_id ?? null;
    if (r.started_at < d.started_at) d.started_at = r.started_at;
    if (r.ended_at > d.ended_at) d.ended_at = r.ended_at;
    d.span_count++;
    if (r.status_code === 'error') d.error_count++;
    if (call) {
      d.model_call_count++;
      d.input_tokens += call.usage.input_tokens;
      d.output_tokens += call.usage.output_tokens;
      d.cost += call.cost;
    }
    out.set(k, d);
  }
  return [...out.values()];
}

async function upsertTraces(trx: Transaction<Database>, list: TraceDelta[]): Promise<void> {
  for (const d of list) {
    await trx
      .insertInto('traces')
      .values(d)
      .onConflict((oc) =>
        oc.columns(['project_id', 'trace_id']).doUpdateSet({
          container_id: sql`coalesce(traces.container_id, excluded.container_id)`,
          name: sql`coalesce(excluded.name, traces.name)`,
          service_name: sql`coalesce(excluded.service_name, traces.service_name)`,
          session_id: sql`coalesce(traces.session_id, excluded.session_id)`,
          started_at: sql`case when excluded.started_at < traces.started_at then excluded.started_at else traces.started_at end`,
          ended_at: sql`case when excluded.ended_at > traces.ended_at then excluded.ended_at else traces.ended_at end`,
          span_count: sql`traces.span_count + excluded.span_count`,
          error_count: sql`traces.error_count + excluded.error_count`,
          model_call_count: sql`traces.model_call_count + excluded.model_call_count`,
          input_tokens: sql`traces.input_tokens + excluded.input_tokens`,
          output_tokens: sql`traces.output_tokens + excluded.output_tokens`,
          cost: sql`traces.cost + excluded.cost`,
          updated_at: sql`excluded.updated_at`,
        }),
      )
      .execute();
  }
}

/**
 * Stores a batch of spans in one transaction: those already stored (the same span sent again) are
 * skipped, the others inserted and added to their traces' summaries. Returns the rows that were new.
 */
export async function storeSpans(db: Kysely<Database>, rows: NewSpanRow[]): Promise<NewSpanRow[]> {
  if (rows.length === 0) return [];
  return db.transaction().execute(async (trx) => {
    const known = await storedKeys(trx, rows);
    const seen = new Set<string>();
    const fresh = rows.filter((r) => {
      const k = key(r.project_id, r.trace_id, r.span_id);
      if (known.has(k) || seen.has(k)) return false;
      seen.add(k);
      return true;
    });
    await insertRows(trx, 'spans', fresh, INSERT_ROWS, (batch) =>
      trx
        .insertInto('spans')
        .values(batch)
        .onConflict((oc) => oc.columns(['project_id', 'trace_id', 'span_id']).doNothing()),
    );
    await upsertTraces(trx, deltas(fresh, new Date().toISOString()));
    return fresh;
  });
}
