import type { Kysely } from 'kysely';
import { assignSessions } from '../capture/sessions/assign.js';
import { insertLogRows } from '../capture/task-log-store.js';
import type { Item } from '../catalog/items.js';
import { type NewLogRow, reserveSeqs } from '../catalog/logs/repository.js';
import { isUniqueViolation } from '../db/database.js';
import type { Database, RunGenerationTable } from '../db/schema.js';
import type { ChatRequest, CompletionResult } from '../llm/types.js';
import { newId, nowIso } from '../shared/ids.js';
import type { Conversation, ConversationRole, TargetCall } from './conversation-types.js';
import type { Generation } from './positions.js';

/**
 * Simulated conversations, the engine's half: a conversation is the unit of work. Each call it makes is
 * recorded (`run_conversation_calls`) as it returns, so a conversation redone after its worker died
 * replays the answered calls in order and pays only for those never answered. The finished conversation
 * is stored in one transaction: its generation row, the target's calls as task logs of the run's
 * container and the session they form (named by the `X-Evalgate-Session` key
 * `simulated:<run>:<launch>:<position>`). A conversation is therefore stored whole or not at all, and
 * once: a second attempt's transaction fails on the generation row's key and leaves nothing behind.
 */

/** Where a conversation belongs. */
export interface ConversationPlace {
  runId: string;
  projectId: string;
  containerId: string;
  launch: number;
  side: string;
  position: number;
  model: string;
}

/** A paid call of the run (its limiter, budget and ledger). */
export type RunCall = (model: string, request: ChatRequest) => Promise<CompletionResult>;

/** The session key a simulated conversation's calls are stored under. */
export const simulatedSessionKey = (p: ConversationPlace): string =>
  `simulated:${p.runId}:${p.launch}:${p.position}`;

async function recordedCalls(db: Kysely<Database>, p: ConversationPlace) {
  const rows = await db
    .selectFrom('run_conversation_calls')
    .select(['call_index', 'role', 'result'])
    .where('run_id', '=', p.runId)
    .where('launch_index', '=', p.launch)
    .where('position', '=', p.position)
    .orderBy('call_index')
    .execute();
  return new Map(rows.map((r) => [Number(r.call_index), r]));
}

/** Runs the item's conversation, replaying what an earlier attempt recorded and recording the rest. */
async function converse(
  db: Kysely<Database>,
  call: RunCall,
  p: ConversationPlace,
  generation: Generation,
  item: Item,
): Promise<Conversation> {
  if (!generation.converse) throw new Error('the generation does not converse');
  const recorded = await recordedCalls(db, p);
  let next = 0;
  return generation.converse(item, p.model, {
    async call(role: ConversationRole, model: string, request: ChatRequest) {
      const index = next++;
      const earlier = recorded.get(index);
      if (earlier && earlier.role === role) return JSON.parse(earlier.result) as CompletionResult;
      const result = await call(model, request);
      await db
        .insertInto('run_conversation_calls')
        .values({
          run_id: p.runId,
          launch_index: p.launch,
          position: p.position,
          call_index: index,
          role,
          model,
          result: JSON.stringify(result),
          created_at: nowIso(),
        })
        .onConflict((oc) => oc.columns(['run_id', 'launch_index', 'position', 'call_index']).doNothing())
        .execute();
      return result;
    },
  });
}

/** A target call as a task log of the run's container (seq and session set when stored). */
function logOf(p: ConversationPlace, c: TargetCall, id: string): NewLogRow {
  const usage = c.result.usage;
  return {
    id,
    project_id: p.projectId,
    container_id: p.containerId,
    seq: 0,
    model: c.result.servedBy || p.model,
    input: JSON.stringify(c.request.messages),
    output: c.result.text,
    request: JSON.stringify(c.request),
    response: JSON.stringify(c.result.body),
    usage: usage === null ? null : JSON.stringify(usage),
    latency_ms: Number.isFinite(c.result.latencyMs) ? c.result.latencyMs : 0,
    cost: c.result.cost,
    status: 'success',
    error: null,
    metadata: JSON.stringify({ route: 'chat', run_id: p.runId, simulated: true, position: p.position }),
    created_at: c.at,
    trace_id: null,
    span_id: null,
    parent_span_id: null,
    session_id: null,
  };
}

function rowOf(p: ConversationPlace, conversation: Conversation): RunGenerationTable {
  const calls = conversation.targetCalls;
  const sum = (f: (c: TargetCall) => number) => calls.reduce((n, c) => n + f(c), 0);
  const prompt = sum((c) => c.result.usage?.prompt_tokens ?? 0);
  const completion = sum((c) => c.result.usage?.completion_tokens ?? 0);
  return {
    run_id: p.runId,
    launch_index: p.launch,
    side: p.side,
    position: p.position,
    model: p.model,
    output: null,
    error: null,
    usage: JSON.stringify({
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    }),
    cost: sum((c) => c.result.cost),
    prompt_tokens: prompt,
    completion_tokens: completion,
    latency_ms: sum((c) => c.result.latencyMs),
    created_at: nowIso(),
  };
}

/** Stores the conversation whole; false when another attempt stored this position first. */
async function store(
  db: Kysely<Database>,
  p: ConversationPlace,
  conversation: Conversation,
  row: RunGenerationTable,
) {
  try {
    await db.transaction().execute(async (trx) => {
      const logs = conversation.targetCalls.map((c) => logOf(p, c, newId('log')));
      const first = logs.length > 0 ? await reserveSeqs(trx, p.containerId, logs.length) : null;
      let sessionId: string | null = null;
      if (first !== null) {
        logs.forEach((l, i) => {
          l.seq = first + i;
        });
        const key = simulatedSessionKey(p);
        await assignSessions(
          trx,
          p.containerId,
          logs.map((l) => ({ row: l, ask: { key } })),
        );
        sessionId = logs[0]?.session_id ?? null;
      }
      row.output = conversation.keep({ sessionId, logIds: first === null ? [] : logs.map((l) => l.id) });
      await trx.insertInto('run_generations').values(row).execute();
      if (first !== null) await insertLogRows(trx, logs);
    });
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/**
 * The generation row of one position of a conversing side: the conversation run (or resumed) and stored
 * with its session, or the row another attempt stored first. Throws what a call threw (the caller
 * records the position's error).
 */
export async function conversationRow(
  db: Kysely<Database>,
  call: RunCall,
  p: ConversationPlace,
  generation: Generation,
  item: Item,
): Promise<RunGenerationTable> {
  const conversation = await converse(db, call, p, generation, item);
  const row = rowOf(p, conversation);
  if (await store(db, p, conversation, row)) return row;
  const stored = await db
    .selectFrom('run_generations')
    .selectAll()
    .where('run_id', '=', p.runId)
    .where('launch_index', '=', p.launch)
    .where('side', '=', p.side)
    .where('position', '=', p.position)
    .executeTakeFirstOrThrow();
  return { ...stored, usage: stored.usage ?? null };
}
