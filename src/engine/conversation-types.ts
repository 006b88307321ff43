import type { ChatRequest, CompletionResult } from '../llm/types.js';

/**
 * A conversation a run generates (simulated conversations): the generate side's kind drives it, the
 * engine makes, records and replays its calls and stores it as a whole (`conversation.ts`).
 */

/** Who a call of a conversation speaks for: the simulated user, or the model under test. */
export type ConversationRole = 'user' | 'target';

/** How a conversation calls models. */
export interface ConversationIO {
  /**
   * One call of the conversation, in order: the answer an earlier attempt recorded at this place when
   * there is one (not paid again), else a paid call of the run, recorded as it returns.
   */
  call(role: ConversationRole, model: string, request: ChatRequest): Promise<CompletionResult>;
}

/** One call of the model under test: a turn of the session the conversation is stored as. */
export interface TargetCall {
  request: ChatRequest;
  result: CompletionResult;
  /** When it was answered (ISO). */
  at: string;
}

/** Where the conversation was stored: its session and the task log of each target call. */
export interface StoredConversation {
  sessionId: string | null;
  logIds: string[];
}

/** A finished conversation. */
export interface Conversation {
  /** The target's calls in order: stored as the task logs of one session. */
  targetCalls: TargetCall[];
  /** What the generation row keeps, once the conversation's place is known. */
  keep(stored: StoredConversation): string;
}
