import type { JsonObject } from '../../../shared/json.js';

/** Why an embeddings answer is not a list of embeddings (null: it is one). */
export function embeddingsAnswerProblem(body: JsonObject): string | null {
  return Array.isArray(body.data) ? null : 'the upstream answered without embeddings';
}

/** Embeddings are never streamed: any first event is out of place. */
export function embeddingsStreamStartProblem(): string | null {
  return 'the upstream streamed an embeddings answer';
}
