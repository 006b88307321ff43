import { ApiError } from '../shared/errors.js';
import type { CancelSignal } from './cancel.js';
import type { ResolvedModel } from './models/types.js';
import type { ProviderLayer } from './provider-layer.js';
import type { Usage } from './types.js';

export interface EmbeddingsResult {
  vectors: number[][];
  usage: Usage | null;
  /** USD at the model's input price. */
  cost: number;
}

function unreadable(model: ResolvedModel, why: string): ApiError {
  return new ApiError(
    'upstream_unavailable',
    `Model '${model.slug}' answered unreadable embeddings: ${why}`,
    {
      model: model.slug,
    },
  );
}

function vectorsOf(model: ResolvedModel, body: unknown, count: number): number[][] {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length !== count) throw unreadable(model, `expected ${count} vectors`);
  const out: number[][] = [];
  let position = 0;
  for (const entry of data as { index?: unknown; embedding?: unknown }[]) {
    const index = typeof entry.index === 'number' ? entry.index : position;
    position += 1;
    if (!Number.isInteger(index) || index < 0 || index >= count)
      throw unreadable(model, 'an index out of range');
    if (!Array.isArray(entry.embedding) || !entry.embedding.every((x) => typeof x === 'number')) {
      throw unreadable(model, 'a vector that is not numeric');
    }
    out[index] = entry.embedding as number[];
  }
  return out;
}

/**
 * The vectors of `input` from the provider layer's one embeddings call (its retries, hop header, pricing),
 * without fallbacks: another model's vectors are not comparable with the first one's.
 */
export async function embedTexts(
  providers: Pick<ProviderLayer, 'embed'>,
  model: ResolvedModel,
  input: string[],
  signal?: CancelSignal,
): Promise<EmbeddingsResult> {
  const answer = await providers.embed(model, { input }, { signal, fallbacks: [] });
  return { vectors: vectorsOf(model, answer.body, input.length), usage: answer.usage, cost: answer.cost };
}
