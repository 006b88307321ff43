import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maxCallCost } from '../../src/llm/estimate.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { promptTokens } from '../helpers/o200k.js';
import { waitFor } from '../helpers/wait.js';

/*
 * A project budget of $0.50 against calls whose text is `ꙮ` × 300 (3 o200k tokens a character), from an
 * upstream that bills the o200k count: the spend stops within one call's largest cost of the limit, for
 * 64 concurrent gateway calls and for a judge run over such outputs. With an estimate of characters / 3
 * the reservations were 9× low and the spend went to $3.47 (gateway) and $1.72 (judges).
 */

const LIMIT = 0.5;
/** Input dear, output cheap: the input estimate decides how many calls fit. */
const PRICED = { inputPricePerMtok: 100, outputPricePerMtok: 1, defaultParameters: {} };
const COMPLETION_TOKENS = 7;
const TEXT = 'ꙮ'.repeat(300);

let mock: MockUpstream;
let h: Harness;
/** What the mock billed, in USD, by upstream model. */
const billed = new Map<string, number>();

beforeAll(async () => {
  mock = await startMockUpstream({
    latencyMs: 100,
    reply: (req) => {
      const prompt = promptTokens(req.body);
      const model = String(req.body.model);
      const cost = (prompt * PRICED.inputPricePerMtok + COMPLETION_TOKENS * PRICED.outputPricePerMtok) / 1e6;
      billed.set(model, (billed.get(model) ?? 0) + cost);
      const reply = { promptTokens: prompt, completionTokens: COMPLETION_TOKENS };
      return model.startsWith('judge-')
        ? { ...reply, json: { score: 1, reasoning: 'fine' } }
        : { ...reply, text: 'ok' };
    },
  });
  h = await startHarness({
    env: {
      EVALGATE_MODEL_CONCURRENCY: '64',
      EVALGATE_RUN_CHUNK_SIZE: '64',
      EVALGATE_RUN_POLL_MS: '100',
      ...(testDbKind() === 'postgres'
        ? {
            EVALGATE_REDIS_URL: 'redis://127.0.0.1:6379',
            EVALGATE_REDIS_PREFIX: `egt-estimate-${randomBytes(4).toString('hex')}`,
          }
        : {}),
    },
  });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

/** A project with a priced model and a $0.50 total budget. */
async function project(label: string) {
  const tag = randomBytes(3).toString('hex');
  const owner = await h.key(['*'], `estimate-${tag}`);
  const as = (method: string, path: string, body?: unknown) => h.call(method, path, { key: owner.key, body });
  const upstream = `${label}-${tag}`;
  const model = await as('POST', '/v1/models', {
    label,
    base_url: mock.baseUrl,
    upstream_model: upstream,
    input_price_per_mtok: PRICED.inputPricePerMtok,
    output_price_per_mtok: PRICED.outputPricePerMtok,
  });
  expect(model.status, model.text).toBe(201);
  expect((await as('PUT', '/v1/projects/current/budget', { limit_usd: LIMIT, period: 'total' })).status).toBe(
    200,
  );
  const spend = async () => (await as('GET', '/v1/projects/current/budget')).body.spend.used_usd as number;
  return { owner, as, upstream, spend };
}

describe(`a $0.50 project budget against ꙮ × 300 (${testDbKind()})`, () => {
  it('64 concurrent gateway calls spend at most the limit and one call’s largest cost', async () => {
    const p = await project('gen');
    const body = { model: 'gen', messages: [{ role: 'user', content: TEXT }], max_tokens: 10 };
    const text = JSON.stringify(body);
    const largest = maxCallCost(PRICED, body, text);
    let answered = 0;
    let refused = 0;
    for (let round = 0; round < 4; round++) {
      const statuses = await Promise.all(
        Array.from({ length: 64 }, async () => {
          const res = await fetch(`${h.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${p.owner.key}`, 'content-type': 'application/json' },
            body: text,
          });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      for (const s of statuses) expect([200, 429]).toContain(s);
      answered += statuses.filter((s) => s === 200).length;
      refused += statuses.filter((s) => s === 429).length;
    }
    const provider = billed.get(p.upstream) ?? 0;
    const spent = await p.spend();
    console.info(JSON.stringify({ gateway: { answered, refused, provider, spent, largest } }));
    expect(refused).toBeGreaterThan(0);
    expect(spent).toBeCloseTo(provider, 6);
    expect(provider).toBeGreaterThanOrEqual(LIMIT);
    expect(provider).toBeLessThanOrEqual(LIMIT + largest);
  }, 60_000);

  it('a judge run over such outputs stops with budget_exceeded within one call’s largest cost', async () => {
    const p = await project('judge');
    expect((await p.as('POST', '/v1/containers', { label: 'c' })).status).toBe(201);
    const items = Array.from({ length: 200 }, (_, i) => ({ input: `q${i}`, output: TEXT }));
    expect((await p.as('POST', '/v1/datasets', { label: 'd', items })).status).toBe(201);
    const ev = await p.as('POST', '/v1/evaluators', {
      type: 'judge',
      name: 'j',
      model: 'judge',
      prompt: 'Rate {{output}}',
    });
    expect(ev.status, ev.text).toBe(201);
    const src = { type: 'dataset', dataset: 'd', range: '0:200' };
    mock.requests.length = 0;
    const run = await p.as('POST', '/v1/evaluation/runs', {
      container: 'c',
      evaluators: [ev.body.id],
      sample: src,
      ground_truth: src,
    });
    expect(run.status, run.text).toBe(201);
    let ended: any = null;
    await waitFor(
      async () => {
        ended = (await p.as('GET', `/v1/evaluation/runs/${run.body.id}`)).body;
        return Boolean(ended.finished_at);
      },
      60_000,
      'the run to end',
    );
    expect(ended.error).toMatchObject({ code: 'budget_exceeded' });
    // The largest of the judge calls' costs as the engine estimates them (the request as JSON).
    const judged = mock.requests.filter((r) => String(r.body.model) === p.upstream);
    expect(judged.length).toBeGreaterThan(0);
    const largest = Math.max(...judged.map((r) => maxCallCost(PRICED, r.body)));
    const provider = billed.get(p.upstream) ?? 0;
    const spent = await p.spend();
    console.info(JSON.stringify({ judges: { calls: judged.length, provider, spent, largest } }));
    expect(spent).toBeCloseTo(provider, 6);
    expect(provider).toBeLessThanOrEqual(LIMIT + largest);
  }, 90_000);
});
