import type { Need } from '../../auth/content.js';

/**
 * Items made from recorded traffic and reviews: a task log, a trace's span, a session, a human review.
 * Each feature reads its own object through its own service and hands back a draft; the composition root
 * (src/ports.ts) wires them in, so that the datasets feature depends on none of them.
 */

/** What an item is made from, as a request names it. */
export type OriginRef =
  | { task_log_id: string }
  | { span_id: string; trace_id?: string | undefined }
  | { session_id: string }
  | { review_id: string };

/** An item as a feature makes it from one of its objects. */
export interface ItemDraft {
  input: unknown;
  output: unknown;
  expected: unknown;
  metadata: Record<string, unknown>;
  /** Other fields of the row (a session's `expected_tool_calls`, `turns`). */
  fields?: Record<string, unknown>;
  /** What it was made from: `{kind, id, …}`, stored with the item. */
  origin: Record<string, unknown>;
}

/** A draft, and what reading its source needs beyond what its kind needs (a review's item's content). */
export interface Drafted {
  draft: ItemDraft;
  needs: Need[];
}

/** Each reads an object of the project; null when the project has no such object. */
export interface ItemOrigins {
  taskLog(projectId: string, id: string): Promise<Drafted | null>;
  span(projectId: string, spanId: string, traceId?: string): Promise<Drafted | null>;
  session(projectId: string, id: string): Promise<Drafted | null>;
  review(projectId: string, id: string): Promise<Drafted | null>;
}

export type OriginKind = 'task_log' | 'span' | 'session' | 'review';

export function originKind(ref: OriginRef): OriginKind {
  if ('task_log_id' in ref) return 'task_log';
  if ('span_id' in ref) return 'span';
  if ('session_id' in ref) return 'session';
  return 'review';
}
