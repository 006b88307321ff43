import type { StoredSpan } from './trace-port.js';

/** Messages to the span store's thread: a batch to store (answered by id), or the end. */
export type SpanStoreRequest = { type: 'store'; id: number; spans: StoredSpan[] } | { type: 'close' };

/**
 * Messages from the span store's thread: which of a batch's spans were new (their indices), or the
 * database's error (its message and code, so that an outage reads as one on this side too).
 */
export type SpanStoreReply =
  | { type: 'stored'; id: number; fresh: number[] }
  | { type: 'failed'; id: number; message: string; code: string | null }
  | { type: 'closed' };
