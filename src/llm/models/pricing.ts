import { usd } from '../../shared/numbers.js';
import type { FrontierProvider, PriceTable } from './prices.js';
import type { ResolvedModel } from './types.js';

/**
 * What a call costs: one rule for every call, the gateway's and the runs' (priced at the registered or
 * frontier model's prices) and the calls that applications report as spans (priced at the model they name,
 * or at the bundled table's price of that name when the project has no such model).
 */

/** USD per million tokens; an unknown price counts as 0. */
export interface TokenPrices {
  input: number;
  output: number;
}

export function pricesOf(
  model: Pick<ResolvedModel, 'inputPricePerMtok' | 'outputPricePerMtok'>,
): TokenPrices {
  return { input: model.inputPricePerMtok ?? 0, output: model.outputPricePerMtok ?? 0 };
}

/** The table's provider a span's provider name means (`gcp.gemini`, `google`, `vertex_ai`: Gemini). */
function tableProvider(provider: string): FrontierProvider {
  const name = provider.toLowerCase();
  if (name.includes('anthropic')) return 'anthropic';
  if (/gemini|google|vertex/.test(name)) return 'gemini';
  return 'openai';
}

/**
 * The bundled table's prices of a model name the project has not registered: the named provider's
 * entry (Anthropic or Gemini when the provider says so, else OpenAI's), else Anthropic's or Gemini's
 * entry of the same name.
 */
export function tablePricesOf(table: PriceTable, provider: string, name: string): TokenPrices {
  const entry =
    table.find(tableProvider(provider), name) ?? table.find('anthropic', name) ?? table.find('gemini', name);
  return { input: entry?.inputPerMtok ?? 0, output: entry?.outputPerMtok ?? 0 };
}

/** USD for the tokens at the prices, rounded to 1e-10; an unknown count costs nothing. */
export function costOfTokens(prices: TokenPrices, input: number | null, output: number | null): number {
  return usd(((input ?? 0) * prices.input + (output ?? 0) * prices.output) / 1_000_000);
}
