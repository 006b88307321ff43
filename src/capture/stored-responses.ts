import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { dialectNamed } from '../llm/dialects/registry.js';
import { logIdOf, type ResponseFrame, responseIdOf, responseOf } from '../llm/dialects/responses/answer.js';
import type { ChatMessage } from '../llm/types.js';
import { chatAnswer } from '../shared/chat-answer.js';
import { ApiError } from '../shared/errors.js';
import { type JsonObject, parseJson } from '../shared/json.js';
import { findLog, type LogRow, setLogMetadata } from './task-log-store.js';
import type { LogWriter } from './types.js';

/*
 * Stored responses are task logs: a `POST /v1/responses` call recorded with `route: responses` is found
 * again by its id (`resp_X` is the log `log_X`) for retrieval, `input_items` and `previous_response_id`.
 * A response created with `store: false`, or deleted, keeps its task log but is no longer served.
 */

export interface StoredResponse {
  id: string;
  log: LogRow;
  /** The Responses request as the client sent it. */
  request: JsonObject;
  /** The recorded answer in the internal (chat-completion) shape. */
  completion: JsonObject;
  /** The conversation as chat messages, the answer included (for `previous_response_id`). */
  conversation(): ChatMessage[];
  /** The response object as first answered. */
  response(): JsonObject;
}

export interface StoredResponses {
  /** Throws 404 for an id the project has no stored response under. */
  find(projectId: string, responseId: string): Promise<StoredResponse>;
  remove(projectId: string, responseId: string): Promise<void>;
}

function notFound(responseId: string): ApiError {
  return ApiError.notFound('Response', responseId);
}

function stored(responseId: string, log: LogRow): StoredResponse {
  const request = parseJson<JsonObject>(log.request, {});
  const completion = parseJson<JsonObject>(log.response, {});
  return {
    id: responseId,
    log,
    request,
    completion,
    conversation() {
      const input = parseJson<unknown>(log.input, []);
      const messages = (Array.isArray(input) ? input : []) as ChatMessage[];
      // A response's instructions are not carried into the next turn (as in the Responses API).
      const first = messages[0];
      const skip =
        typeof request.instructions === 'string' &&
        first?.role === 'system' &&
        first.content === request.instructions;
      const history = skip ? messages.slice(1) : [...messages];
      const { message } = chatAnswer(completion);
      if (message) {
        const { role: _role, refusal: _refusal, ...answer } = message;
        history.push({ ...answer, role: 'assistant' });
      }
      return history;
    },
    response() {
      const frame: ResponseFrame = {
        id: responseId,
        model: log.model,
        createdAt: Math.floor(Date.parse(log.created_at) / 1000),
        request,
      };
      const response = responseOf(frame, completion) as unknown as JsonObject;
      if (log.status === 'error') {
        const error = parseJson<JsonObject>(log.error, {});
        response.status = 'failed';
        response.error = { code: 'server_error', message: String(error.message ?? 'The call failed') };
      }
      return response;
    },
  };
}

/** A task log of the responses route as its stored response (the caller checked that it is one). */
export function storedResponseOf(log: LogRow): StoredResponse {
  return stored(responseIdOf(log.id), log);
}

export function createStoredResponses(db: Kysely<Database>, logWriter: LogWriter | null): StoredResponses {
  async function load(projectId: string, responseId: string): Promise<LogRow> {
    const logId = logIdOf(responseId);
    if (logId === null) throw notFound(responseId);
    let log = await findLog(db, projectId, logId);
    if (!log && logWriter) {
      // Just answered, perhaps not yet written: the writer batches off the request path.
      await logWriter.flush();
      log = await findLog(db, projectId, logId);
    }
    if (!log) throw notFound(responseId);
    const metadata = parseJson<JsonObject>(log.metadata, {});
    if (!dialectNamed(metadata.route)?.storesAnswers || metadata.store === false) throw notFound(responseId);
    return log;
  }

  return {
    async find(projectId, responseId) {
      return stored(responseId, await load(projectId, responseId));
    },
    async remove(projectId, responseId) {
      const log = await load(projectId, responseId);
      const metadata = { ...parseJson<JsonObject>(log.metadata, {}), store: false, deleted: true };
      if (!(await setLogMetadata(db, projectId, log.id, JSON.stringify(metadata))))
        throw notFound(responseId);
    },
  };
}
