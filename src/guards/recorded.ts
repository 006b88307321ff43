import { isObject } from '../shared/json.js';
import { VERDICTS, type VerdictKind } from './schemas.js';

/*
 * The guard verdicts a call's task log records (`metadata.guards`: one entry per check that ran, passes
 * included), read for the features that select or score calls by them. The gateway's guard step writes
 * them; this is the one reader, so that no other folder digs into the metadata's shape.
 */

/** One check's verdict as the task log keeps it. */
export interface RecordedVerdict {
  guard: string;
  stage: string;
  verdict: VerdictKind;
  score: number | null;
}

/** Which recorded verdicts a selection asks for: any verdict of these kinds, of these checks. */
export interface VerdictQuery {
  verdicts?: readonly VerdictKind[] | undefined;
  names?: readonly string[] | undefined;
}

const KINDS: ReadonlySet<string> = new Set(VERDICTS);

/** The verdicts recorded in a task log's metadata (entries of another shape are skipped). */
export function guardVerdictsOf(metadata: unknown): RecordedVerdict[] {
  if (!isObject(metadata) || !Array.isArray(metadata.guards)) return [];
  const out: RecordedVerdict[] = [];
  for (const v of metadata.guards as unknown[]) {
    if (!isObject(v) || typeof v.guard !== 'string' || typeof v.verdict !== 'string') continue;
    if (!KINDS.has(v.verdict)) continue;
    out.push({
      guard: v.guard,
      stage: typeof v.stage === 'string' ? v.stage : '',
      verdict: v.verdict as VerdictKind,
      score: typeof v.score === 'number' ? v.score : null,
    });
  }
  return out;
}

/**
 * True when one recorded verdict satisfies the query: of one of its kinds (any, when it names none) and
 * of one of its checks (any, when it names none). A call no guard checked matches no query.
 */
export function matchesVerdicts(metadata: unknown, query: VerdictQuery): boolean {
  return verdictMatcher(query)(metadata);
}

/** `matchesVerdicts` for one query over many calls (its sets built once). */
export function verdictMatcher(query: VerdictQuery): (metadata: unknown) => boolean {
  const kinds = query.verdicts?.length ? new Set<string>(query.verdicts) : null;
  const names = query.names?.length ? new Set(query.names) : null;
  return (metadata) =>
    guardVerdictsOf(metadata).some(
      (v) => (kinds === null || kinds.has(v.verdict)) && (names === null || names.has(v.guard)),
    );
}

/** What a recorded call says of itself: its status, error and metadata. */
export interface RecordedCall {
  status: string;
  error: unknown;
  metadata: unknown;
}

/**
 * The block of a call a guard stopped: its failure is the guard's `content_filter` and a blocked verdict
 * is recorded (an upstream's own content filter records none). Null for any other call.
 */
export function guardBlockOf(call: RecordedCall): { verdict: RecordedVerdict; message: string } | null {
  if (call.status !== 'error' || !isObject(call.error) || call.error.code !== 'content_filter') return null;
  const verdict = guardVerdictsOf(call.metadata).find((v) => v.verdict === 'blocked');
  if (!verdict) return null;
  const message =
    typeof call.error.message === 'string' && call.error.message !== ''
      ? call.error.message
      : `Blocked by guard '${verdict.guard}' (${verdict.stage})`;
  return { verdict, message };
}
