import type { JsonObject } from '../shared/json.js';
import type { NativeProtocol } from '../shared/wire-protocol.js';
import type { ResolvedModel } from './models/types.js';
import type { ChatCompletion } from './providers/types.js';
import type { StreamResult } from './stream-pump.js';
import type { ChatRequest } from './types.js';

/*
 * What a client dialect (chat completions, Responses, Messages) gives the call runner: how it answers
 * from the internal chat-completion answer, and how a call goes through to an upstream that speaks it.
 */

/** Turns chat-completion chunks into a dialect's events, one by one, as they arrive. */
export interface StreamEncoder {
  /** The events before the first chunk (e.g. `response.created`); sent with the first write. */
  start(): string;
  /** The events for one chat-completion chunk (its parsed JSON). */
  chunk(chunk: JsonObject): string;
  /** An error the gateway reports inside the stream. */
  error(code: string, message: string): string;
  /** The closing events, once the stream is over (its outcome in `result`). */
  end(result: StreamResult): string;
}

/** How a route answers in its dialect, from the internal (chat-completion) answer. */
export interface DialectAnswer {
  /** The JSON text of a non-streamed answer. */
  plain(completion: ChatCompletion, model: ResolvedModel): string;
  stream(): StreamEncoder;
}

/**
 * The call in a dialect some upstreams speak natively (a model's `api`): to such a model the request goes
 * as the client wrote it and the answer's bytes come back with only the ids and model name replaced.
 */
export interface NativeCall {
  api: NativeProtocol;
  /** Whether the model's upstream speaks the dialect. */
  accepts(model: ResolvedModel): boolean;
  /** The client's body, carried as the internal request (no messages). */
  request: ChatRequest;
  /** The upstream's answer (JSON text) as the client receives it. */
  plain(bodyText: string): string;
  /** Re-labels the upstream's events as they pass (ids, model). */
  stream(): StreamEncoder;
  /** The recorded answer (a chat completion) from the event stream the client was sent. */
  recorded(sse: string, model: ResolvedModel): ChatCompletion | null;
}
