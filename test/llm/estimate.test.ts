import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { inputTokenBound, maxCallCost, maxEmbeddingsCost, outputTokenBound } from '../../src/llm/estimate.js';
import { testDbKind } from '../helpers/databases.js';

/*
 * The reservation before a paid call is a bound, not a guess: at o200k_base's count of the request's
 * text (OpenAI's current tokenizer) the estimate is never below what the provider bills. A count of
 * characters was 9× low for `ꙮ` (one UTF-16 unit, three bytes, three tokens).
 */

const TEXTS: [string, string][] = [
  ['ꙮ × 300', 'ꙮ'.repeat(300)],
  ['emoji', '👩‍👩‍👧‍👦🏳️‍🌈🤷🏽‍♀️'.repeat(40)],
  ['CJK', '評価ゲートウェイの予算は見積もりで制限される。'.repeat(20)],
  ['ASCII', 'The quick brown fox jumps over the lazy dog. '.repeat(20)],
  ['escapes', '\u0000\u0001"\\\n'.repeat(50)],
];

const PRICED = { inputPricePerMtok: 100, outputPricePerMtok: 1, defaultParameters: {} };

// No database: run once, under SQLite.
describe.skipIf(testDbKind() === 'postgres')('the input and output bounds', () => {
  describe.each(TEXTS)('the estimate of %s', (_name, text) => {
    const request = { model: 'm', messages: [{ role: 'user', content: text }], max_tokens: 10 };
    const body = JSON.stringify(request);

    it('bounds the tokenizer’s count of the text and of the request as sent', () => {
      expect(inputTokenBound(request, body)).toBeGreaterThanOrEqual(countTokens(text));
      expect(inputTokenBound(request, body)).toBeGreaterThanOrEqual(countTokens(body));
      // Without the request's text (runs, graders): the request as JSON.
      expect(inputTokenBound(request)).toBeGreaterThanOrEqual(countTokens(body));
    });

    it('reserves at least what the call costs at the o200k count and its output limit', () => {
      const billed = (countTokens(body) * 100 + 10 * 1) / 1e6;
      expect(maxCallCost(PRICED, request, body)).toBeGreaterThanOrEqual(billed);
      expect(maxCallCost(PRICED, request)).toBeGreaterThanOrEqual(billed);
    });

    it('reserves at least what an embeddings call costs', () => {
      const input = [text, text.slice(0, 7)];
      const billed = ((countTokens(input[0]!) + countTokens(input[1]!)) * 100) / 1e6;
      expect(maxEmbeddingsCost(PRICED, { input })).toBeGreaterThanOrEqual(billed);
      expect(
        maxEmbeddingsCost(PRICED, { input }, JSON.stringify({ model: 'e', input })),
      ).toBeGreaterThanOrEqual(billed);
    });
  });

  describe('the output bound', () => {
    it('is the request’s limit, else the model’s default, else 4096, for each choice asked for', () => {
      expect(outputTokenBound({ defaultParameters: {} }, { max_completion_tokens: 50, max_tokens: 9 })).toBe(
        50,
      );
      expect(outputTokenBound({ defaultParameters: {} }, { max_output_tokens: 70 })).toBe(70);
      expect(outputTokenBound({ defaultParameters: { max_tokens: 300 } }, {})).toBe(300);
      expect(outputTokenBound({ defaultParameters: {} }, {})).toBe(4096);
      expect(outputTokenBound({ defaultParameters: {} }, { max_tokens: 10, n: 4 })).toBe(40);
    });

    it('costs nothing on an unpriced model', () => {
      const unpriced = { inputPricePerMtok: null, outputPricePerMtok: null, defaultParameters: {} };
      expect(maxCallCost(unpriced, { input: 'ꙮ'.repeat(300) })).toBe(0);
      expect(maxEmbeddingsCost(unpriced, { input: 'ꙮ' })).toBe(0);
    });
  });
});
