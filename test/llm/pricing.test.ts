import { describe, expect, it } from 'vitest';
import type { PriceTable } from '../../src/llm/models/prices.js';
import { costOfTokens, pricesOf, tablePricesOf } from '../../src/llm/models/pricing.js';
import { costOf } from '../../src/llm/stream-pump.js';

// Pure functions: no database, so this file runs once, in the SQLite project.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('pricing', () => {
  it('prices tokens per million, rounded to 1e-10, an unknown count or price as nothing', () => {
    expect(costOfTokens({ input: 2.5, output: 10 }, 1_000, 500)).toBe(0.0075);
    expect(costOfTokens({ input: 2.5, output: 10 }, null, 500)).toBe(0.005);
    expect(costOfTokens({ input: 0.15, output: 0.6 }, 1, 1)).toBe(0.00000075);
    expect(costOfTokens({ input: 1e-7, output: 0 }, 1, 0)).toBe(0);
    expect(pricesOf({ inputPricePerMtok: null, outputPricePerMtok: 4 })).toEqual({ input: 0, output: 4 });
  });

  it('gives a gateway call and a reported span of the same model the same cost', () => {
    const model = { inputPricePerMtok: 3, outputPricePerMtok: 15 };
    const usage = { prompt_tokens: 1234, completion_tokens: 567, total_tokens: 1801 };
    const call = costOf(model as Parameters<typeof costOf>[0], usage);
    expect(call).toBe(costOfTokens(pricesOf(model), 1234, 567));
    expect(call).toBe(0.012207);
    expect(costOf(model as Parameters<typeof costOf>[0], null)).toBe(0);
  });

  it("takes an unregistered model's price from the table: the provider's entry, else Anthropic's", () => {
    const entries = {
      'openai/gpt-x': { inputPerMtok: 1, outputPerMtok: 2 },
      'anthropic/claude-x': { inputPerMtok: 3, outputPerMtok: 4 },
      'anthropic/gpt-x': { inputPerMtok: 9, outputPerMtok: 9 },
    } as Record<string, { inputPerMtok: number; outputPerMtok: number }>;
    const table = {
      entries: [],
      find: (provider: string, model: string) => entries[`${provider}/${model}`],
    } as unknown as PriceTable;
    expect(tablePricesOf(table, 'openai', 'gpt-x')).toEqual({ input: 1, output: 2 });
    expect(tablePricesOf(table, 'Anthropic', 'gpt-x')).toEqual({ input: 9, output: 9 });
    expect(tablePricesOf(table, '', 'claude-x')).toEqual({ input: 3, output: 4 });
    expect(tablePricesOf(table, 'openai', 'unknown')).toEqual({ input: 0, output: 0 });
  });

  it("takes a Gemini model's price from the table's gemini entries, whatever the span calls Google", () => {
    const entries = {
      'gemini/gemini-x': { inputPerMtok: 0.3, outputPerMtok: 2.5 },
      'openai/gemini-x': { inputPerMtok: 9, outputPerMtok: 9 },
    } as Record<string, { inputPerMtok: number; outputPerMtok: number }>;
    const table = {
      entries: [],
      find: (provider: string, model: string) => entries[`${provider}/${model}`],
    } as unknown as PriceTable;
    for (const provider of ['gcp.gemini', 'google', 'gcp.vertex_ai', 'Gemini'])
      expect(tablePricesOf(table, provider, 'gemini-x')).toEqual({ input: 0.3, output: 2.5 });
    expect(tablePricesOf(table, 'openai', 'gemini-x')).toEqual({ input: 9, output: 9 });
    expect(tablePricesOf(table, 'someone', 'gemini-y')).toEqual({ input: 0, output: 0 });
  });
});
