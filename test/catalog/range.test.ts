// Database-independent: reading a range and a page window are pure functions.
import { describe, expect, it } from 'vitest';
import { checkRange, DEFAULT_RANGE, pageWindow, parseRange } from '../../src/catalog/range.js';
import { ApiError } from '../../src/shared/errors.js';

describe('checkRange', () => {
  it('reads start:end, 0-based and end-exclusive', () => {
    expect(checkRange('0:100')).toEqual({ ok: true, range: { start: 0, end: 100 } });
    expect(checkRange('7:7')).toEqual({ ok: true, range: { start: 7, end: 7 } });
    expect(checkRange(DEFAULT_RANGE)).toEqual({ ok: true, range: { start: 0, end: 100 } });
  });

  it('refuses a start after its end', () => {
    expect(checkRange('5:2')).toEqual({
      ok: false,
      msg: 'Range start 5 is after its end 2',
      type: 'value_error',
    });
  });

  it('refuses bounds beyond 2^53 - 1', () => {
    expect(checkRange('0:9007199254740991')).toMatchObject({ ok: true });
    expect(checkRange('0:9007199254740992')).toEqual({
      ok: false,
      msg: 'Range bounds must be at most 2^53 - 1',
      type: 'less_than_equal',
    });
    expect(checkRange('99999999999999999999:1')).toMatchObject({ ok: false, type: 'less_than_equal' });
  });
});

describe('parseRange', () => {
  it('returns the range, or throws a 422 at the given location', () => {
    expect(parseRange('1:3', ['body', 'range'])).toEqual({ start: 1, end: 3 });
    let thrown: unknown;
    try {
      parseRange('3:1', ['body', 'range']);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    const error = thrown as ApiError;
    expect(error.status).toBe(422);
    expect(error.code).toBe('validation_error');
    expect(error.issues).toEqual([
      { loc: ['body', 'range'], msg: 'Range start 3 is after its end 1', type: 'value_error' },
    ]);
  });
});

describe('pageWindow', () => {
  it('is everything when there is no range, narrowed by offset and limit', () => {
    expect(pageWindow(null, { offset: 0, limit: 20 }, 50)).toEqual({ from: 0, to: 20, total: 50 });
    expect(pageWindow(null, { offset: 40, limit: 20 }, 50)).toEqual({ from: 40, to: 50, total: 50 });
  });

  it('counts only what the range holds of the items that exist', () => {
    expect(pageWindow({ start: 10, end: 30 }, { offset: 5, limit: 100 }, 50)).toEqual({
      from: 15,
      to: 30,
      total: 20,
    });
    expect(pageWindow({ start: 10, end: 100 }, { offset: 0, limit: 100 }, 25)).toEqual({
      from: 10,
      to: 25,
      total: 15,
    });
  });

  it('is empty (never negative) past the end', () => {
    expect(pageWindow({ start: 60, end: 100 }, { offset: 0, limit: 10 }, 50)).toEqual({
      from: 60,
      to: 60,
      total: 0,
    });
    expect(pageWindow(null, { offset: 80, limit: 10 }, 50)).toEqual({ from: 80, to: 80, total: 50 });
  });
});
