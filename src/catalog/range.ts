import type { Page } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import type { Range } from './items.js';

/** A run side's range when the request gives none. */
export const DEFAULT_RANGE = '0:100';

export type RangeCheck =
  | { ok: true; range: Range }
  | { ok: false; msg: string; type: 'less_than_equal' | 'value_error' };

/**
 * The one reading of a range, `start:end` (already matched against `^\d+:\d+$` by the schema), 0-based
 * and end-exclusive, for datasets, task logs and run sides alike: bounds within 2^53 - 1, start <= end.
 */
export function checkRange(text: string): RangeCheck {
  const [a, b] = text.split(':') as [string, string];
  const start = Number(a);
  const end = Number(b);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) {
    return { ok: false, msg: 'Range bounds must be at most 2^53 - 1', type: 'less_than_equal' };
  }
  if (start > end)
    return { ok: false, msg: `Range start ${start} is after its end ${end}`, type: 'value_error' };
  return { ok: true, range: { start, end } };
}

/** `checkRange`, throwing its 422 at `loc`. */
export function parseRange(text: string, loc: (string | number)[]): Range {
  const checked = checkRange(text);
  if (!checked.ok) throw ApiError.invalid(loc, checked.msg, checked.type);
  return checked.range;
}

/**
 * The positions a listing returns: the range (default: everything) narrowed by offset and limit, and the
 * number of items the range holds, given how many items exist.
 */
export function pageWindow(
  range: Range | null,
  page: Page,
  count: number,
): { from: number; to: number; total: number } {
  const start = range?.start ?? 0;
  const end = Math.min(range?.end ?? count, count);
  const total = Math.max(0, end - start);
  const from = start + page.offset;
  const to = Math.min(end, from + page.limit);
  return { from, to: Math.max(from, to), total };
}
