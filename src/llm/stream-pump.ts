import { performance } from 'node:perf_hooks';
import type { ErrorBody } from '../shared/errors.js';
import type { CancelSignal } from './cancel.js';
import { costOfTokens, pricesOf } from './models/pricing.js';
import type { ResolvedModel } from './models/types.js';
import {
  type CallContext,
  DONE,
  type ProviderAdapter,
  type StreamTranslator,
  UpstreamStreamError,
} from './providers/types.js';
import { SseReader } from './sse.js';
import { eventProblem, FINISHED, readProblem } from './stream-check.js';
import type { Usage } from './types.js';
import type { UpstreamResponse } from './upstream-call.js';
import { transportFailure } from './upstream-errors.js';

/*
 * The stream pump: a started upstream stream read, translated where the provider needs it, and sent
 * on as server-sent-event frames with back-pressure; its usage, cost and outcome kept for the recorder.
 */

export interface StreamResult {
  /**
   * The event stream as the client received it, when the stream was collected ('' otherwise):
   * `assembleCompletion(ssePayloads(sse), …)` makes it one completion.
   */
  sse: string;
  usage: Usage | null;
  cost: number;
  latencyMs: number;
  servedBy: string;
  attempts: number;
  /** Set when the stream did not end normally (the client saw an error event, or went away). */
  error: ErrorBody | null;
}

/** Where `pipe` sends a stream's frames. */
export interface FrameSink {
  /** False when the sink is full: reading pauses until `drained()` resolves. */
  write(frames: string | Buffer): boolean;
  drained(): Promise<void>;
  /** Called once, with the last frames (null when none are left) and the outcome: the stream is over. */
  end(frames: string | Buffer | null, result: StreamResult): void;
}

/**
 * A started stream. `pipe` sends its server-sent-event frames (`data: …\n\n`, `[DONE]` last) as the
 * upstream delivers them, as text or as the upstream's own bytes when they needed no change. It never
 * rejects: a failure after the start is sent as an error event and ends the stream.
 */
export interface ChatStream {
  readonly servedBy: string;
  /** The model name the upstream that answered was given. */
  readonly upstreamModel: string;
  /** Resolves with the stream's outcome (what `result()` gives) once it is over. */
  pipe(sink: FrameSink): Promise<StreamResult>;
  result(): StreamResult;
}

/** USD for the usage at the model's prices (unknown prices count as 0), rounded to 1e-10. */
export function costOf(model: ResolvedModel, usage: Usage | null): number {
  return usage ? costOfTokens(pricesOf(model), usage.prompt_tokens, usage.completion_tokens) : 0;
}

function errorFrame(code: string, message: string): string {
  return `data: ${JSON.stringify({ error: { code, message } })}\n\n`;
}

export interface Started {
  model: ResolvedModel;
  adapter: ProviderAdapter;
  ctx: CallContext;
  response: UpstreamResponse;
}

/** Reads with these need the full parser (line ends to normalise, named events); plain searches, not a regex. */
function notPlain(text: string): boolean {
  return text.includes('\r') || text.includes('\nevent:') || text.startsWith('event:');
}

/** A `"model": "…"` member of an event's JSON (a raw quote is always a string's delimiter, never inside one). */
const MODEL_MEMBER = /"model":\s*"(?:[^"\\]|\\.)*"/g;

export class GatewayStream implements ChatStream {
  /**
   * A registered model's events name it as the caller did (as its non-streamed answers do): the member
   * that replaces the upstream's `"model"`, or null when the events go as the upstream wrote them.
   */
  private readonly modelMember: string | null;
  /** The event-stream text the client was sent, when collecting. */
  private readonly sent: string[] = [];
  private readonly translator: StreamTranslator;
  private error: StreamResult['error'] = null;
  /** What the translator threw (an upstream error event): the stream ends after the frames before it. */
  private broken: unknown = null;
  /** Whether an event said the generation finished (the end marker, or a finish reason). */
  private finished = false;
  private endedAt = 0;

