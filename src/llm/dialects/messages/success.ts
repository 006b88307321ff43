import { isObject, type JsonObject } from '../../../shared/json.js';

/*
 * What a successful Messages answer is: a `message` with its content and why it stopped, or a stream
 * that starts with `message_start` (and, as the stream pump checks, ends with `message_stop`). Anything
 * else the upstream sends with a 2xx is an upstream error.
 */

/** Why a non-streamed Messages answer is not a message that stopped (null: it is one). */
export function messagesAnswerProblem(body: JsonObject): string | null {
  if (body.type !== 'message') return 'the upstream answered without a message';
  if (!Array.isArray(body.content)) return 'the upstream answered a message without content';
  if (typeof body.stop_reason !== 'string') return 'the upstream answered a message that did not stop';
  return null;
}

/** Why the first event of a Messages stream does not start an answer (null: it does). */
export function messagesStreamStartProblem(event: JsonObject): string | null {
  return event.type === 'message_start' && isObject(event.message)
    ? null
    : 'the upstream stream did not start with message_start';
}
