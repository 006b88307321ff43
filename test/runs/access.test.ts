import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/** A run acts on the caller's behalf: it needs every right the caller would need to do it by hand. */

let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({ reply: () => ({ json: { score: 1, reasoning: 'ok' } }) });
  h = await startHarness();
  await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  await h.call('POST', '/v1/datasets', {
    body: { label: 'd', items: [{ input: 'q', output: 'a', expected: 'a' }] },
  });
  await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
  });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const overDataset = {
  container: 'c',
  evaluators: ['j'],
  sample: { type: 'dataset', dataset: 'd' },
  ground_truth: { type: 'dataset', dataset: 'd' },
};

async function create(permissions: string[], body: Record<string, unknown> = overDataset) {
  const { key } = await h.key(permissions);
  return h.call('POST', '/v1/evaluation/runs', { key, body });
}

describe('permissions of a run', () => {
  it('needs read access to every source and evaluator, and the right to call the judge model', async () => {
    const steps: [string[], string][] = [
      [['evaluation:*'], 'evaluators:read'],
      [['evaluation:*', 'evaluators:read'], 'data:read'],
      [['evaluation:*', 'evaluators:read', 'data:read'], 'models:read'],
      [['evaluation:*', 'evaluators:read', 'data:read', 'models:read'], 'inference:write'],
    ];
    for (const [granted, missing] of steps) {
      const res = await create(granted);
      expect(res.status, `${granted} → ${missing}`).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'permission_denied', details: { required: missing } });
    }
    const ok = await create([
      'evaluation:*',
      'evaluators:read',
      'data:read',
      'models:read',
      'inference:write',
    ]);
    expect(ok.status).toBe(201);
    // Nothing was created by the refused attempts.
    expect((await h.call('GET', '/v1/evaluation/runs')).body.total).toBe(1);
  });

  it("needs logs:read for a container's task logs (an omitted side reads them)", async () => {
    const res = await create(
      ['evaluation:*', 'evaluators:read', 'data:read', 'models:read', 'inference:write'],
      {
        container: 'c',
        evaluators: ['j'],
        ground_truth: { type: 'dataset', dataset: 'd' },
      },
    );
    expect(res.status).toBe(403);
    expect(res.body.error.details).toEqual({ required: 'logs:read' });
  });

  it('needs inference:write to generate', async () => {
    const res = await create(['evaluation:*', 'evaluators:read', 'data:read', 'models:read'], {
      container: 'c',
      evaluators: ['j'],
      sample: { type: 'generate', models: ['judge'] },
      ground_truth: { type: 'dataset', dataset: 'd' },
    });
    expect(res.status).toBe(403);
    expect(res.body.error.details).toEqual({ required: 'inference:write' });
  });

  it("needs read access to a run's sources to read its samples", async () => {
    const run = await create(['*']);
    await waitFor(
      async () => (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status === 'completed',
      20_000,
    );
    const reader = await h.key(['evaluation:read']);
    expect((await h.call('GET', `/v1/evaluation/runs/${run.body.id}`, { key: reader.key })).status).toBe(200);
    const denied = await h.call('GET', `/v1/evaluation/runs/${run.body.id}/samples`, { key: reader.key });
    expect(denied.status).toBe(403);
    expect(denied.body.error.details).toEqual({ required: 'data:read' });
    const allowed = await h.key(['evaluation:read', 'data:read']);
    expect(
      (await h.call('GET', `/v1/evaluation/runs/${run.body.id}/samples`, { key: allowed.key })).status,
    ).toBe(200);
  });
});

describe('permissions of keys', () => {
  it('may not revoke a key holding permissions it lacks', async () => {
    const manager = await h.key(['keys:*', 'evaluators:read']);
    const stronger = await h.key(['evaluators:*']);
    const weaker = await h.key(['evaluators:read']);
    const refused = await h.call('DELETE', `/v1/api-keys/${stronger.id}`, { key: manager.key });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      code: 'permission_denied',
      details: { permissions: ['evaluators:*'] },
    });
    // Still valid.
    expect((await h.call('GET', '/v1/evaluators', { key: stronger.key })).status).toBe(200);
    expect((await h.call('DELETE', `/v1/api-keys/${weaker.id}`, { key: manager.key })).status).toBe(200);
    expect((await h.call('GET', '/v1/evaluators', { key: weaker.key })).status).toBe(401);
  });
});
