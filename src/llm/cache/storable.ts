import { isObject, type JsonObject } from '../../shared/json.js';
import { ANSWER_RULES } from '../dialects/registry.js';
import type { EntryKind } from './key.js';

/**
 * Which answers the cache may keep: only what a successful call answers. A 200 that carries an error
 * object, an empty object, no choices, or a stream that never said its generation finished is an upstream
 * failure, whatever its status: kept, it would be replayed for the whole TTL after the upstream recovered.
 */

/**
 * Whether a non-streamed answer of this kind is a success worth keeping: what the provider layer accepts
 * as an answer of its dialect (its dialect's `answerRules`), and no error member beside it.
 */
export function storableAnswer(kind: EntryKind, body: JsonObject): boolean {
  if (body.error !== undefined && body.error !== null) return false;
  return ANSWER_RULES[kind].answerProblem(body) === null;
}

/**
 * Whether a streamed chat answer (its event payloads, the end marker left out) is a success worth
 * keeping: no error event, at least one chunk with choices, and a finish reason (it ended properly).
 */
export function storableStream(payloads: readonly string[]): boolean {
  let chunks = 0;
  let finished = false;
  for (const payload of payloads) {
    let value: unknown;
    try {
      value = JSON.parse(payload);
    } catch {
      return false;
    }
    if (!isObject(value) || (value.error !== undefined && value.error !== null)) return false;
    if (!Array.isArray(value.choices)) continue;
    for (const choice of value.choices) {
      if (!isObject(choice)) return false;
      chunks += 1;
      if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') finished = true;
    }
  }
  return chunks > 0 && finished;
}
