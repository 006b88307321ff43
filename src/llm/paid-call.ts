import type { Payer, Reservation, SpendGuard } from '../shared/budget.js';

/**
 * One paid model call, whoever makes it (the gateway's routes, embeddings, a run's judges and
 * generations, graders, monitors): the model limiter's permit → the budget's reservation of the call's
 * largest cost → the call itself (the response cache, then the provider layer) → the reservation settled
 * to the actual cost → the cost recorded where the caller keeps it → the permit released.
 */

/** A model limiter's permit (runs' per-model concurrency, RPM and TPM): released with the tokens used. */
export interface PaidPermit {
  release(tokens: number): void;
}

/** What a paid call needs from the process: the budgets (none: nothing is reserved or charged). */
export interface PaidCallPorts {
  budgets?: SpendGuard | undefined;
}

export interface PaidCall<R> {
  payer: Payer;
  /** The most the call may cost (USD, `maxCallCost`): reserved before it, settled after. */
  estimate: number;
  /** Takes the model limiter's permit; first, so that a call queued behind it sees what those before paid. */
  permit?: () => Promise<PaidPermit>;
  /** Checked once the permit is held, before the budget (e.g. a run that was abandoned meanwhile). */
  admit?: () => void;
  /** Called with the budget's refusal before it is thrown. */
  refused?: (err: unknown) => Promise<void>;
  /** The call: through the cache when the caller uses one, else the provider layer. */
  run: () => Promise<R>;
  /** What the answered call cost (0 for a cache hit). */
  cost: (result: R) => number;
  /** The tokens the call used, for the permit's per-minute budget. */
  tokens?: (result: R) => number;
  /** Records the cost where the caller keeps it (a run's tally, a grader's usage), before it is settled. */
  spent?: (result: R, cost: number) => void;
}

/**
 * Makes one paid call. A refusal of the budget (`budget_exceeded`) is thrown before anything is called;
 * a call that fails releases its reservation; one that answers is settled to its cost.
 */
export async function paidCall<R>(ports: PaidCallPorts, call: PaidCall<R>): Promise<R> {
  const permit = call.permit ? await call.permit() : null;
  let tokens = 0;
  try {
    call.admit?.();
    let reservation: Reservation | null = null;
    if (ports.budgets) {
      try {
        reservation = await ports.budgets.reserve(call.payer, call.estimate);
      } catch (err) {
        await call.refused?.(err);
        throw err;
      }
    }
    let result: R;
    try {
      result = await call.run();
    } catch (err) {
      void reservation?.settle(0);
      throw err;
    }
    const cost = call.cost(result);
    call.spent?.(result, cost);
    // Counted before the caller answers, so that its next call sees it on any process.
    await reservation?.settle(cost);
    tokens = call.tokens?.(result) ?? 0;
    return result;
  } finally {
    permit?.release(tokens);
  }
}
