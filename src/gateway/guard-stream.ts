import type { CompiledCheck } from '../guards/runtime.js';
import { checkNow, type Verdict } from '../guards/verdict.js';
import { DONE } from '../llm/providers/types.js';
import { SseReader } from '../llm/sse.js';
import type { FrameSink, StreamResult } from '../llm/stream-pump.js';
import { isObject } from '../shared/json.js';

/*
 * Output guards on a streamed answer, between the stream pump and the client's encoder (frames in the
 * chat-completion shape). `incremental`: each write's text is checked (with the tail of what came before,
 * so that a match across chunks is found) before it is forwarded; a block sends one error event and ends
 * the stream. `hold`: the frames are kept until the answer is complete, checked, then released, redacted or
 * replaced by the error event. Either way the client gets a well-formed stream.
 */

/** How much of the text already checked is checked again with new text (a finding spanning chunks). */
const OVERLAP = 1024;
/** The most a held stream keeps: past it the held checks fail (open: released as it is; closed: blocked). */
export const MAX_HOLD_CHARS = 4_000_000;

export interface StreamGuardHooks {
  checks: CompiledCheck[];
  /** Async checks of the complete text (evaluators), in order; null when there are none. */
  runAsync(c: CompiledCheck, text: string): Promise<Verdict>;
  /** Waits for the parallel checks; resolves to the block's message when one blocked. */
  gate: Promise<string | null> | null;
  verdict(v: Verdict): void;
  /** The block's error event's text (code and message). */
  blocked(v: Verdict): { code: string; message: string };
}

/** The text a chat-completion chunk adds (its first choice's content delta). */
function deltaOf(data: string): { parsed: Record<string, unknown> | null; text: string } {
  if (data === DONE) return { parsed: null, text: '' };
  try {
    const parsed: unknown = JSON.parse(data);
    if (!isObject(parsed)) return { parsed: null, text: '' };
    const choice = Array.isArray(parsed.choices) ? parsed.choices[0] : undefined;
    const content = isObject(choice) && isObject(choice.delta) ? choice.delta.content : undefined;
    return { parsed, text: typeof content === 'string' ? content : '' };
  } catch {
    return { parsed: null, text: '' };
  }
}

const errorFrame = (e: { code: string; message: string }) =>
  `data: ${JSON.stringify({ error: { ...e, type: 'invalid_request_error', param: null } })}\n\n`;

/** Held frames again, the first content delta carrying the whole (redacted) text and the others none. */
function rewritten(events: string[], text: string): string {
  let out = '';
  let first = true;
  for (const data of events) {
    const { parsed } = deltaOf(data);
    const choice = parsed && Array.isArray(parsed.choices) ? parsed.choices[0] : undefined;
    if (parsed && isObject(choice) && isObject(choice.delta) && typeof choice.delta.content === 'string') {
      if (first) choice.delta.content = text;
      else delete choice.delta.content;
      first = false;
      out += `data: ${JSON.stringify(parsed)}\n\n`;
    } else out += `data: ${data}\n\n`;
  }
  return out;
}

type CheckingSink = FrameSink & { settled: Promise<void>; block(e: { code: string; message: string }): void };

/** The output checks of a stream, held or incremental; `gate` (the parallel checks) opens it first. */
export function guardedSink(
  inner: FrameSink,
  hooks: StreamGuardHooks,
): FrameSink & { settled: Promise<void> } {
  const core = checkingSink(inner, hooks);
  return hooks.gate ? gatedSink(core, hooks.gate) : core;
}

/**
 * Holds every frame until the parallel checks are done (the pump waits on `drained`): a block among them
 * ends the stream with its error event before any of the answer went out.
 */
function gatedSink(core: CheckingSink, gate: Promise<string | null>): FrameSink & { settled: Promise<void> } {
  let open = false;
  let queued: (string | Buffer)[] = [];
  const opened = gate.then((message) => {
    open = true;
    if (message !== null) core.block({ code: 'content_filter', message });
    const waiting = queued;
    queued = [];
    let ok = true;
    for (const f of waiting) ok = core.write(f) && ok;
    return ok;
  });
  return {
    settled: core.settled,
    write(frames) {
      if (open) return core.write(frames);
      queued.push(frames);
      return false;
    },
    async drained() {
      if (!open && (await opened)) return;
      return core.drained();
    },
    end(frames, result) {
      if (open) core.end(frames, result);
      else void opened.then(() => core.end(frames, result));
    },
  };
}