  constructor(
    private readonly started: Started,
    private readonly attempts: number,
    private readonly startedAt: number,
    private readonly collect: boolean,
    private readonly signal: CancelSignal | undefined,
  ) {
    this.translator = started.adapter.streamTranslator(started.ctx);
    const { model } = started;
    // A native answer (Responses, Messages) is relabelled by the route's encoder.
    this.modelMember =
      model.modelId !== null && !started.adapter.nativeAnswer
        ? `"model":${JSON.stringify(model.slug)}`
        : null;
  }

  get servedBy(): string {
    return this.started.model.slug;
  }

  get upstreamModel(): string {
    return this.started.model.upstreamModel;
  }

  /**
   * The frames for some events, or null when every event passes unchanged (the bytes can go as read).
   * An event the translator refuses ends them: `broken` is set, and only the frames before it are given.
   */
  private frames(events: ReturnType<SseReader['push']>, allowRaw: boolean): string | null {
    // Frames are only written out once some event changed (until then the read's own bytes will do).
    let out: string | null = allowRaw ? null : '';
    for (const [i, event] of events.entries()) {
      let payloads: string[] | null = null;
      const problem = eventProblem(event.data);
      if (problem) this.broken = new UpstreamStreamError('upstream_bad_stream', problem);
      else {
        if (!this.finished && (event.data === DONE || FINISHED.test(event.data))) this.finished = true;
        try {
          payloads = this.translator.event(event);
        } catch (err) {
          this.broken = err;
        }
      }
      const changed =
        payloads === null || payloads.length !== 1 || payloads[0] !== event.data || event.event !== null;
      if (out === null && changed) {
        out = '';
        for (let j = 0; j < i; j++) out += `data: ${events[j]!.data}\n\n`;
      }
      if (payloads === null) break;
      if (out !== null) for (const payload of payloads) out += `data: ${payload}\n\n`;
    }
    return out;
  }

  /** What goes to the client (renamed where the model is), kept when the stream is collected. */
  private keep(out: string): string;
  private keep(out: string | null): string | null;
  private keep(out: string | Buffer | null, text?: string): string | Buffer | null;
  private keep(out: string | Buffer | null, text?: string): string | Buffer | null {
    if (out === null) return null;
    if (this.modelMember !== null) {
      const before = text ?? out.toString();
      const renamed = before.replace(MODEL_MEMBER, this.modelMember);
      if (this.collect) this.sent.push(renamed);
      return renamed;
    }
    if (this.collect) this.sent.push(text ?? out.toString());
    return out;
  }

  /**
   * The pass-through fast path, for a read of whole plain events: the events before the first that
   * may carry usage or the end marker go as read, unparsed; only the rest are parsed. Undefined when
   * the read is not such a read.
   */
  private quick(reader: SseReader, bytes: Buffer, checked?: string): string | Buffer | null | undefined {
    const text = checked ?? bytes.toString();
    // A read with something wrong in it takes the slow path, which finds the event and ends there.
    if (!text.endsWith('\n\n') || notPlain(text)) return undefined;
    if (checked === undefined && readProblem(text) !== null) return undefined;
    if (!this.finished && FINISHED.test(text)) this.finished = true;
    const special = text.search(this.translator.passThroughUnless!);
    if (special === -1) return this.keep(bytes, text);
    // The event that holds it starts after the blank line before it (or at the start of the read).
    const blank = text.lastIndexOf('\n\n', special);
    const start = blank === -1 ? 0 : blank + 2;
    const rest = this.frames(reader.pushText(start > 0 ? text.slice(start) : text), true);
    if (rest === null) return this.keep(bytes, text);
    const out = text.slice(0, start) + rest;
    return this.keep(out === '' ? null : out);
  }

