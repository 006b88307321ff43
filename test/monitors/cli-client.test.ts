import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Evalgate, NotFoundError, UnprocessableEntityError } from '../../src/client/index.js';
import { evalgate, evalgateJson } from '../cli/cli-helpers.js';
import { clientOf } from '../client/helpers.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/** The client's `monitors` resource and `evalgate monitors …` against a real server. */

describe('monitors through the client and the CLI', () => {
  let h: Harness;
  let mock: MockUpstream;
  let client: Evalgate;

  beforeAll(async () => {
    mock = await startMockUpstream({
      record: false,
      reply: (req) => (req.body.model === 'j' ? { json: { score: 0, reasoning: 'too short' } } : 'ok'),
    });
    h = await startHarness({ env: { EVALGATE_LOG_FLUSH_MS: '50' } });
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
    client = clientOf(h);
  }, 60_000);

  afterAll(async () => {
    await h?.close();
    await mock?.close();
  });

  it('creates, reads, pauses and lists monitors through the client, errors typed', async () => {
    const m = await client.monitors.create({
      name: 'm',
      container: 'c',
      evaluators: ['j'],
      sampling_rate: 1,
    });
    expect(m.alert_secret).toBeTruthy();
    expect((await client.monitors.get('m')).id).toBe(m.id);
    expect((await client.monitors.pause('m')).enabled).toBe(false);
    expect((await client.monitors.resume(m.id)).enabled).toBe(true);
    const all = [];
    for await (const x of client.monitors.list()) all.push(x.id);
    expect(all).toEqual([m.id]);
    await expect(client.monitors.get('nope')).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      client.monitors.create({ name: 'm2', container: 'c', evaluators: ['j'], sampling_rate: 2 }),
    ).rejects.toBeInstanceOf(UnprocessableEntityError);

    const gateway = new OpenAI({
      apiKey: h.admin.key,
      baseURL: `${h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'c' },
    });
    for (let i = 0; i < 5; i++) {
      await gateway.chat.completions.create({ model: 'gen', messages: [{ role: 'user', content: `q${i}` }] });
    }
    await waitFor(async () => (await client.monitors.results('m')).totals[0]?.num_scored === 5, 20_000);
    const results = await client.monitors.results('m', { bucket: 'minute' });
    expect(results.totals[0]).toMatchObject({ num_scored: 5, num_failed: 5, avg_score: 0 });
    const failing = [];
    for await (const s of client.monitors.samples('m', { failed: true })) failing.push(s);
    expect(failing).toHaveLength(5);
    expect(failing[0]?.reasoning).toBe('too short');
  }, 60_000);

  it('drives the same through `evalgate monitors`', async () => {
    const created = await evalgateJson(h, [
      'monitors',
      'create',
      '--name',
      'cli',
      '--container',
      'c',
      '--evaluator',
      'j',
      '--rate',
      '0.5',
      '--model',
      'gen',
      '--route',
      'chat',
      '--route',
      'responses',
      '--json',
    ]);
    expect(created).toMatchObject({
      name: 'cli',
      sampling_rate: 0.5,
      filter: { models: ['gen'], routes: ['chat', 'responses'] },
    });
    const list = await evalgate(h, ['monitors', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('cli');
    expect((await evalgate(h, ['monitors', 'pause', 'cli'])).stdout).toContain('cli paused');
    expect((await evalgateJson(h, ['monitors', 'get', 'cli', '--json'])).enabled).toBe(false);
    expect((await evalgate(h, ['monitors', 'resume', 'cli'])).stdout).toContain('cli resumed');
    const view = await evalgate(h, [
      'monitors',
      'results',
      'm',
      '--bucket',
      'minute',
      '--watch',
      '--interval',
      '1',
      '--times',
      '2',
    ]);
    expect(view.code).toBe(0);
    // Two draws of the live view (not a terminal here: one after the other), each with its totals row.
    expect(view.stdout.match(/m: 5 selected/g)).toHaveLength(2);
    expect(view.stdout).toMatch(/total\s*│\s*j\s*│\s*5\s*│\s*0\.0%/);
    const samples = await evalgateJson(h, ['monitors', 'samples', 'm', '--failed', '--json']);
    expect(samples).toHaveLength(5);
    const bad = await evalgate(h, ['monitors', 'results', 'm', '--bucket', 'week']);
    expect(bad.code).not.toBe(0);
    expect((await evalgate(h, ['monitors', 'delete', 'cli'])).stdout).toContain('deleted');
    const gone = await evalgate(h, ['monitors', 'get', 'cli']);
    expect(gone.code).not.toBe(0);
  }, 90_000);
});
