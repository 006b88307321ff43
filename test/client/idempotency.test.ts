import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APIConnectionError, type Evalgate } from '../../src/client/index.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { clientOf, droppingProxy } from './helpers.js';

// A run created through a connection that breaks after the server acted: the client's retry carries the
// same Idempotency-Key, so the server answers with the run it already made. Runs on both databases, as
// the idempotency record lives there.

describe('idempotent run creation under a forced retry', () => {
  let h: Harness;
  let client: Evalgate;
  const source = { type: 'dataset' as const, dataset: 'qa' };
  const body = { container: 'support', evaluators: ['exact'], sample: source, ground_truth: source };

  beforeAll(async () => {
    h = await startHarness({ env: { EVALGATE_SERVE_EXECUTES: '0' } });
    client = clientOf(h);
    await client.containers.create({ label: 'support' });
    await client.models.register({ label: 'judge', base_url: 'http://127.0.0.1:9/v1' });
    await client.evaluators.create({ type: 'judge', name: 'exact', model: 'judge', prompt: '{{output}}' });
    await client.datasets.create({ label: 'qa', items: [{ input: 'q', output: 'a', expected: 'a' }] });
  });
  afterAll(async () => {
    await h?.close();
  });

  const isCreate = (req: { method?: string; url?: string }) =>
    req.method === 'POST' && req.url === '/v1/evaluation/runs';

  it('launches exactly one run, and the client gets it', async () => {
    let creates = 0;
    const proxy = await droppingProxy(h.url, (req) => isCreate(req) && creates++ === 0);
    try {
      const viaProxy = clientOf(h, { baseURL: proxy.url });
      const run = await viaProxy.runs.create(body);
      expect(proxy.dropped).toBe(1);
      const posts = proxy.forwarded.filter(isCreate);
      expect(posts).toHaveLength(2);
      const keys = posts.map((p) => p.headers['idempotency-key']);
      expect(keys[0]).toMatch(/^[\w-]{36}$/);
      expect(keys[1]).toBe(keys[0]);
      const all = await client.runs.list({ limit: 100 });
      expect(all.total).toBe(1);
      expect(all.data[0]!.id).toBe(run.id);
    } finally {
      await proxy.close();
    }
  });

  it("keeps the caller's own key, and each create call gets a fresh one", async () => {
    const proxy = await droppingProxy(h.url, () => false);
    try {
      const viaProxy = clientOf(h, { baseURL: proxy.url });
      const a = await viaProxy.runs.create(body, { idempotencyKey: 'deploy-42' });
      const b = await viaProxy.runs.create(body, { idempotencyKey: 'deploy-42' });
      const c = await viaProxy.runs.create(body);
      expect(b.id).toBe(a.id);
      expect(c.id).not.toBe(a.id);
      const keys = proxy.forwarded.filter(isCreate).map((p) => p.headers['idempotency-key']);
      expect(keys.slice(0, 2)).toEqual(['deploy-42', 'deploy-42']);
      expect(keys[2]).not.toBe('deploy-42');
    } finally {
      await proxy.close();
    }
  });

  it('does not resend a non-idempotent create whose response was lost', async () => {
    const proxy = await droppingProxy(h.url, (req) => req.method === 'POST');
    try {
      const viaProxy = clientOf(h, { baseURL: proxy.url });
      await expect(viaProxy.containers.create({ label: 'once' })).rejects.toBeInstanceOf(APIConnectionError);
      expect(proxy.forwarded).toHaveLength(1);
      expect((await client.containers.get('once')).label).toBe('once');
    } finally {
      await proxy.close();
    }
  });
});
