import fs from 'node:fs';
import { packagePath } from '../../shared/package-root.js';

/** The frontier providers, each the operator enables with its key and the price table names. */
export const FRONTIER_PROVIDERS = ['openai', 'anthropic', 'gemini'] as const;

export type FrontierProvider = (typeof FRONTIER_PROVIDERS)[number];

/** One dated price of the bundled table (data/prices.json). */
export interface PriceEntry {
  provider: FrontierProvider;
  model: string;
  aliases: string[];
  inputPerMtok: number;
  outputPerMtok: number;
  contextWindow: number | null;
  /** The day the price was read (YYYY-MM-DD). */
  asOf: string;
  source: string;
}

export interface PriceTable {
  entries: PriceEntry[];
  /** The entry of a provider's model name or alias. */
  find(provider: FrontierProvider, model: string): PriceEntry | undefined;
}

// src/llm/models and dist/llm/models both sit three levels below the package root.
const BUNDLED = packagePath('data', 'prices.json');

function fail(file: string, what: string): never {
  throw new Error(`price table ${file}: ${what}`);
}

function parseEntry(file: string, raw: unknown, i: number): PriceEntry {
  if (typeof raw !== 'object' || raw === null) fail(file, `models[${i}] is not an object`);
  const r = raw as Record<string, unknown>;
  const str = (k: string) => {
    const v = r[k];
    if (typeof v !== 'string' || v === '') fail(file, `models[${i}].${k} must be a non-empty string`);
    return v;
  };
  const price = (k: string) => {
    const v = r[k];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      fail(file, `models[${i}].${k} must be a number >= 0`);
    return v;
  };
  const provider = str('provider');
  if (!(FRONTIER_PROVIDERS as readonly string[]).includes(provider))
    fail(file, `models[${i}].provider must be one of ${FRONTIER_PROVIDERS.join(', ')}`);
  const aliases = r.aliases ?? [];
  if (!Array.isArray(aliases) || aliases.some((a) => typeof a !== 'string'))
    fail(file, `models[${i}].aliases must be an array of strings`);
  const asOf = str('as_of');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(asOf)) fail(file, `models[${i}].as_of must be a YYYY-MM-DD date`);
  const context = r.context_window;
  return {
    provider: provider as FrontierProvider,
    model: str('model'),
    aliases: aliases as string[],
    inputPerMtok: price('input_usd_per_mtok'),
    outputPerMtok: price('output_usd_per_mtok'),
    contextWindow: typeof context === 'number' && Number.isInteger(context) && context > 0 ? context : null,
    asOf,
    source: str('source'),
  };
}

function load(file: string): PriceTable {
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    fail(file, (err as Error).message);
  }
  const models = (doc as { models?: unknown } | null)?.models;
  if (!Array.isArray(models)) fail(file, 'expected {"models": [...]}');
  const entries = models.map((m, i) => parseEntry(file, m, i));
  const index = new Map<string, PriceEntry>();
  for (const e of entries) {
    for (const name of [e.model, ...e.aliases]) index.set(`${e.provider}/${name}`, e);
  }
  return { entries, find: (provider, model) => index.get(`${provider}/${model}`) };
}

/**
 * Reads the price table (`file` replaces the bundled one); throws on a file that cannot be used. The
 * server reads it once, in `createServices`, and hands it to model resolution (`ModelContext.prices`).
 */
export function priceTable(file: string | null = null): PriceTable {
  return load(file ?? BUNDLED);
}
