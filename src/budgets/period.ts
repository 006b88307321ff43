import type { BudgetPeriod } from '../shared/budget.js';

const DAY_MS = 86_400_000;

/** The period a moment falls in: its start, and when the next one starts (null for `total`). Epoch ms. */
export interface PeriodWindow {
  start: number;
  resetsAt: number | null;
}

/** A window with its start as ISO-8601 (a counter's name), computed once per window. */
export interface ClockWindow extends PeriodWindow {
  startIso: string;
}

const withIso = (w: PeriodWindow): ClockWindow => ({ ...w, startIso: new Date(w.start).toISOString() });

export function periodWindow(period: BudgetPeriod, now: number): PeriodWindow {
  if (period === 'total') return { start: 0, resetsAt: null };
  if (period === 'day') {
    const start = Math.floor(now / DAY_MS) * DAY_MS;
    return { start, resetsAt: start + DAY_MS };
  }
  const d = new Date(now);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return { start, resetsAt: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

/**
 * The windows of the three periods, recomputed only when `now` leaves the day they were computed for:
 * the check on every call then costs a comparison, not a date computation.
 */
export class PeriodClock {
  private until = -1;
  private windows: Record<BudgetPeriod, ClockWindow> = {
    day: withIso({ start: 0, resetsAt: null }),
    month: withIso({ start: 0, resetsAt: null }),
    total: withIso({ start: 0, resetsAt: null }),
  };

  constructor(private readonly now: () => number) {}

  current(period: BudgetPeriod): ClockWindow {
    const now = this.now();
    if (now >= this.until || now < this.until - DAY_MS) {
      this.windows = {
        day: withIso(periodWindow('day', now)),
        month: withIso(periodWindow('month', now)),
        total: withIso(periodWindow('total', now)),
      };
      this.until = this.windows.day.resetsAt ?? Number.POSITIVE_INFINITY;
    }
    return this.windows[period];
  }

  time(): number {
    return this.now();
  }
}
