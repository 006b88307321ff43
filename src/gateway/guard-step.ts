import type { GuardNote } from '../capture/types.js';
import { GuardBlockedError } from '../guards/errors.js';
import type { CallChecks, CompiledCheck, GuardRuntime } from '../guards/runtime.js';
import { type CheckContext, runCheck, type Verdict } from '../guards/verdict.js';
import type { NativeCall } from '../llm/dialect-types.js';
import type { FrameSink } from '../llm/stream-pump.js';
import type { ChatRequest } from '../llm/types.js';
import type { JsonObject } from '../shared/json.js';
import { guardedSink } from './guard-stream.js';

/*
 * The guard step of a gateway call (ARCHITECTURE.md section 27): input checks before the model call (a
 * block answers `content_filter`, a redaction rewrites what goes upstream), parallel checks beside it (a
 * block cancels the upstream call), output checks on the answer, plain or streamed. Every verdict is kept
 * as a score on the call's task log and its span.
 */

export interface GuardStep {
  /** Runs the input checks (throws the block), then starts the parallel ones; `cancel` stops the upstream call. */
  before(cancel: () => void): Promise<void>;
  /** What a failed call answers: a parallel guard's block in place of the cancellation it caused. */
  failure(err: unknown): unknown;
  /** The output checks of a plain answer: the body to send (redacted where a check redacts) or the block. */
  plain(
    body: string,
    text: string,
  ): Promise<{ body: string; blocked: null } | { blocked: GuardBlockedError }>;
  /**
   * Whether a streamed answer must pass through `sink` (output checks, or parallel checks that hold it):
   * such a stream is read as chat-completion frames, so it is not passed through natively.
   */
  readonly watchesStream: boolean;
  /** The sink of a streamed answer's chat-completion frames, with the output checks between. */
  sink(inner: FrameSink): FrameSink;
  /** Keeps the verdicts (once the stream's held checks are done). */
  finish(): void;
  /** The verdicts reached so far, as the call's span records them. */
  notes(): GuardNote[];
}

/** What the step sees of a call: who makes it, its request, its task log, and the metadata it adds to. */
export interface GuardedCall {
  projectId: string;
  keyId: string;
  containerId: string | null;
  logId: string | null;
  request: ChatRequest;
  native?: NativeCall | undefined;
  /** The body sent upstream when it is not the messages (embeddings' `input`): redacted with them. */
  upstreamBody?: unknown;
  /** The task log's metadata: `guards` is added, one entry per verdict. */
  base: JsonObject;
}

/** Keys of an answer or request that name things rather than say them: never redacted. */
const NAMES = new Set([
  'id',
  'model',
  'object',
  'type',
  'role',
  'status',
  'finish_reason',
  'stop_reason',
  'call_id',
  'name',
]);

/** Replaces, in place, every string of `value` (but names) by its redaction; true when one changed. */
export function redactDeep(value: unknown, redact: (s: string) => string): boolean {
  let changed = false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v === 'string') {
        const r = redact(v);
        if (r !== v) {
          value[i] = r;
          changed = true;
        }
      } else if (redactDeep(v, redact)) changed = true;
    }
    return changed;
  }
  if (typeof value !== 'object' || value === null) return false;
  const obj = value as Record<string, unknown>;
  for (const [k, v] of Object.entries(obj)) {
    if (NAMES.has(k)) continue;
    if (typeof v === 'string') {
      const r = redact(v);
      if (r !== v) {
        obj[k] = r;
        changed = true;
      }
    } else if (redactDeep(v, redact)) changed = true;
  }
  return changed;
}

/** The text of a request's messages (string contents and text parts), one message a line. */
export function messagesText(messages: ChatRequest['messages'] | undefined): string {
  if (!Array.isArray(messages)) return '';
  const parts: string[] = [];
  for (const m of messages) {
    const content: unknown = (m as { content?: unknown }).content;
    if (typeof content === 'string') parts.push(content);
    else if (Array.isArray(content)) {
      for (const p of content) {
        if (typeof p === 'object' && p !== null && typeof (p as { text?: unknown }).text === 'string')
          parts.push((p as { text: string }).text);
      }
    }
  }
  return parts.join('\n');
}

