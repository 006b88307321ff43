import { isObject, type JsonObject } from '../../../shared/json.js';

/*
 * What a successful chat-completion answer is: a completion with at least one choice carrying a
 * message, or a stream whose first event is a chunk (its `choices` an array). Anything else the
 * upstream sends with a 2xx (`{"error":…}`, `{}`, `choices: []`, a stream of an error event or a bare
 * `[DONE]`) is an upstream error.
 */

/** Why a non-streamed chat answer is not a completion (null: it is one). */
export function chatAnswerProblem(body: JsonObject): string | null {
  const { choices } = body;
  if (!Array.isArray(choices)) return 'the upstream answered without choices';
  const first: unknown = choices[0];
  if (first === undefined) return 'the upstream answered with no choice';
  if (!isObject(first) || !isObject(first.message)) return 'the upstream answered a choice without a message';
  return null;
}

/** Why the first event of a chat stream does not start an answer (null: it does). */
export function chatStreamStartProblem(event: JsonObject): string | null {
  return Array.isArray(event.choices) ? null : 'the upstream stream did not start with a completion chunk';
}
