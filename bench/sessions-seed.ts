/**
 * bench:sessions' store filler: `count` task logs in sessions of `turns` calls, written straight into the
 * database through the writer's own statements (insertLogRows, storeSessions; one transaction per 10,000
 * calls), not through HTTP; then ANALYZE, as autovacuum (PostgreSQL) or an operator's `ANALYZE` (SQLite)
 * would leave the planner's statistics.
 *
 * The sessions: one starting every 2 s back from now (1,000,000 calls in sessions of 5: 200,000 sessions
 * over 4.6 days), alternating between the two containers given; one in 20 with an error, one in 10
 * calling gpt-4o (else gpt-4o-mini). Each call's row is a small chat call (the list reads sessions, a
 * session's page reads its calls).
 */
import { type Kysely, sql } from 'kysely';
import { type SessionDelta, storeSessions } from '../src/capture/sessions/store.js';
import { insertLogRows } from '../src/capture/task-log-store.js';
import { type NewLogRow, reserveSeqs } from '../src/catalog/logs/repository.js';
import type { Database } from '../src/db/schema.js';

const PER_TRANSACTION = 10_000;

/** The seeded session ids are not random: the n-th one is known to the reads without keeping a list. */
export const seededSession = (n: number) => `sess_5eed${n.toString(36).padStart(12, '0')}`;

function sessionCalls(projectId: string, containerId: string, n: number, turns: number, now: number) {
  const start = now - n * 2_000;
  const model = n % 10 === 3 ? 'gpt-4o' : 'gpt-4o-mini';
  const rows: NewLogRow[] = [];
  const messages: { role: string; content: string }[] = [];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: `Session ${n}, question ${t + 1}?` });
    const error = t === turns - 1 && n % 20 === 7;
    const answer = `Answer ${t + 1} to session ${n}.`;
    rows.push({
      id: `log_5eed${(n * turns + t).toString(36).padStart(12, '0')}`,
      project_id: projectId,
      container_id: containerId,
      seq: 0,
      model,
      input: JSON.stringify(messages),
      output: error ? null : answer,
      request: JSON.stringify({ model, messages }),
      response: error
        ? ''
        : JSON.stringify({ choices: [{ message: { role: 'assistant', content: answer } }] }),
      usage: JSON.stringify({ prompt_tokens: 20 + t * 15, completion_tokens: 8, total_tokens: 28 + t * 15 }),
      latency_ms: 240,
      cost: 0.00002,
      status: error ? 'error' : 'success',
      error: error ? JSON.stringify({ message: 'upstream error' }) : null,
      metadata: '{"route":"chat"}',
      created_at: new Date(start + t * 300).toISOString(),
      session_id: seededSession(n),
    });
    messages.push({ role: 'assistant', content: answer });
  }
  return rows;
}

/** Writes `count` calls (sessions of `turns`) into the two containers, newest session first. */
export async function seedSessions(
  db: Kysely<Database>,
  projectId: string,
  containerIds: readonly [string, string],
  count: number,
  turns: number,
  log: (line: string) => void,
): Promise<number> {
  const sessions = Math.ceil(count / turns);
  const now = Date.now();
  const perTransaction = Math.max(1, Math.floor(PER_TRANSACTION / turns));
  const t0 = performance.now();
  for (let from = 0; from < sessions; from += perTransaction) {
    const to = Math.min(sessions, from + perTransaction);
    await db.transaction().execute(async (trx) => {
      for (const [c, containerId] of containerIds.entries()) {
        const deltas: SessionDelta[] = [];
        const rows: NewLogRow[] = [];
        for (let n = from + c; n < to; n += 2) {
          const calls = sessionCalls(projectId, containerId, n, turns, now);
          deltas.push({
            id: seededSession(n),
            created: { assignedBy: 'header', externalKey: `bench-${n}`, startedAt: calls[0]!.created_at },
            rows: calls,
          });
          rows.push(...calls);
        }
        if (rows.length === 0) continue;
        const first = await reserveSeqs(trx, containerId, rows.length);
        if (first === null) throw new Error(`container ${containerId} is gone`);
        rows.forEach((r, i) => {
          r.seq = first + i;
        });
        await insertLogRows(trx, rows);
        await storeSessions(trx, { projectId, containerId }, deltas, new Map());
      }
    });
    if (Math.floor(to / 20_000) > Math.floor(from / 20_000))
      log(`seeded ${to * turns} calls (${Math.round(performance.now() - t0)} ms)`);
  }
  await sql`ANALYZE`.execute(db);
  return sessions;
}