  /** What one upstream read sends on: the bytes as read when no event in them changes, else frames (null: nothing). */
  private take(reader: SseReader, bytes: Buffer, checked?: string): string | Buffer | null {
    if (this.translator.passThroughUnless && reader.idle) {
      const quick = this.quick(reader, bytes, checked);
      if (quick !== undefined) return quick;
    }
    // Upstream reads usually hold whole events: when nothing in them changes, send the bytes on.
    const aligned = reader.idle;
    const events = reader.push(bytes);
    const out = this.frames(events, aligned && reader.idle && events.length > 0);
    if (out === null) return this.keep(bytes);
    return this.keep(out === '' ? null : out);
  }

  /** The frames after the upstream's last byte: a last event without its blank line, and the end marker if missing. */
  private tail(reader: SseReader): string {
    const out = this.frames(reader.end(), false) ?? '';
    // An upstream that stopped without finishing (a truncated stream) failed: the client is told so.
    if (!this.translator.done && !this.finished && !this.broken) {
      this.broken = new UpstreamStreamError(
        'upstream_truncated',
        'The upstream stream ended before the generation finished',
      );
    }
    // A stream that ended cleanly but without its end marker is ended for the client.
    return this.keep(this.translator.done || this.broken ? out : `${out}data: ${DONE}\n\n`);
  }

  /** Records why the stream broke; the error event for the client, or null when the client is gone. */
  private fail(err: unknown): string | null {
    if (this.signal?.aborted) this.error = { code: 'client_disconnected', message: 'The client went away' };
    else if (err instanceof UpstreamStreamError) this.error = { code: err.code, message: err.message };
    else {
      this.error = {
        code: 'upstream_unavailable',
        message: `The upstream stream failed: ${transportFailure(err, undefined).message}`,
      };
    }
    return this.keep(this.signal?.aborted ? null : errorFrame(this.error.code, this.error.message));
  }

  /** The upstream is done with: its body is abandoned unless it ended (a stream that broke on an event). */
  private release(): void {
    this.endedAt = performance.now();
    this.started.response.body.destroy();
  }

  pipe(sink: FrameSink): Promise<StreamResult> {
    const body = this.started.response.body;
    const reader = new SseReader();
    // Once the end marker was read, what follows is held so that the end goes out in one write.
    let held: string | Buffer | null = null;
    const hold = (out: string | Buffer) => {
      held = held === null ? out : Buffer.concat([Buffer.from(held), Buffer.from(out)]);
    };
    return new Promise<StreamResult>((resolve) => {
      let settled = false;
      const finish = (last: string | null) => {
        if (settled) return;
        settled = true;
        this.release();
        if (last !== null && last !== '') hold(last);
        // Taken once: it joins the collected event stream.
        const result = this.result();
        sink.end(held, result);
        resolve(result);
      };
      body.consume({
        // The body hands over everything one upstream read brought: it goes out in one write.
        data: (bytes, checked) => {
          const out = this.take(reader, bytes, checked);
          if (this.broken) {
            // The frames before the refused event, then the error event, in the last write.
            if (out !== null) hold(out);
            finish(this.fail(this.broken));
          } else if (out === null) {
            return;
          } else if (this.translator.done) hold(out);
          else if (!sink.write(out)) {
            body.pause();
            void sink.drained().then(() => body.resume());
          }
        },
        end: () => {
          const tail = this.tail(reader);
          finish(this.broken ? `${tail}${this.fail(this.broken) ?? ''}` : tail);
        },
        error: (err) => finish(this.fail(err)),
      });
    });
  }

  result(): StreamResult {
    const { model } = this.started;
    const usage = this.translator.usage;
    return {
      sse: this.sent.join(''),
      usage,
      cost: costOf(model, usage),
      latencyMs: (this.endedAt || performance.now()) - this.startedAt,
      servedBy: model.slug,
      attempts: this.attempts,
      error: this.error,
    };
  }
}
