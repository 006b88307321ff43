import type { Page } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import type { Range } from './items.js';

/** `start:end` (already matched against `^\d+:\d+$`) → Range; 422 at `loc` when start > end or too large. */
export function parseRange(text: string, loc: (string | number)[]): Range {
  const [a, b] = text.split(':') as [string, string];
  const start = Number(a);
  const end = Number(b);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) {
    throw ApiError.invalid(loc, 'Range bounds must be at most 2^53 - 1', 'less_than_equal');
  }
  if (start > end) throw ApiError.invalid(loc, `Range start ${start} is after its end ${end}`, 'value_error');
  return { start, end };
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
