import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness, type TestKey } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { answer, httpClient, refusal } from './world.js';

/*
 * `start_experiment` and `compare_prompt_versions` driven by the official MCP client over Streamable HTTP:
 * prompt versions × models over a dataset version, with the key's permissions, thin over run creation
 * and the comparison.
 */

let h: Harness;
let mock: MockUpstream;
let admin: Client;
let other: TestKey;
let evaluatorId: string;

/** The answer is right ("Paris") only when the rendered prompt asks for the capital. */
function reply(req: MockRequest) {
  const system = String(req.body.messages?.[0]?.content ?? '');
  return system.includes('capital') ? 'Paris' : 'Lyon';
}

async function ok(method: string, path: string, body?: unknown, key?: string) {
  const res = await h.call(method, path, { body, ...(key ? { key } : {}) });
  expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
  return res.body;
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  h = await startHarness();
  other = await h.key(['*'], 'other');
  for (const label of ['gen-a', 'gen-b']) {
    await ok('POST', '/v1/models', {
      label,
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: label,
    });
  }
  await ok('POST', '/v1/containers', { label: 'geo' });
  const items = Array.from({ length: 5 }, (_, i) => ({
    input: { country: `France ${i}` },
    expected: 'Paris',
  }));
  await ok('POST', '/v1/datasets', { label: 'capitals', items });
  evaluatorId = (
    await ok('POST', '/v1/evaluators', {
      type: 'string_check',
      name: 'exact',
      input: '{{sample.output_text}}',
      reference: '{{item.expected}}',
      operation: 'eq',
    })
  ).id;
  await ok('POST', '/v1/prompts', {
    name: 'geo',
    messages: [
      { role: 'system', content: 'Name the capital.' },
      { role: 'user', content: '{{country}}' },
    ],
    model: 'gen-a',
  });
  await ok('POST', '/v1/prompts/geo/versions', {
    messages: [
      { role: 'system', content: 'Name a city.' },
      { role: 'user', content: '{{country}}' },
    ],
    labels: ['staging'],
  });
  admin = await httpClient(h, h.admin.key);
}, 120_000);

afterAll(async () => {
  await admin?.close();
  await h?.close();
  await mock?.close();
});

describe('experiments over MCP', () => {
  it('starts prompt versions × models over a dataset version and compares the versions', async () => {
    const started = await answer(admin, 'start_experiment', {
      container: 'geo',
      dataset: 'capitals',
      dataset_version: 1,
      prompts: [
        { name: 'geo', version: 1 },
        { name: 'geo', label: 'staging' },
      ],
      models: ['gen-a', 'gen-b'],
      evaluators: ['exact'],
    });
    const runId: string = started.run.id;
    expect(started.run.sample.prompts.map((p: { version: number }) => p.version)).toEqual([1, 2]);
    expect(started.run.ground_truth).toMatchObject({ type: 'dataset', version: 1 });
    await waitFor(
      async () => (await h.call('GET', `/v1/evaluation/runs/${runId}`)).body.status === 'completed',
      30_000,
    );
    const run = await answer(admin, 'get_run', { run_id: runId });
    expect(run.results.per_model).toHaveLength(4);

    const byVersion = await answer(admin, 'compare_prompt_versions', { run_id: runId });
    expect(byVersion.by).toBe('prompt_version');
    expect(byVersion.comparisons).toHaveLength(2);
    for (const c of byVersion.comparisons) {
      expect(c.launch.prompt.version).toBe(2);
      expect(c.baseline_launch.prompt.version).toBe(1);
      expect(c.pass_rate).toMatchObject({ run: 0, baseline: 1, change: -1 });
      expect(c.confidence_interval).not.toBeNull();
      expect(c.verdict).toBe('worse');
    }
    const byModel = await answer(admin, 'compare_prompt_versions', { run_id: runId, by: 'model' });
    expect(byModel.comparisons.every((c: { verdict: string }) => c.verdict === 'inconclusive')).toBe(true);
  });

  it('refuses a key without the permission, another project’s prompts, and wrong arguments', async () => {
    const readOnly = await h.key(['evaluation:read', 'prompts:read', 'data:read', 'models:read']);
    const reader = await httpClient(h, readOnly.key);
    try {
      const denied = await refusal(reader, 'start_experiment', {
        container: 'geo',
        dataset: 'capitals',
        prompts: [{ name: 'geo' }],
        evaluators: ['exact'],
      });
      expect(denied.error?.code).toBe('permission_denied');
    } finally {
      await reader.close();
    }
    const foreign = await httpClient(h, other.key);
    try {
      await h.call('POST', '/v1/containers', { body: { label: 'geo' }, key: other.key });
      await h.call('POST', '/v1/datasets', {
        body: { label: 'capitals', items: [{ input: { country: 'x' } }] },
        key: other.key,
      });
      const unseen = await refusal(foreign, 'start_experiment', {
        container: 'geo',
        dataset: 'capitals',
        prompts: [{ name: 'geo' }],
        models: ['gen-a'],
        evaluators: ['exact'],
      });
      expect(unseen.text).toMatch(/404/);
    } finally {
      await foreign.close();
    }
    const typed = await refusal(admin, 'start_experiment', {
      container: 'geo',
      dataset: 'capitals',
      prompts: 'geo@1',
      evaluators: ['exact'],
    });
    expect(typed.text).toMatch(/prompts/);
    const unknown = await refusal(admin, 'start_experiment', {
      container: 'geo',
      dataset: 'capitals',
      prompts: [{ name: 'geo', version: 7 }],
      evaluators: [evaluatorId],
    });
    expect(unknown.text).toMatch(/404 .*no version 7/);
    const notExperiment = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'geo',
        evaluators: ['exact'],
        sample: { type: 'dataset', dataset: 'capitals' },
      },
    });
    expect(notExperiment.status).toBe(201);
    const noVersions = await refusal(admin, 'compare_prompt_versions', { run_id: notExperiment.body.id });
    expect(noVersions.text).toMatch(/422 .*names no prompt versions/);
  });
});
