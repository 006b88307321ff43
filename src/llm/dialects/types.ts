import type { ApiError } from '../../shared/errors.js';
import type { JsonObject } from '../../shared/json.js';
import type { WireProtocol } from '../../shared/wire-protocol.js';
import type { ProviderAdapter } from '../providers/types.js';

/*
 * One wire format as a whole: its name, its client routes and the operation its calls' spans name, what a
 * successful answer is, how its errors read and where its key travels, how a call in it reaches an upstream
 * that speaks it natively, and what its recorded calls mean to the rest of the service (sessions, stored
 * answers, the cache). Each dialect is one such object in `dialects/<name>/index.ts`; the registry lists
 * them and every table of dialects is derived from it.
 */

/** One dialect's definition of a successful answer (each `null` when the answer is one). */
export interface AnswerRules {
  /** Why a non-streamed answer (parsed JSON, as the upstream sent it) is not a successful one. */
  answerProblem(body: JsonObject): string | null;
  /** Why the first event of a stream does not start an answer. */
  streamStartProblem(event: JsonObject): string | null;
}

/** How a dialect's errors read and where its SDKs send the key: what the HTTP edge needs of it. */
export interface DialectEdge {
  /** The error as the dialect's SDKs read it (already a 400 for a validation failure). */
  errorBody(e: ApiError): unknown;
  /** A header that carries the key when no Authorization header came (e.g. Anthropic's `x-api-key`). */
  readonly credentialHeader: string | null;
}

/** The GenAI operation (`gen_ai.operation.name`) of a dialect's calls. */
export type GenAiOperation = 'chat' | 'embeddings';

/** The earlier call or conversation a request says it continues (read from its body as the client sent it). */
export interface Continuation {
  /** The task log of the call it continues. */
  previousLog: string | null;
  /** The client's conversation id. */
  conversation: string | null;
}

/** A call in a dialect that some upstreams speak natively, and how it reaches them. */
export interface NativeUpstream {
  /** The adapter that carries the call as it came. */
  adapter: ProviderAdapter;
  /** Whether the adapter calls a path of its own (not the model's provider's), so it keeps its own targets. */
  ownPath: boolean;
}

/**
 * A wire format. `codec` holds its own request decoding and answer encoding (their signatures differ from
 * dialect to dialect: the routes that serve it call them by name).
 */
export interface WireDialect<Name extends WireProtocol = WireProtocol, Codec extends object = object>
  extends DialectEdge {
  readonly name: Name;
  readonly codec: Codec;
  /**
   * Its client routes: the call's path (and other paths it is served at too), and the prefix under which
   * every error is written in its shape.
   */
  readonly routes: { readonly call: string; readonly also?: readonly string[]; readonly prefix: string };
  /** The GenAI operation its calls' spans carry. */
  readonly operation: GenAiOperation;
  readonly answerRules: AnswerRules;
  /** How a call in it goes to an upstream that speaks it (null: always translated to the internal call). */
  readonly native: NativeUpstream | null;
  /**
   * Whether its requests and answers are the internal call's own shape (chat completions): the model's
   * default parameters apply to its cache key, its answers carry the completion text, and its task logs
   * need no separate input (the request already is it).
   */
  readonly internal: boolean;
  /** Whether its calls are conversations that join sessions (embeddings are not). */
  readonly conversational: boolean;
  /** Whether its recorded calls can be read back as stored answers of its own kind (Responses' `GET`). */
  readonly storesAnswers: boolean;
  /** Whether an upstream speaking it natively counts a request's tokens. */
  readonly countsTokens: boolean;
  /** The earlier call or conversation a request (its text, as recorded) continues; null: none. */
  continuation(requestText: string): Continuation | null;
}

/** The continuation of a dialect whose requests never name an earlier call. */
export const NO_CONTINUATION = (): Continuation | null => null;
