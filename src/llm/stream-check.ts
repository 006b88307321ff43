import type { JsonObject } from '../shared/json.js';
import { DONE, type SseEvent } from './providers/types.js';
import { SseReader } from './sse.js';
import type { BodyConsumer, UpstreamBody, UpstreamResponse } from './upstream-call.js';
import { UpstreamError } from './upstream-errors.js';

/*
 * Streams are checked, not trusted. Before anything reaches the client, a streamed answer must be an
 * event stream whose first events parse (a failure here is an ordinary retryable upstream failure:
 * retried, then the fallbacks, then 503). After that, the stream pump checks every event on the way
 * (`eventProblem`, `readProblem`) and that the stream finishes; a stream that breaks ends with an
 * error event and is recorded as an error.
 */

/** Control bytes other than tab, LF and CR: never in a well-formed event stream of JSON payloads. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

/** A chunk that says the generation finished (OpenAI-compatible servers that omit `[DONE]` still send it). */
export const FINISHED =
  /"finish_reason"\s*:\s*"|"type"\s*:\s*"(message_stop|response\.completed|response\.incomplete|response\.failed)"/;

/** Why one event's data is not a chunk (null: it is one, or the end marker). */
export function eventProblem(data: string): string | null {
  if (data === DONE) return null;
  // Parsed first: JSON refuses every control byte CONTROL looks for but DEL (0x7f), so the costly scan
  // only runs to name why an event failed.
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return CONTROL.test(data)
      ? 'the upstream stream sent control characters'
      : 'the upstream stream sent an event that is not JSON';
  }
  if (data.includes('\x7f')) return 'the upstream stream sent control characters';
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return 'the upstream stream sent an event that is not a JSON object';
  }
  return null;
}

/**
 * The cheap check of a read that passes through unparsed (the pump's fast path): no control bytes, and
 * every `data:` line framed as a JSON object or the end marker. What passes is parsed by the client;
 * the framing check catches the truncated and garbage events seen from broken upstreams.
 */
export function readProblem(text: string): string | null {
  if (CONTROL.test(text)) return 'the upstream stream sent control characters';
  let at = text.indexOf('data:');
  while (at !== -1) {
    const lineEnd = text.indexOf('\n', at);
    const line = text.slice(at + 5, lineEnd === -1 ? undefined : lineEnd).trim();
    if (line !== DONE && !(line.startsWith('{') && line.endsWith('}'))) {
      return 'the upstream stream sent an event that is not JSON';
    }
    at = text.indexOf('\ndata:', at + 5);
    if (at !== -1) at += 1;
  }
  return null;
}

/** What the dialect says of the stream's first event with a payload (keep-alive pings skipped). */
function firstEventError(
  events: SseEvent[],
  check: (event: JsonObject) => UpstreamError | null,
): UpstreamError | null {
  for (const event of events) {
    if (event.data === '' || event.event === 'ping') continue;
    if (event.data === DONE)
      return UpstreamError.invalidAnswer('the upstream stream ended without an answer', null);
    // Every event here parsed as a JSON object (eventProblem).
    const payload = JSON.parse(event.data) as JsonObject;
    if (payload.type === 'ping') continue;
    return check(payload);
  }
  return null;
}

function isEventStream(response: UpstreamResponse): boolean {
  const type = response.headers['content-type'];
  return typeof type === 'string' && type.toLowerCase().includes('text/event-stream');
}

/**
 * The body of a stream whose first events were read and checked: it hands them to its consumer first,
 * then the rest as it comes.
 */
class CheckedBody implements UpstreamBody {
  private consumer: BodyConsumer | null = null;
  private readonly held: Buffer[] = [];
  /** The text of what was read until the start was checked, and whether every event in it was. */
  private seen = '';
  private seenChecked = false;
  private outcome: { failure: Error | null } | null = null;

  constructor(private readonly inner: UpstreamBody) {}

