import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Queue rules over a monitor: the calls a monitor's judge failed (and a seeded share of those it scored)
 * go to a queue, people review them, and the judge's agreement with them is read over the monitor's
 * scores. The judge is a mock provider on loopback: it passes answers to "good" questions only.
 */
let h: Harness;
let mock: MockUpstream;
let judgeId = '';
const CALLS = 12;

beforeAll(async () => {
  mock = await startMockUpstream({
    record: false,
    reply: (req) => {
      if (req.body.model === 'j') {
        const passed = req.lastUserText.includes('good');
        return { json: { score: passed ? 1 : 0, reasoning: passed ? 'fine' : 'not good' } };
      }
      return `answer to ${req.lastUserText}`;
    },
  });
  h = await startHarness({ env: { EVALGATE_RUN_POLL_MS: '100', EVALGATE_LOG_FLUSH_MS: '50' } });
  for (const [label, upstream] of [
    ['gen', 'g'],
    ['judge', 'j'],
  ]) {
    const r = await h.call('POST', '/v1/models', {
      body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
    });
    expect(r.status, r.text).toBe(201);
  }
  expect((await h.call('POST', '/v1/containers', { body: { label: 'live' } })).status).toBe(201);
  const ev = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'live-judge',
      model: 'judge',
      prompt: 'Rate this answer. {{input}} {{output}}',
      scale: { type: 'pass_fail' },
      pass_threshold: 0.5,
    },
  });
  expect(ev.status, ev.text).toBe(201);
  judgeId = ev.body.id;
  const m = await h.call('POST', '/v1/monitors', {
    body: { name: 'live-monitor', container: 'live', evaluators: ['live-judge'], sampling_rate: 1 },
  });
  expect(m.status, m.text).toBe(201);
  const client = new OpenAI({
    apiKey: h.admin.key,
    baseURL: `${h.url}/v1`,
    defaultHeaders: { 'X-Evalgate-Container': 'live' },
    maxRetries: 0,
  });
  // Every third question is "good": 4 pass, 8 fail.
  for (let i = 0; i < CALLS; i++) {
    const content = i % 3 === 0 ? `good question ${i}` : `bad question ${i}`;
    await client.chat.completions.create({ model: 'gen', messages: [{ role: 'user', content }] });
  }
  await waitFor(async () => {
    const got = (await h.call('GET', '/v1/monitors/live-monitor')).body;
    const results = (await h.call('GET', '/v1/monitors/live-monitor/results')).body;
    const totals = results.totals?.[0] ?? results.totals?.[judgeId] ?? null;
    return got.selected === CALLS && totals !== null && totals.num_scored === CALLS;
  }, 120_000);
}, 300_000);
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe('queue rules over a monitor', () => {
  it("queues the monitor's failing calls and a seeded share, and reads agreement over its scores", async () => {
    const q = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'live-review', evaluators: ['live-judge'] },
    });
    expect(q.status, q.text).toBe(201);
    const failed = await h.call('POST', '/v1/annotation-queues/live-review/items', {
      body: { rules: [{ monitor: 'live-monitor', failed: true }] },
    });
    expect(failed.status, failed.text).toBe(200);
    expect(failed.body, JSON.stringify(failed.body)).toMatchObject({ added: 8, already_queued: 0 });
    // A share of every scored call: the failures already queued count as already queued.
    const share = await h.call('POST', '/v1/annotation-queues/live-review/items', {
      body: { rules: [{ monitor: 'live-monitor', share: 1, seed: 7 }] },
    });
    expect(share.body).toMatchObject({ added: 4, already_queued: 8 });

    // A person reviews every item: agrees with the judge except on two of the failures.
    let disagreed = 0;
    for (;;) {
      const claim = await h.call('POST', '/v1/annotation-queues/live-review/claim');
      expect(claim.status, claim.text).toBe(200);
      const view = claim.body.item;
      if (view === null) break;
      const input = JSON.stringify(view.content.input);
      expect(input).toMatch(/question \d+/);
      let passed = input.includes('good');
      if (!passed && disagreed < 2) {
        passed = true;
        disagreed++;
      }
      const res = await h.call('POST', `/v1/annotation-queues/live-review/items/${view.item.id}/review`, {
        body: { scores: [{ evaluator: 'live-judge', passed }] },
      });
      expect(res.status, res.text).toBe(201);
    }
    const agreement = await h.call('GET', `/v1/evaluators/${judgeId}/agreement?queue=live-review`);
    expect(agreement.status, agreement.text).toBe(200);
    expect(agreement.body.n).toBe(CALLS);
    const g = agreement.body.groups[0];
    expect(g.n).toBe(CALLS);
    expect(g.percent_agreement).toBeCloseTo(10 / 12, 12);
    expect(g.disagreements).toHaveLength(2);
  });

  it('refuses a rule with both or neither of run and monitor, and an unknown or foreign monitor', async () => {
    const add = (rule: Record<string, unknown>, key?: string) =>
      h.call('POST', '/v1/annotation-queues/live-review/items', { body: { rules: [rule] }, key });
    const both = await add({ monitor: 'live-monitor', run: 'run_x', failed: true });
    expect(both.status).toBe(422);
    expect(JSON.stringify(both.body)).toContain('either a run or a monitor');
    expect((await add({ failed: true })).status).toBe(422);
    const unknown = await add({ monitor: 'nowhere', failed: true });
    expect(unknown.status).toBe(422);
    expect(JSON.stringify(unknown.body)).toContain("Monitor 'nowhere' not found");
    expect((await add({ monitor: 'live-monitor' })).status).toBe(422);
    // Another project: its key sees no such queue, and its own queue cannot name this project's monitor.
    const other = await h.key(['*'], 'elsewhere');
    expect((await add({ monitor: 'live-monitor', failed: true }, other.key)).status).toBe(404);
    await h.call('POST', '/v1/models', {
      body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
      key: other.key,
    });
    await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'judge',
        name: 'j2',
        model: 'judge',
        prompt: 'p {{output}}',
        scale: { type: 'pass_fail' },
      },
      key: other.key,
    });
    const theirs = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'theirs', evaluators: ['j2'] },
      key: other.key,
    });
    expect(theirs.status, theirs.text).toBe(201);
    const foreign = await h.call('POST', '/v1/annotation-queues/theirs/items', {
      body: { rules: [{ monitor: 'live-monitor', failed: true }] },
      key: other.key,
    });
    expect(foreign.status).toBe(422);
    expect(JSON.stringify(foreign.body)).toContain('not found');
  });
});
