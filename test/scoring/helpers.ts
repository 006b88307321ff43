import type { Item } from '../../src/catalog/items.js';
import { loadConfig } from '../../src/config.js';
import {
  type CodeScorerOptions,
  codeScorerOptions,
  createCodeScorer,
} from '../../src/scoring/code/scorer.js';
import type { ScoreInput, ScoreOutcome, Scorer } from '../../src/scoring/types.js';

/** These tests need no database: they run once, in the sqlite project. */
export const skipScoring = process.env.EVALGATE_TEST_DB === 'postgres';

export function testOptions(dataDir: string, overrides: Partial<CodeScorerOptions> = {}): CodeScorerOptions {
  const config = loadConfig({
    EVALGATE_DATA_DIR: dataDir,
    EVALGATE_CODE_WORKERS: '2',
    EVALGATE_PYTHON: process.env.EVALGATE_PYTHON,
  });
  return { ...codeScorerOptions(config), timeoutMs: 3000, ...overrides };
}

export function item(id: string, fields: Partial<Item> = {}): Item {
  const base = { id, input: null, output: null, expected: null, metadata: {}, ...fields };
  return { ...base, raw: fields.raw ?? { input: base.input, output: base.output, expected: base.expected } };
}

/** Positions whose sample item carries `output` and ground truth carries `expected`. */
export function pairs(rows: Array<{ output: unknown; expected?: unknown; id?: string }>): ScoreInput[] {
  return rows.map((row, position) => ({
    position,
    sample: item(row.id ?? String(position), { output: row.output }),
    groundTruth:
      row.expected === undefined ? null : item(row.id ?? String(position), { expected: row.expected }),
    baseline: null,
  }));
}

export async function scoreWith(
  options: CodeScorerOptions,
  source: string,
  inputs: ScoreInput[],
  requirements: string[] = [],
): Promise<ScoreOutcome[]> {
  const scorer = await createCodeScorer(options, { id: 'evl_test', source, requirements });
  try {
    return await scorer.scoreBatch(inputs, new AbortController().signal);
  } finally {
    await scorer.close();
  }
}

export async function withScorer<T>(
  options: CodeScorerOptions,
  source: string,
  fn: (scorer: Scorer) => Promise<T>,
): Promise<T> {
  const scorer = await createCodeScorer(options, { id: 'evl_test', source, requirements: [] });
  try {
    return await fn(scorer);
  } finally {
    await scorer.close();
  }
}