  /** Takes the inner body's reads until a consumer comes; resolves at the first whole event or the end. */
  start(): Promise<{ text: string; ended: boolean; failure: Error | null }> {
    return new Promise((resolve) => {
      let seen = '';
      let settled = false;
      const settle = (ended: boolean, failure: Error | null) => {
        if (settled) return;
        settled = true;
        this.seen = seen;
        resolve({ text: seen, ended, failure });
      };
      this.inner.consume({
        data: (bytes) => {
          if (this.consumer) return this.consumer.data(bytes);
          this.held.push(bytes);
          if (!settled) {
            seen += bytes.toString();
            if (seen.includes('\n\n') || seen.includes('\r\n\r\n')) settle(false, null);
          }
        },
        end: () => {
          if (this.consumer) return this.consumer.end();
          this.outcome = { failure: null };
          settle(true, null);
        },
        error: (err) => {
          if (this.consumer) return this.consumer.error(err);
          this.outcome = { failure: err };
          settle(true, err);
        },
      });
    });
  }

  text(): Promise<string> {
    return Promise.reject(new Error('a checked stream is consumed, not read as text'));
  }

  /** Called once every event of what was read until the start (`text`) passed `eventProblem`. */
  markChecked(): void {
    this.seenChecked = true;
  }

  consume(consumer: BodyConsumer): void {
    if (this.consumer) throw new Error('an upstream body is read once');
    queueMicrotask(() => {
      if (this.held.length > 0) {
        const held = this.held.splice(0);
        // One read, all of it checked (nothing came after the checked text), of whole events only: the
        // pump need not check it again, nor decode it again.
        if (held.length === 1) {
          const bytes = held[0]!;
          const whole =
            this.seenChecked && this.seen.endsWith('\n\n') && bytes.length === Buffer.byteLength(this.seen);
          consumer.data(bytes, whole ? this.seen : undefined);
        } else consumer.data(Buffer.concat(held));
      }
      this.consumer = consumer;
      if (this.outcome?.failure) consumer.error(this.outcome.failure);
      else if (this.outcome) consumer.end();
    });
  }

  pause(): void {
    this.inner.pause();
  }

  resume(): void {
    this.inner.resume();
  }

  destroy(): void {
    this.inner.destroy();
  }

  get destroyed(): boolean {
    return this.inner.destroyed;
  }
}

/**
 * Reads a streamed answer up to its first whole event and checks it; throws a retryable
 * `UpstreamError` (so the call is retried, falls back, or answers 503) when the answer is not an event
 * stream, its first events do not parse, or it ends or fails before finishing. Returns the response
 * with a body that replays what was read.
 */
export async function checkStreamStart(
  response: UpstreamResponse,
  /** The dialect's check of the first event that carries a payload (a non-null error fails the start). */
  firstEvent?: (event: JsonObject) => UpstreamError | null,
): Promise<UpstreamResponse> {
  if (!isEventStream(response)) {
    response.body.destroy();
    const type = String(response.headers['content-type'] ?? 'none');
    throw UpstreamError.retryable(
      `the upstream answered a stream with ${type.split(';')[0]} instead of an event stream`,
    );
  }
  const body = new CheckedBody(response.body);
  const first = await body.start();
  const fail = (reason: string) => {
    body.destroy();
    throw UpstreamError.retryable(reason);
  };
  if (first.failure) fail('the upstream stream failed before its first event');
  const reader = new SseReader();
  const events = reader.pushText(first.text);
  if (first.ended) events.push(...reader.end());
  if (events.length === 0) fail('the upstream stream ended before its first event');
  for (const event of events) {
    const problem = eventProblem(event.data);
    if (problem) fail(problem);
  }
  if (firstEvent) {
    const error = firstEventError(events, firstEvent);
    if (error) {
      body.destroy();
      throw error;
    }
  }
  if (first.ended && !events.some((e) => e.data === DONE || FINISHED.test(e.data))) {
    fail('the upstream stream ended without finishing');
  }
  body.markChecked();
  return { ...response, body };
}