/** The guard step of a call, or null when no policy applies to it. */
export async function guardStepOf(
  runtime: GuardRuntime | undefined,
  call: GuardedCall,
): Promise<GuardStep | null> {
  if (!runtime) return null;
  const checks = await runtime.checksFor({
    projectId: call.projectId,
    keyId: call.keyId,
    containerId: call.containerId,
    model: call.request.model,
  });
  return checks ? createGuardStep(runtime, checks, call) : null;
}

function createGuardStep(runtime: GuardRuntime, checks: CallChecks, call: GuardedCall): GuardStep {
  const verdicts: Verdict[] = [];
  /** When each verdict was reached (epoch ms), for the span's events. */
  const times: number[] = [];
  const controller = new AbortController();
  const ctx: CheckContext = {
    ports: runtime.ports,
    payer: { projectId: call.projectId, keyId: call.keyId },
    input: call.request.messages,
    signal: controller.signal,
  };
  let parallel: Promise<GuardBlockedError | null> | null = null;
  let block: GuardBlockedError | null = null;
  let streaming = false;
  let settled: Promise<void> = Promise.resolve();
  const keep = (v: Verdict) => {
    verdicts.push(v);
    times.push(Date.now());
    call.base.guards = verdicts.map((x) => ({
      guard: x.guard,
      stage: x.stage,
      verdict: x.verdict,
      score: x.score,
    }));
  };
  const blockOf = (v: Verdict) => new GuardBlockedError(v.guard, v.policyId, v.stage, v.reason ?? 'blocked');

  async function inputStage(): Promise<void> {
    let text = messagesText(call.request.messages);
    for (const c of checks.input) {
      const v = await runCheck(c, text, ctx);
      keep(v);
      if (v.verdict === 'blocked') throw blockOf(v);
      if (v.verdict === 'redacted' && c.guard?.redact) {
        const redact = c.guard.redact;
        redactDeep(call.request.messages, redact);
        if (call.native) redactDeep(call.native.request, redact);
        if (call.upstreamBody !== undefined) redactDeep(call.upstreamBody, redact);
        text = messagesText(call.request.messages);
      }
    }
  }

  async function parallelStage(text: string, cancel: () => void): Promise<GuardBlockedError | null> {
    for (const c of checks.parallel) {
      const v = await runCheck(c, text, ctx);
      keep(v);
      if (v.verdict === 'blocked') {
        block = blockOf(v);
        // Once the answer streams, the sink ends it; before, the upstream call is cancelled.
        if (!streaming) cancel();
        return block;
      }
    }
    return null;
  }

  async function outputCheck(c: CompiledCheck, text: string) {
    return runCheck(c, text, ctx);
  }

  return {
    async before(cancel) {
      if (checks.input.length) await inputStage();
      if (checks.parallel.length) parallel = parallelStage(messagesText(call.request.messages), cancel);
    },
    failure: (err) => block ?? err,
    watchesStream: checks.output.length > 0 || checks.parallel.length > 0,
    async plain(body, text) {
      const early = parallel ? await parallel : null;
      if (early) return { blocked: early };
      let out = body;
      let answer = text;
      for (const c of checks.output) {
        const v = await outputCheck(c, answer);
        keep(v);
        if (v.verdict === 'blocked') return { blocked: blockOf(v) };
        if (v.verdict === 'redacted' && c.guard?.redact) {
          const redact = c.guard.redact;
          answer = redact(answer);
          const parsed: unknown = JSON.parse(out);
          if (redactDeep(parsed, redact)) out = JSON.stringify(parsed);
        }
      }
      return { body: out, blocked: null };
    },
    sink(inner) {
      streaming = true;
      const sink = guardedSink(inner, {
        checks: checks.output,
        runAsync: outputCheck,
        gate: parallel ? parallel.then((b) => (b ? b.message : null)) : null,
        verdict: keep,
        blocked: (v) => ({ code: 'content_filter', message: blockOf(v).message }),
      });
      settled = sink.settled;
      return sink;
    },
    notes: () =>
      verdicts.map((v, i) => ({
        guard: v.guard,
        stage: v.stage,
        verdict: v.verdict,
        score: v.score,
        at: times[i]!,
      })),
    finish() {
      void Promise.all([settled, parallel]).then(() => {
        controller.abort();
        runtime.record(call.projectId, call.logId, verdicts);
      });
    },
  };
}
