// Database-independent: the budget periods' clock computes windows from the time handed to it.
import { describe, expect, it } from 'vitest';
import { PeriodClock } from '../../src/budgets/period.js';

describe('PeriodClock', () => {
  it("gives each period's window, with its start as ISO-8601", () => {
    const t = Date.UTC(2031, 6, 15, 13, 45);
    const clock = new PeriodClock(() => t);
    expect(clock.current('day')).toEqual({
      start: Date.UTC(2031, 6, 15),
      resetsAt: Date.UTC(2031, 6, 16),
      startIso: '2031-07-15T00:00:00.000Z',
    });
    expect(clock.current('month')).toEqual({
      start: Date.UTC(2031, 6, 1),
      resetsAt: Date.UTC(2031, 7, 1),
      startIso: '2031-07-01T00:00:00.000Z',
    });
    expect(clock.current('total')).toEqual({
      start: 0,
      resetsAt: null,
      startIso: '1970-01-01T00:00:00.000Z',
    });
    expect(clock.time()).toBe(t);
  });

  it('keeps the windows while the day lasts, and moves on at midnight UTC', () => {
    let now = Date.UTC(2031, 0, 31, 23, 59, 59, 999);
    const clock = new PeriodClock(() => now);
    const day = clock.current('day');
    now += 0; // the same moment answers the same object: nothing recomputed
    expect(clock.current('day')).toBe(day);
    now += 1; // 2031-02-01T00:00:00.000Z
    expect(clock.current('day').startIso).toBe('2031-02-01T00:00:00.000Z');
    expect(clock.current('month')).toMatchObject({
      startIso: '2031-02-01T00:00:00.000Z',
      resetsAt: Date.UTC(2031, 2, 1),
    });
  });

  it('recomputes when the time goes back past the day it computed', () => {
    let now = Date.UTC(2031, 4, 10, 12);
    const clock = new PeriodClock(() => now);
    expect(clock.current('day').startIso).toBe('2031-05-10T00:00:00.000Z');
    now = Date.UTC(2031, 4, 9, 23);
    expect(clock.current('day').startIso).toBe('2031-05-09T00:00:00.000Z');
    now = Date.UTC(2031, 3, 30, 1);
    expect(clock.current('month').startIso).toBe('2031-04-01T00:00:00.000Z');
  });
});
