import { performance } from 'node:perf_hooks';
import type { ErrorBody } from '../shared/errors.js';
import type { CheckVerdict, TextGuard } from './builtins/types.js';
import { EvaluatorGuardError, evaluate } from './evaluator-guard.js';
import type { VerdictKind } from './schemas.js';
import type { CheckContext, CompiledCheck, Verdict } from './types.js';

export type { CheckContext, Verdict } from './types.js';

/** The most text one check reads: past it the check fails (open or closed, as configured), never stalls. */
export const MAX_CHECK_CHARS = 1_000_000;

class CheckTimeout extends Error {
  readonly code = 'guard_timeout';
}

/** Rejects after `ms` (and aborts the check's own signal, so that a judge's model call is cancelled). */
function withTimeout<T>(
  run: (signal: AbortSignal) => Promise<T>,
  ms: number,
  parent: AbortSignal,
): Promise<T> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  parent.addEventListener('abort', stop, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new CheckTimeout(`the check took longer than ${ms} ms`));
    }, ms);
  });
  return Promise.race([run(controller.signal), timeout]).finally(() => {
    clearTimeout(timer);
    parent.removeEventListener('abort', stop);
  });
}

function tooLarge(text: string): void {
  if (text.length > MAX_CHECK_CHARS) {
    throw new EvaluatorGuardError(
      'guard_input_too_large',
      `the text (${text.length} characters) is over the ${MAX_CHECK_CHARS} a check reads`,
    );
  }
}

/** A built-in runs to its end (it is bounded); one that took longer than its timeout still counts as one. */
function judgeBuiltIn(c: CompiledCheck, guard: TextGuard, text: string): CheckVerdict {
  tooLarge(text);
  const started = performance.now();
  const v = guard.check(text);
  const took = performance.now() - started;
  if (took > c.check.timeout_ms)
    throw new CheckTimeout(`the check took ${Math.round(took)} ms > ${c.check.timeout_ms} ms`);
  return v;
}

function judge(c: CompiledCheck, text: string, ctx: CheckContext): CheckVerdict | Promise<CheckVerdict> {
  tooLarge(text);
  if (c.guard) return judgeBuiltIn(c, c.guard, text);
  const ev = c.evaluator;
  if (!ev)
    throw new EvaluatorGuardError('evaluator_not_found', 'the evaluator of this check no longer exists');
  return withTimeout(
    (signal) => evaluate(ctx.ports, ev, ctx.payer, { input: ctx.input, output: text }, signal),
    c.check.timeout_ms,
    ctx.signal,
  );
}

function errorOfCheck(err: unknown): ErrorBody {
  if (err instanceof CheckTimeout) return { code: err.code, message: err.message };
  if (err instanceof EvaluatorGuardError) return { code: err.code, message: err.message };
  const e = err as { code?: unknown; message?: unknown };
  return {
    code: typeof e?.code === 'string' ? e.code : 'guard_error',
    message: typeof e?.message === 'string' ? e.message : 'the check failed',
  };
}

type Base = Pick<Verdict, 'policyId' | 'guard' | 'stage' | 'action'>;

function verdictOf(base: Base, c: CompiledCheck, v: CheckVerdict, started: number): Verdict {
  const verdict: VerdictKind = !v.triggered
    ? 'passed'
    : c.check.action === 'block'
      ? 'blocked'
      : c.check.action === 'flag'
        ? 'flagged'
        : 'redacted';
  return {
    ...base,
    verdict,
    score: v.score,
    passed: !v.triggered,
    reason: v.reason,
    error: null,
    latencyMs: performance.now() - started,
  };
}

/** How a check's failure ends: blocked when it fails closed, else the call goes on (`error`). */
function failureOf(base: Base, c: CompiledCheck, err: unknown, started: number): Verdict {
  const error = errorOfCheck(err);
  const closed = c.check.on_error === 'closed';
  return {
    ...base,
    verdict: closed ? 'blocked' : 'error',
    score: null,
    passed: null,
    reason: `${closed ? 'failed closed' : 'failed open'}: ${error.message}`,
    error,
    latencyMs: performance.now() - started,
  };
}

const baseOf = (c: CompiledCheck): Base => ({
  policyId: c.policyId,
  guard: c.check.name,
  stage: c.check.stage,
  action: c.check.action,
});

/** Runs one check: its verdict, or how its failure ends (blocked when it fails closed, else passed on). */
export async function runCheck(c: CompiledCheck, text: string, ctx: CheckContext): Promise<Verdict> {
  const started = performance.now();
  try {
    return verdictOf(baseOf(c), c, await judge(c, text, ctx), started);
  } catch (err) {
    return failureOf(baseOf(c), c, err, started);
  }
}

/** A built-in check run at once (streams check as frames pass); an evaluator cannot be, and fails as configured. */
export function checkNow(c: CompiledCheck, text: string): Verdict {
  const started = performance.now();
  try {
    if (!c.guard)
      throw new EvaluatorGuardError('guard_error', 'an evaluator cannot check a stream as it passes');
    return verdictOf(baseOf(c), c, judgeBuiltIn(c, c.guard, text), started);
  } catch (err) {
    return failureOf(baseOf(c), c, err, started);
  }
}
