import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverWebhook, WEBHOOK_RETRIES } from '../../src/monitors/alerts.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Alerts end to end: a real HTTP receiver on loopback gets one signed POST when the pass rate falls
 * below the bound (its first delivery answered 500, so the POST is retried) and one when it recovers;
 * a webhook the upstream safety policy refuses is never called.
 */

interface Received {
  path: string;
  body: string;
  signature: string | undefined;
  status: number;
}

describe('monitor alerts', () => {
  let h: Harness;
  let mock: MockUpstream;
  let receiver: http.Server;
  let port = 0;
  const received: Received[] = [];
  let failNext = 1;
  let passing = true;
  let client: OpenAI;

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        const status = failNext-- > 0 ? 500 : 204;
        const signature = req.headers['x-evalgate-signature'];
        received.push({
          path: req.url ?? '',
          body,
          signature: typeof signature === 'string' ? signature : undefined,
          status,
        });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
    mock = await startMockUpstream({
      record: false,
      reply: (req) =>
        req.body.model === 'j' ? { json: { score: passing ? 1 : 0, reasoning: 'r' } } : 'an answer',
    });
    // Only 127.0.0.1 may be called: the judge and the receiver are there; `localhost` is refused.
    h = await startHarness({
      env: { EVALGATE_ALLOWED_UPSTREAM_HOSTS: '127.0.0.1', EVALGATE_LOG_FLUSH_MS: '50' },
    });
    for (const [label, upstream] of [
      ['gen', 'g'],
      ['judge', 'j'],
    ]) {
      await h.call('POST', '/v1/models', {
        body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
      });
    }
    await h.call('POST', '/v1/containers', { body: { label: 'c' } });
    await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}', pass_threshold: 0.5 },
    });
    client = new OpenAI({
      apiKey: h.admin.key,
      baseURL: `${h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'c' },
      maxRetries: 0,
    });
  }, 60_000);

  afterAll(async () => {
    await h?.close();
    await mock?.close();
    await new Promise((r) => receiver?.close(r));
  });

  async function calls(n: number) {
    for (let i = 0; i < n; i += 10) {
      await Promise.all(
        Array.from({ length: Math.min(10, n - i) }, () =>
          client.chat.completions.create({ model: 'gen', messages: [{ role: 'user', content: 'hi' }] }),
        ),
      );
    }
  }

  async function scored(n: number) {
    await waitFor(
      async () => (await h.call('GET', '/v1/monitors/watch/results')).body.totals[0]?.num_scored === n,
      30_000,
      `${n} scored`,
    );
  }

  const delivered = () => received.filter((r) => r.path === '/hook' && r.status === 204);

  it('refuses a webhook the upstream policy blocks, and never calls it', async () => {
    const r = await h.call('POST', '/v1/monitors', {
      body: {
        name: 'blocked',
        container: 'c',
        evaluators: ['j'],
        alert: {
          evaluator: 'j',
          metric: 'pass_rate',
          below: 0.5,
          window: 600,
          webhook_url: `http://localhost:${port}/blocked`,
        },
      },
    });
    expect(r.status).toBe(422);
    expect(r.body.detail[0].loc).toEqual(['body', 'alert', 'webhook_url']);
    // It says which policy, and the setting that opens a host.
    expect(r.body.detail[0].msg).toMatch(/webhook URL passes the same safety policy as a model's base URL/);
    expect(r.body.detail[0].msg).toMatch(/EVALGATE_ALLOWED_UPSTREAM_HOSTS/);
    const metadata = await h.call('POST', '/v1/monitors', {
      body: {
        name: 'blocked',
        container: 'c',
        evaluators: ['j'],
        alert: {
          evaluator: 'j',
          metric: 'pass_rate',
          below: 0.5,
          window: 600,
          webhook_url: 'http://169.254.169.254/x',
        },
      },
    });
    expect(metadata.status).toBe(422);
  });

  it('posts once when the pass rate falls below the bound and once when it recovers, signed', async () => {
    const created = await h.call('POST', '/v1/monitors', {
      body: {
        name: 'watch',
        container: 'c',
        evaluators: ['j'],
        alert: {
          evaluator: 'j',
          metric: 'pass_rate',
          below: 0.5,
          window: 600,
          min_samples: 5,
          webhook_url: `http://127.0.0.1:${port}/hook`,
        },
      },
    });
    expect(created.status).toBe(201);
    const secret: string = created.body.alert_secret;
    // Healthy traffic: the first decision (resolved) sends nothing.
    await calls(10);
    await scored(10);
    await waitFor(
      async () => (await h.call('GET', '/v1/monitors/watch')).body.alert_state === 'resolved',
      10_000,
    );
    expect(received).toHaveLength(0);

    // 10 passing, 30 failing: 0.25 < 0.5.
    passing = false;
    await calls(30);
    await scored(40);
    await waitFor(() => delivered().length === 1, 20_000, 'the firing POST');
    // Its first delivery was answered 500 and retried.
    expect(received.filter((r) => r.path === '/hook')).toHaveLength(2);
    const firing = delivered()[0]!;
    const expected = `sha256=${createHmac('sha256', secret).update(firing.body).digest('hex')}`;
    expect(firing.signature).toBe(expected);
    const fired = JSON.parse(firing.body);
    expect(fired).toMatchObject({
      type: 'monitor.alert.firing',
      monitor: { id: created.body.id, name: 'watch' },
      metric: 'pass_rate',
    });
    // The failing calls are scored batch by batch and the rule is evaluated every second: it may fire
    // before the last of them is scored, at any count that puts the 10 passing ones below half.
    expect(fired.samples).toBeGreaterThan(20);
    expect(fired.samples).toBeLessThanOrEqual(40);
    expect(fired.value).toBeCloseTo(10 / fired.samples, 12);
    expect((await h.call('GET', '/v1/monitors/watch')).body.alert_state).toBe('firing');

    // 50 more passing: 60 / 90 >= 0.5.
    passing = true;
    await calls(50);
    await scored(90);
    await waitFor(() => delivered().length === 2, 20_000, 'the recovery POST');
    const resolved = delivered()[1]!;
    const recovered = JSON.parse(resolved.body);
    expect(recovered.type).toBe('monitor.alert.resolved');
    // As above: at any count from (10 + 20) / 60 on.
    expect(recovered.samples).toBeGreaterThanOrEqual(60);
    expect(recovered.samples).toBeLessThanOrEqual(90);
    expect(recovered.value).toBeCloseTo((recovered.samples - 30) / recovered.samples, 12);
    expect(resolved.signature).toBe(
      `sha256=${createHmac('sha256', secret).update(resolved.body).digest('hex')}`,
    );
    // Several more evaluations: one transition, one webhook.
    await new Promise((r) => setTimeout(r, 2500));
    expect(delivered()).toHaveLength(2);
    expect(received.some((r) => r.path === '/blocked')).toBe(false);

    // The counters and the lag gauge.
    const metrics = await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${h.admin.key}` } });
    const text = await metrics.text();
    const id = created.body.id;
    expect(text).toContain(
      `evalgate_monitor_scored_total{monitor="${id}",name="watch",evaluator="${created.body.evaluators[0]}"} 90`,
    );
    expect(text).toContain(
      `evalgate_monitor_passed_total{monitor="${id}",name="watch",evaluator="${created.body.evaluators[0]}"} 60`,
    );
    expect(text).toContain(
      `evalgate_monitor_failed_total{monitor="${id}",name="watch",evaluator="${created.body.evaluators[0]}"} 30`,
    );
    expect(text).toContain(`evalgate_monitor_lag_seconds{monitor="${id}",name="watch"} 0`);
  }, 120_000);
});

describe('alert webhook retries', () => {
  let server: http.Server;
  let url = '';
  let status = 500;
  let hits = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hits++;
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
  });

  const options = (warnings: string[]) => ({
    checkUrl: async () => ({ ok: true as const }),
    warn: (m: string) => warnings.push(m),
    backoffMs: 1,
  });

  it('retries a webhook answering 500 five times after the first attempt, as documented', async () => {
    status = 500;
    hits = 0;
    const warnings: string[] = [];
    const made = await deliverWebhook(url, 's', '{}', 'monitor m', options(warnings));
    expect(WEBHOOK_RETRIES).toBe(5);
    expect(hits).toBe(1 + 5);
    expect(made).toBe(6);
    expect(warnings).toEqual(['monitor m: alert webhook failed after 6 attempts (5 retries)']);
  });

  it('does not retry another 4xx, and stops at the first success', async () => {
    status = 404;
    hits = 0;
    expect(await deliverWebhook(url, 's', '{}', 'monitor m', options([]))).toBe(1);
    expect(hits).toBe(1);
    status = 204;
    hits = 0;
    expect(await deliverWebhook(url, 's', '{}', 'monitor m', options([]))).toBe(1);
    expect(hits).toBe(1);
  });
});
