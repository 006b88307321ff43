import { newTraceId, randomHex } from '../shared/ids.js';

/** The W3C trace context a gateway call is recorded in: the caller's trace, or a fresh one. */
export interface CallTrace {
  traceId: string;
  /** The call's own span. */
  spanId: string;
  /** The caller's span (a `traceparent`'s parent id), absent for a call that starts its own trace. */
  parentSpanId?: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZEROS = /^0+$/;

/**
 * The call's trace from a `traceparent` header (W3C Trace Context level 1): invalid or absent headers
 * are ignored as the specification says (version ff, all-zero ids, upper case, a version 00 header with
 * more fields), and the call then starts a trace of its own (a time-ordered id, see `newTraceId`).
 */
export function callTrace(header: string | string[] | undefined): CallTrace {
  const spanId = randomHex(8);
  const value = Array.isArray(header) ? (header.length === 1 ? header[0] : undefined) : header;
  const m = value === undefined ? null : TRACEPARENT.exec(value.trim());
  if (
    m &&
    m[1] !== 'ff' &&
    !(m[1] === '00' && m[5] !== undefined) &&
    !ZEROS.test(m[2]!) &&
    !ZEROS.test(m[3]!)
  ) {
    return { traceId: m[2]!, spanId, parentSpanId: m[3]! };
  }
  return { traceId: newTraceId(), spanId };
}
