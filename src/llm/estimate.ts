import { usd } from '../shared/numbers.js';
import type { ResolvedModel } from './models/types.js';

/**
 * The most a model call can cost, reserved against the budgets before it is made (see `paidCall`). A
 * reservation below what the call then costs lets concurrent calls spend past a budget, so every figure
 * here is an upper bound, never a guess:
 * - input: the UTF-8 bytes of the request's text. The byte-level BPE tokenizers of OpenAI's and
 *   Anthropic's models (and SentencePiece with byte fallback) never make a token of less than one byte,
 *   and the request's JSON carries more bytes than the chat template adds tokens. A character count is
 *   no bound: `ꙮ` is one UTF-16 unit, three bytes and three o200k tokens.
 * - output: the request's own limit, else the model's default, else DEFAULT_OUTPUT_TOKENS_ESTIMATE;
 *   times the choices asked for (`n`).
 * Counting bytes costs about as much as copying the text once; a tokenizer would be tighter on
 * ASCII (about 4 bytes a token) but costs far more per call on the gateway's path, and its count is a
 * bound only for the models that use that very tokenizer.
 */

/** The output tokens assumed when neither the request nor the model's defaults bound them. */
export const DEFAULT_OUTPUT_TOKENS_ESTIMATE = 4096;

/** At most this many input tokens: the text's UTF-8 bytes (the request as JSON when no text is given). */
export function inputTokenBound(request: Record<string, unknown>, requestText?: string | null): number {
  return Buffer.byteLength(requestText ?? JSON.stringify(request), 'utf8');
}

function bound(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null;
}

/** At most this many output tokens: the request's limit (or the model's default) for each choice. */
export function outputTokenBound(
  model: Pick<ResolvedModel, 'defaultParameters'>,
  request: Record<string, unknown>,
): number {
  const defaults = model.defaultParameters;
  const perChoice =
    bound(request.max_completion_tokens) ??
    bound(request.max_tokens) ??
    bound(request.max_output_tokens) ??
    bound(defaults.max_completion_tokens) ??
    bound(defaults.max_tokens) ??
    DEFAULT_OUTPUT_TOKENS_ESTIMATE;
  return perChoice * Math.ceil(bound(request.n) ?? 1);
}

/** A call's largest cost (USD): its input bound at the input price, its output bound at the output price. */
export function maxCallCost(
  model: Pick<ResolvedModel, 'inputPricePerMtok' | 'outputPricePerMtok' | 'defaultParameters'>,
  request: Record<string, unknown>,
  requestText?: string | null,
): number {
  const input = model.inputPricePerMtok ?? 0;
  const output = model.outputPricePerMtok ?? 0;
  if (input <= 0 && output <= 0) return 0;
  const tokensIn = input > 0 ? inputTokenBound(request, requestText) : 0;
  return usd((tokensIn * input + outputTokenBound(model, request) * output) / 1_000_000);
}

/** The embeddings call's largest cost (USD): its input bound at the input price. */
export function maxEmbeddingsCost(
  model: Pick<ResolvedModel, 'inputPricePerMtok'>,
  request: Record<string, unknown>,
  requestText?: string | null,
): number {
  const input = model.inputPricePerMtok ?? 0;
  if (input <= 0) return 0;
  return usd((inputTokenBound(request, requestText) * input) / 1_000_000);
}
