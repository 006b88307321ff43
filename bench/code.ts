/**
 * 100,000 positions through an exact-match code evaluator, sandbox on, via createCodeScorer.
 * `npm run bench:code`; BENCH_SAMPLES, BENCH_BATCH (positions per scoreBatch call) and the usual
 * EVALGATE_CODE_* / EVALGATE_SANDBOX_* variables adjust it. Prints one JSON line.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Item } from '../src/catalog/items.js';
import { loadConfig } from '../src/config.js';
import { codeScorerOptions, createCodeScorer, sandboxStatus } from '../src/scoring/code/scorer.js';
import type { ScoreInput } from '../src/scoring/types.js';

const SOURCE = `
def evaluate(sample, ground_truth, baseline):
    return str(sample["output"]).strip() == str(ground_truth["expected"]).strip()
`;

function item(id: string, fields: Partial<Item>): Item {
  const row = { input: null, output: null, expected: null, ...fields };
  return { id, metadata: {}, ...row, raw: { ...row } };
}

async function main(): Promise<void> {
  const samples = Number(process.env.BENCH_SAMPLES ?? 100_000);
  const perCall = Number(process.env.BENCH_BATCH ?? 10_000);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'evalgate-bench-'));
  const config = loadConfig({ ...process.env, EVALGATE_DATA_DIR: dataDir });
  const status = await sandboxStatus(config);
  if (!status.available) throw new Error(`sandbox unavailable: ${status.reason}`);
  const inputs: ScoreInput[] = [];
  for (let i = 0; i < samples; i++) {
    const question = `What is ${i} + ${i}?`;
    inputs.push({
      position: i,
      sample: item(String(i), { input: question, output: String(2 * i) }),
      groundTruth: item(String(i), { input: question, expected: String(i % 10 === 0 ? i : 2 * i) }),
      baseline: null,
    });
  }
  const options = codeScorerOptions(config);
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const scorer = await createCodeScorer(options, { id: 'evl_bench', source: SOURCE, requirements: [] });
  const setup = performance.now() - started;
  const signal = new AbortController().signal;
  let passed = 0;
  let errors = 0;
  for (let i = 0; i < samples; i += perCall) {
    for (const o of await scorer.scoreBatch(inputs.slice(i, i + perCall), signal)) {
      if (o.error) errors++;
      else if (o.passed) passed++;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await scorer.close();
  rmSync(dataDir, { recursive: true, force: true });
  if (passed !== samples - Math.ceil(samples / 10) + 1 || errors !== 0) {
    throw new Error(`wrong results: passed=${passed} errors=${errors}`);
  }
  const out = {
    samples,
    seconds: Number(seconds.toFixed(3)),
    samples_per_s: Math.round(samples / seconds),
    us_per_sample: Number(((seconds * 1e6) / samples).toFixed(2)),
    workers: Math.min(options.workers, options.workersPerScorer ?? options.workers),
    setup_ms: Math.round(setup),
    node_cpu_s: Number(((cpu.user + cpu.system) / 1e6).toFixed(3)),
    batch_size: options.batchSize,
    positions_per_call: perCall,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
