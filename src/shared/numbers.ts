/**
 * Presentation of measured figures: stored as computed, shown without binary floating-point noise
 * (`0.0013980000000000002` → `0.001398`). Money to 1e-10 USD, durations to the microsecond.
 */
export function usd(value: number): number {
  return Math.round(value * 1e10) / 1e10;
}

export function millis(value: number): number {
  return Math.round(value * 1e3) / 1e3;
}
