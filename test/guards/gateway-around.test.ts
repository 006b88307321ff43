import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../gateway/gateway-helpers.js';
import { AWS, caught, resetMock, sleep, startGuardGateway, state, verdicts } from './guard-helpers.js';

/*
 * Guards beside and around the model call: a parallel block cancelling the upstream call, evaluator
 * guards (a judge through the project's model call) timing out open and closed, blocked calls queued for
 * review, and hostile input.
 */
let g: Gateway;
beforeAll(async () => {
  g = await startGuardGateway();
});
afterAll(async () => {
  await g.close();
});
beforeEach(() => resetMock(g));

describe('parallel stage', () => {
  it('a fast block stops the upstream call before it completes and answers content_filter', async () => {
    g.mock.set({ latencyMs: 2000 });
    const started = performance.now();
    const err = await caught(
      g.client().chat.completions.create({
        model: 'm-par',
        messages: [{ role: 'user', content: 'something forbidden' }],
      }),
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.code).toBe('content_filter');
    expect(performance.now() - started).toBeLessThan(1500);
    expect(g.mock.stats.completed).toBe(0);
    const [v] = await verdicts(g, 'guard=deny');
    expect(v).toMatchObject({ stage: 'parallel', verdict: 'blocked' });
  });

  it('a judge that blocks while the upstream call is under way cancels it (the mock sees it closed)', async () => {
    state.judgeScore = 0;
    await g.h.call('PUT', '/v1/projects/current/budget', { body: { limit_usd: 100, period: 'total' } });
    const spent = async () =>
      (await g.h.call('GET', '/v1/projects/current/budget')).body.spend.used_usd as number;
    const before = await spent();
    g.mock.set({
      reply: async (r) => {
        if (r.body.model === 'j') {
          await sleep(300);
          return { json: { score: 0, reasoning: 'rude' } };
        }
        await sleep(3000);
        return 'too late';
      },
    });
    const started = performance.now();
    const err = await caught(
      g.client().chat.completions.create({ model: 'm-pj', messages: [{ role: 'user', content: 'Hi' }] }),
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.message).toContain("guard 'pj'");
    expect(performance.now() - started).toBeLessThan(2500);
    await g.mock.until(() => g.mock.stats.clientClosed >= 1, 3000);
    expect(g.mock.requests.map((r) => r.body.model).sort()).toEqual(['j', 'm-pj']);
    const cost = Number(err.headers.get('x-evalgate-cost'));
    expect(cost).toBe(0);
    // Spend: the judge's call at its price (12 tokens in, 7 out), nothing for the cancelled upstream call.
    expect((await spent()) - before).toBeCloseTo((12 * 1000 + 7 * 2000) / 1_000_000, 9);
  });

  it('a pass lets the answer through', async () => {
    const res = await g
      .client()
      .chat.completions.create({ model: 'm-par', messages: [{ role: 'user', content: 'fine' }] });
    expect(res.choices[0]!.message.content).toBe('Hello from the mock upstream.');
  });
});

describe('evaluator guards', () => {
  it('a judge that times out fails open (the call goes on) or closed (blocked), with the reason recorded', async () => {
    g.mock.fail({ hang: true, times: 2, match: (r) => r.body.model === 'j' });
    const ok = await g
      .client()
      .chat.completions.create({ model: 'm-open', messages: [{ role: 'user', content: 'Hi' }] });
    expect(ok.choices[0]!.message.content).toBe('Hello from the mock upstream.');
    const [open] = await verdicts(g, 'guard=judge-open');
    expect(open).toMatchObject({ verdict: 'error', error: { code: 'guard_timeout' } });
    expect(open.reason).toContain('failed open');

    const err = await caught(
      g.client().chat.completions.create({ model: 'm-closed', messages: [{ role: 'user', content: 'Hi' }] }),
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.message).toContain('failed closed');
    const [closed] = await verdicts(g, 'guard=judge-closed');
    expect(closed).toMatchObject({ verdict: 'blocked', error: { code: 'guard_timeout' } });
  });

  it("a judge's verdict on the answer is a score, its call made through the project's model call", async () => {
    state.judgeScore = 0;
    await g.h.call('PUT', '/v1/projects/current/budget', { body: { limit_usd: 100, period: 'total' } });
    const spent = async () =>
      (await g.h.call('GET', '/v1/projects/current/budget')).body.spend.used_usd as number;
    const before = await spent();
    const { response } = await g
      .client()
      .chat.completions.create({ model: 'm-judge', messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    const logId = response.headers.get('x-evalgate-log-id')!;
    const [v] = await verdicts(g, `task_log_id=${logId}`);
    expect(v).toMatchObject({ guard: 'judge-out', verdict: 'flagged', score: 0, passed: false });
    expect(g.mock.requests.some((r) => r.body.model === 'j')).toBe(true);
    // The guarded model is unpriced, so the call's own cost is 0; the project's spend grew by the judge's
    // call at its price (the mock's usage: 12 tokens in, 7 out).
    expect(Number(response.headers.get('x-evalgate-cost'))).toBe(0);
    const judgeCost = (12 * 1000 + 7 * 2000) / 1_000_000;
    expect((await spent()) - before).toBeCloseTo(judgeCost, 9);
  });
});

describe('review', () => {
  it('blocked calls, found by their verdicts, go to an annotation queue for a person to check the block', async () => {
    const content = `key ${AWS}`;
    await caught(
      g.client().chat.completions.create({ model: 'm-in', messages: [{ role: 'user', content }] }),
    );
    const blocked = await verdicts(g, 'verdict=blocked&guard=no-secrets');
    await g.logs('default');
    const queue = await g.h.call('POST', '/v1/annotation-queues', {
      body: { name: 'blocks', evaluators: ['polite'] },
    });
    expect(queue.status, queue.text).toBe(201);
    const ids = [...new Set(blocked.map((v) => v.task_log_id))];
    const added = await g.h.call('POST', `/v1/annotation-queues/${queue.body.id}/items`, {
      body: { task_logs: ids },
    });
    expect(added.status, added.text).toBe(200);
    expect(added.body.added).toBe(ids.length);
  });
});

describe('hostile input', () => {
  it('a 10 MB message gets a clear 4xx', async () => {
    const content = 'a'.repeat(10 * 1024 * 1024);
    const err = await caught(
      g.client().chat.completions.create({ model: 'm-in', messages: [{ role: 'user', content }] }),
    );
    expect(err.status).toBeGreaterThanOrEqual(400);
    expect(err.status).toBeLessThan(500);
  });
});
