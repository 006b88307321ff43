import { isObject, type JsonObject } from '../../../shared/json.js';

/*
 * What a successful Responses answer is: a `response` object with its output that did not fail, or a
 * stream that starts with a `response.*` event carrying the response. Anything else the upstream sends
 * with a 2xx is an upstream error.
 */

/** Why a non-streamed Responses answer is not a response with output (null: it is one). */
export function responsesAnswerProblem(body: JsonObject): string | null {
  if (!Array.isArray(body.output)) return 'the upstream answered without a response output';
  if (body.status === 'failed') return 'the upstream answered a failed response';
  return null;
}

/** Why the first event of a Responses stream does not start an answer (null: it does). */
export function responsesStreamStartProblem(event: JsonObject): string | null {
  return typeof event.type === 'string' && event.type.startsWith('response.') && isObject(event.response)
    ? null
    : 'the upstream stream did not start with a response event';
}
