/**
 * Why a run's work stopped early. These are abort reasons and thrown errors, checked by type, never by
 * message: a cancelled run ends `cancelled`; interrupted work (shutdown, a lease taken over) is left for
 * another worker to finish.
 */

/** The run's cancellation was requested. */
export class RunCancelled extends Error {
  override name = 'RunCancelled';
  constructor(readonly runId: string) {
    super(`Run ${runId} was cancelled`);
  }
}

/** This process stopped working on the run (shutdown, lost lease); the work resumes elsewhere. */
export class RunInterrupted extends Error {
  override name = 'RunInterrupted';
  constructor(readonly reason: 'shutdown' | 'lease_lost') {
    super(`Work interrupted: ${reason}`);
  }
}

/**
 * A model kept answering 429 past the run's bound on waiting without progress: the position is recorded
 * with this error, and so is every position left.
 */
export class RateLimitExhausted extends Error {
  override name = 'RateLimitExhausted';
  readonly code = 'rate_limited';
  constructor(
    readonly model: string,
    readonly waitedMs: number,
  ) {
    super(
      `The model '${model}' kept answering 429 (rate limited) for ${Math.round(waitedMs / 1000)} s without progress; the run gave up waiting`,
    );
  }
}

/** A call of a run that was abandoned (rate limits, budget): it fails with the abandonment's error. */
export class RunAbandoned extends Error {
  override name = 'RunAbandoned';
  readonly code: string;
  constructor(reason: { code: string; message: string }) {
    super(reason.message);
    this.code = reason.code;
  }
}

export function isStop(err: unknown): err is RunCancelled | RunInterrupted {
  return err instanceof RunCancelled || err instanceof RunInterrupted;
}
