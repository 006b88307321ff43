import { isObject, type JsonObject } from '../../../shared/json.js';

/*
 * What a successful Gemini answer is: a response with at least one candidate (a prompt blocked before any
 * candidate is an upstream refusal), or a stream whose first event is such a response.
 */

/** Why a non-streamed Gemini answer is not one (null: it is). */
export function geminiAnswerProblem(body: JsonObject): string | null {
  const { candidates } = body;
  if (!Array.isArray(candidates)) return 'the upstream answered without candidates';
  if (!isObject(candidates[0])) return 'the upstream answered with no candidate';
  return null;
}

/** Why the first event of a Gemini stream does not start an answer (null: it does). */
export function geminiStreamStartProblem(event: JsonObject): string | null {
  return Array.isArray(event.candidates) || isObject(event.usageMetadata)
    ? null
    : 'the upstream stream did not start with a response';
}
