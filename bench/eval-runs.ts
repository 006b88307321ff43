/**
 * OpenAI eval runs end to end: a 100,000-item `jsonl` run (uploaded through `/v1/files`) graded by
 * `string_check`, then by `rouge_l`, through `evalgate serve` (the queue, the chunks, the per-sample rows,
 * the SQL counts), beside a bare loop over the same grader on the same items in this process.
 * Part of `npm run bench:graders`; BENCH_ITEMS adjusts it. Prints one JSON line.
 */

import type { SubGrader } from '../src/scoring/graders/schemas.js';
import { createGraderScorer } from '../src/scoring/graders/scorer.js';
import type { ScoreInput } from '../src/scoring/types.js';
import { api, type BenchServer, cpuSeconds, startServer } from './lib.js';

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

function rows(n: number) {
  return Array.from({ length: n }, (_, i) => {
    const reference = sentence(i, 8 + (i % 9));
    const output = i % 3 === 0 ? reference : sentence(i + 7, 6 + (i % 11));
    return { item: { reference }, sample: { output_text: output } };
  });
}

async function upload(server: BenchServer, lines: string): Promise<string> {
  const form = new FormData();
  form.append('purpose', 'evals');
  form.append('file', new Blob([lines]), 'bench.jsonl');
  const res = await fetch(`${server.url}/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.key}` },
    body: form,
  });
  const body = (await res.json()) as { id: string };
  if (res.status >= 400) throw new Error(`upload answered ${res.status}: ${JSON.stringify(body)}`);
  return body.id;
}

async function endToEnd(server: BenchServer, fileId: string, grader: SubGrader, n: number) {
  const ev = await api(server, 'POST', '/v1/evals', {
    data_source_config: { type: 'custom', item_schema: { type: 'object' } },
    testing_criteria: [grader],
  });
  const cpu0 = cpuSeconds(server.child.pid!);
  const t0 = performance.now();
  let run = await api(server, 'POST', `/v1/evals/${ev.id}/runs`, {
    data_source: { type: 'jsonl', source: { type: 'file_id', id: fileId } },
  });
  while (!['completed', 'failed', 'canceled'].includes(run.status)) {
    await new Promise((r) => setTimeout(r, 100));
    run = await api(server, 'GET', `/v1/evals/${ev.id}/runs/${run.id}`);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(server.child.pid!) - cpu0;
  if (run.status !== 'completed' || run.result_counts.total !== n) {
    throw new Error(`run ended ${run.status} with ${JSON.stringify(run.result_counts)}`);
  }
  return {
    items_per_s: Math.round(n / seconds),
    server_cpu_us_per_item: Number(((cpu * 1e6) / n).toFixed(1)),
    seconds: Number(seconds.toFixed(2)),
    passed: run.result_counts.passed,
  };
}

async function bareLoop(grader: SubGrader, inputs: ScoreInput[]) {
  const scorer = createGraderScorer(grader, {
    complete: () => Promise.reject(new Error('none')),
    embed: () => Promise.reject(new Error('none')),
    python: () => Promise.reject(new Error('none')),
  });
  const signal = new AbortController().signal;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let passed = 0;
  for (let i = 0; i < inputs.length; i += 1000) {
    for (const o of await scorer.scoreBatch(inputs.slice(i, i + 1000), signal)) if (o.passed) passed++;
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    items_per_s: Math.round(inputs.length / seconds),
    cpu_us_per_item: Number(((cpu.user + cpu.system) / inputs.length).toFixed(2)),
    passed,
  };
}

async function main(): Promise<void> {
  const n = Number(process.env.BENCH_ITEMS ?? 100_000);
  const data = rows(n);
  const inputs: ScoreInput[] = data.map((r, i) => ({
    position: i,
    sample: {
      id: String(i),
      input: null,
      output: r.sample,
      expected: null,
      metadata: {},
      raw: r,
      evalItem: r.item,
    },
    groundTruth: null,
    baseline: null,
  }));
  const template = { input: '{{sample.output_text}}', reference: '{{item.reference}}' };
  const stringCheck: SubGrader = { type: 'string_check', name: 'eq', operation: 'eq', ...template };
  const rouge: SubGrader = {
    type: 'text_similarity',
    name: 'rl',
    evaluation_metric: 'rouge_l',
    pass_threshold: 0.5,
    ...template,
  };
  await bareLoop(stringCheck, inputs.slice(0, 2000));
  await bareLoop(rouge, inputs.slice(0, 2000));
  const chunk = process.env.EVALGATE_RUN_CHUNK_SIZE;
  const poll = process.env.EVALGATE_RUN_POLL_MS;
  const server = await startServer({
    ...(chunk ? { EVALGATE_RUN_CHUNK_SIZE: chunk } : {}),
    ...(poll ? { EVALGATE_RUN_POLL_MS: poll } : {}),
  });
  try {
    const fileId = await upload(server, data.map((r) => JSON.stringify(r)).join('\n'));
    const out: Record<string, unknown> = { bench: 'eval-runs', items: n, node: process.version };
    for (const [name, grader] of [
      ['string_check', stringCheck],
      ['rouge_l', rouge],
    ] as const) {
      const e2e = await endToEnd(server, fileId, grader, n);
      const bare = await bareLoop(grader, inputs);
      if (bare.passed !== e2e.passed) throw new Error(`${name}: server and bare loop disagree`);
      out[name] = {
        end_to_end: e2e,
        bare_loop: bare,
        bare_over_end_to_end: Number((bare.items_per_s / e2e.items_per_s).toFixed(1)),
      };
    }
    console.log(JSON.stringify(out));
  } finally {
    await server.stop();
  }
}

await main();