function checkingSink(inner: FrameSink, hooks: StreamGuardHooks): CheckingSink {
  const { checks } = hooks;
  const hold = checks.some(
    (c) => c.check.streaming === 'hold' || c.check.action === 'redact' || c.guard === null,
  );
  const reader = new SseReader();
  const events: string[] = [];
  let text = '';
  let checkedTo = 0;
  let held = '';
  let blockedBy: { code: string; message: string } | null = null;
  let overflow = false;
  const flagged = new Map<CompiledCheck, Verdict>();
  let settle: () => void = () => {};
  const settled = new Promise<void>((resolve) => {
    settle = resolve;
  });

  const block = (e: { code: string; message: string }) => {
    if (blockedBy) return true;
    blockedBy = e;
    held = '';
    return inner.write(errorFrame(e));
  };

  /** Incremental checks on the new text (with an overlap); true when one blocked. */
  const checkNew = (): boolean => {
    const window = text.slice(Math.max(0, checkedTo - OVERLAP));
    checkedTo = text.length;
    for (const c of checks) {
      if (flagged.has(c)) continue;
      const v = checkNow(c, window);
      if (v.verdict === 'passed') continue;
      if (v.verdict === 'blocked') {
        hooks.verdict(v);
        block(hooks.blocked(v));
        return true;
      }
      flagged.set(c, v);
    }
    return false;
  };

  /** Too much to hold: the held checks fail, open or closed as each says. */
  const overflowed = (): boolean => {
    overflow = true;
    const closed = checks.find((c) => c.check.on_error === 'closed');
    if (closed) {
      return block({
        code: 'content_filter',
        message: `Blocked by guard '${closed.check.name}': the answer is over ${MAX_HOLD_CHARS} characters to hold`,
      });
    }
    const out = held;
    held = '';
    return inner.write(out);
  };

  const take = (frames: string | Buffer): boolean => {
    if (blockedBy) return true;
    const str = typeof frames === 'string' ? frames : frames.toString('utf8');
    for (const { data } of reader.pushText(str)) {
      if (hold) events.push(data);
      text += deltaOf(data).text;
    }
    if (hold && !overflow) {
      held += str;
      return held.length > MAX_HOLD_CHARS ? overflowed() : true;
    }
    if (!hold && checkNew()) return true;
    return inner.write(str);
  };

  async function finishHeld(result: StreamResult): Promise<void> {
    let body = text;
    let redacted = false;
    for (const c of checks) {
      const v = c.guard ? checkNow(c, body) : await hooks.runAsync(c, body);
      hooks.verdict(v);
      if (v.verdict === 'blocked') {
        const e = hooks.blocked(v);
        inner.end(errorFrame(e), { ...result, error: e });
        return;
      }
      if (v.verdict === 'redacted' && c.guard?.redact) {
        body = c.guard.redact(body);
        redacted = true;
      }
    }
    const out = redacted ? rewritten(events, body) : held;
    inner.end(out === '' ? null : out, result);
  }

  return {
    settled,
    block,
    write: take,
    drained: () => inner.drained(),
    end(frames, result) {
      if (frames !== null) take(frames);
      if (blockedBy) {
        for (const v of flagged.values()) hooks.verdict(v);
        inner.end(null, { ...result, error: blockedBy });
        settle();
        return;
      }
      if (hold && !overflow) {
        finishHeld(result).then(settle, (err: unknown) => {
          inner.end(errorFrame({ code: 'content_filter', message: `guard failed: ${String(err)}` }), result);
          settle();
        });
        return;
      }
      for (const c of checks)
        hooks.verdict(flagged.get(c) ?? checkNow(c, text.slice(Math.max(0, checkedTo - OVERLAP))));
      inner.end(null, result);
      settle();
    },
  };
}
