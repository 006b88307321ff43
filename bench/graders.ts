/**
 * The graders' bare loop: 100,000 items through `string_check` and `rouge_l` as evaluators score them
 * (templates rendered per item, via the grader scorer's batches), beside a baseline measured in the same
 * run: the same comparison or metric called directly on prepared strings.
 * `npm run bench:graders`; BENCH_ITEMS and BENCH_BATCH adjust it. Prints one JSON line.
 */
import type { Item } from '../src/catalog/items.js';
import type { GraderPorts } from '../src/scoring/graders/result.js';
import type { SubGrader } from '../src/scoring/graders/schemas.js';
import { createGraderScorer } from '../src/scoring/graders/scorer.js';
import { rougeL, rougeTokens } from '../src/scoring/graders/similarity/rouge.js';
import type { ScoreInput } from '../src/scoring/types.js';

const WORDS = 'the a quick brown fox jumps over lazy dog paris capital of france is answer model score'.split(
  ' ',
);

function sentence(seed: number, length: number): string {
  const out: string[] = [];
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(WORDS[x % WORDS.length] as string);
  }
  return out.join(' ');
}

function item(id: string, fields: Partial<Item>): Item {
  const row = { input: null, output: null, expected: null, ...fields };
  return { id, metadata: {}, ...row, raw: { ...row } };
}

const noPorts: GraderPorts = {
  complete: () => Promise.reject(new Error('no model calls in this bench')),
  embed: () => Promise.reject(new Error('no embeddings in this bench')),
  python: () => Promise.reject(new Error('no python in this bench')),
};

interface Figures {
  items_per_s: number;
  us_per_item: number;
  cpu_us_per_item: number;
}

async function measure(
  items: number,
  body: () => Promise<number> | number,
): Promise<Figures & { checksum: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const checksum = await body();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return {
    items_per_s: Math.round(items / (ms / 1000)),
    us_per_item: Number(((ms * 1000) / items).toFixed(3)),
    cpu_us_per_item: Number(((cpu.user + cpu.system) / items).toFixed(3)),
    checksum,
  };
}

async function graderLoop(grader: SubGrader, inputs: ScoreInput[], batch: number): Promise<number> {
  const scorer = createGraderScorer(grader, noPorts);
  const signal = new AbortController().signal;
  let sum = 0;
  for (let i = 0; i < inputs.length; i += batch) {
    for (const o of await scorer.scoreBatch(inputs.slice(i, i + batch), signal)) {
      if (o.error) throw new Error(o.error.message);
      sum += o.score ?? 0;
    }
  }
  return sum;
}

async function main(): Promise<void> {
  const n = Number(process.env.BENCH_ITEMS ?? 100_000);
  const batch = Number(process.env.BENCH_BATCH ?? 1000);
  const inputs: ScoreInput[] = [];
  const outputs: string[] = [];
  const references: string[] = [];
  for (let i = 0; i < n; i++) {
    const reference = sentence(i, 8 + (i % 9));
    const output = i % 3 === 0 ? reference : sentence(i + 7, 6 + (i % 11));
    outputs.push(output);
    references.push(reference);
    inputs.push({
      position: i,
      sample: item(String(i), { input: `q${i}`, output }),
      groundTruth: item(String(i), { input: `q${i}`, expected: reference }),
      baseline: null,
    });
  }
  const template = { input: '{{sample.output_text}}', reference: '{{item.expected}}' };
  const stringCheck: SubGrader = { type: 'string_check', name: 'eq', operation: 'eq', ...template };
  const rouge: SubGrader = { type: 'text_similarity', name: 'rl', evaluation_metric: 'rouge_l', ...template };

  // Warm both paths so that neither pays the JIT alone.
  await graderLoop(stringCheck, inputs.slice(0, 2000), batch);
  await graderLoop(rouge, inputs.slice(0, 2000), batch);

  const baselineEq = await measure(n, () =>
    outputs.reduce((s, o, i) => s + (o === references[i] ? 1 : 0), 0),
  );
  const graderEq = await measure(n, () => graderLoop(stringCheck, inputs, batch));
  const baselineRouge = await measure(n, () =>
    outputs.reduce((s, o, i) => s + rougeL(rougeTokens(o), rougeTokens(references[i] as string)), 0),
  );
  const graderRouge = await measure(n, () => graderLoop(rouge, inputs, batch));
  if (
    baselineEq.checksum !== graderEq.checksum ||
    Math.abs(baselineRouge.checksum - graderRouge.checksum) > 1e-6
  ) {
    throw new Error('the grader and the baseline disagree');
  }
  const strip = ({ checksum: _, ...f }: Figures & { checksum: number }) => f;
  console.log(
    JSON.stringify({
      bench: 'graders',
      items: n,
      batch,
      node: process.version,
      string_check: {
        grader: strip(graderEq),
        baseline_direct_compare: strip(baselineEq),
        slowdown_vs_baseline: Number((graderEq.us_per_item / baselineEq.us_per_item).toFixed(1)),
      },
      rouge_l: {
        grader: strip(graderRouge),
        baseline_direct_metric: strip(baselineRouge),
        slowdown_vs_baseline: Number((graderRouge.us_per_item / baselineRouge.us_per_item).toFixed(2)),
      },
    }),
  );
}

await main();
