import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'vitest';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { waitFor } from '../helpers/wait.js';

/** The gateway of the guard tests: models on the mock upstream, a judge evaluator and one policy per model. */

export const AWS = 'AKIAIOSFODNN7EXAMPLE';
const MODELS = ['m-in', 'm-out', 'm-block', 'm-flag', 'm-par', 'm-pj', 'm-open', 'm-closed', 'm-judge'];
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the mock answers: `reply` to calls, `judgeScore` to the judge. */
export const state = { reply: '', judgeScore: 1 };

/** The `polite` judge evaluator (on the registered model `judge`) that the evaluator guards use. */
export async function createPoliteJudge(g: Gateway): Promise<void> {
  const ev = await g.h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'polite',
      model: 'judge',
      prompt: 'Is this polite? {{output}}',
      pass_threshold: 0.5,
    },
  });
  expect(ev.status, ev.text).toBe(201);
}

export async function startGuardGateway(): Promise<Gateway> {
  const g = await startGateway();
  for (const label of [...MODELS, 'judge']) {
    const res = await g.h.call('POST', '/v1/models', {
      body: {
        label,
        base_url: g.mock.baseUrl,
        upstream_model: label === 'judge' ? 'j' : label,
        api: 'chat',
        // The judge is priced (the guarded models are not): what a judge guard spends is its own.
        ...(label === 'judge' ? { input_price_per_mtok: 1000, output_price_per_mtok: 2000 } : {}),
      },
    });
    expect(res.status, res.text).toBe(201);
  }
  await createPoliteJudge(g);
  const policies = [
    {
      name: 'input',
      applies_to: { models: ['m-in'] },
      checks: [
        { name: 'no-secrets', guard: { type: 'secrets' } },
        { name: 'no-pii', guard: { type: 'pii' }, action: 'redact' },
      ],
    },
    {
      name: 'output',
      applies_to: { models: ['m-out'] },
      checks: [{ name: 'pii-out', guard: { type: 'pii' }, stage: 'output', action: 'redact' }],
    },
    {
      name: 'block',
      applies_to: { models: ['m-block'] },
      checks: [{ name: 'secrets-out', guard: { type: 'secrets' }, stage: 'output' }],
    },
    {
      name: 'flag',
      applies_to: { models: ['m-flag'] },
      checks: [
        { name: 'injection', guard: { type: 'prompt_injection' }, action: 'flag' },
        { name: 'pii-flag', guard: { type: 'pii' }, stage: 'output', action: 'flag' },
      ],
    },
    {
      name: 'parallel',
      applies_to: { models: ['m-par'] },
      checks: [{ name: 'deny', guard: { type: 'deny_list', terms: ['forbidden'] }, stage: 'parallel' }],
    },
    {
      name: 'parallel-judge',
      applies_to: { models: ['m-pj'] },
      checks: [{ name: 'pj', guard: { type: 'evaluator', evaluator: 'polite' }, stage: 'parallel' }],
    },
    {
      name: 'open',
      applies_to: { models: ['m-open'] },
      checks: [
        {
          name: 'judge-open',
          guard: { type: 'evaluator', evaluator: 'polite' },
          timeout_ms: 300,
          on_error: 'open',
        },
      ],
    },
    {
      name: 'closed',
      applies_to: { models: ['m-closed'] },
      checks: [
        {
          name: 'judge-closed',
          guard: { type: 'evaluator', evaluator: 'polite' },
          timeout_ms: 300,
          on_error: 'closed',
        },
      ],
    },
    {
      name: 'judged',
      applies_to: { models: ['m-judge'] },
      checks: [
        {
          name: 'judge-out',
          guard: { type: 'evaluator', evaluator: 'polite' },
          stage: 'output',
          action: 'flag',
        },
      ],
    },
  ];
  for (const body of policies) {
    const res = await g.h.call('POST', '/v1/guards', { body });
    expect(res.status, res.text).toBe(201);
  }
  return g;
}

/** The mock's replies reset before each test. */
export function resetMock(g: Gateway): void {
  g.mock.reset();
  state.reply = 'Hello from the mock upstream.';
  state.judgeScore = 1;
  g.mock.set({
    latencyMs: 0,
    reply: (r) =>
      r.body.model === 'j' ? { json: { score: state.judgeScore, reasoning: 'ok' } } : state.reply,
  });
}

export function anthropic(g: Gateway): Anthropic {
  return new Anthropic({ baseURL: g.h.url, apiKey: g.h.admin.key, maxRetries: 0 });
}

/** The stored verdicts a query finds, once there are some. */
export async function verdicts(g: Gateway, query: string): Promise<any[]> {
  let data: any[] = [];
  await waitFor(async () => {
    const res = await g.h.call('GET', `/v1/guards/verdicts?${query}`);
    data = res.body.data;
    return data.length > 0;
  });
  return data;
}

export async function caught(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}
