import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SETTLE_WAIT_MS } from '../../src/catalog/logs/service.js';
import { runContext } from '../../src/runs/service.js';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/*
 * A run over task logs sees the calls answered just before it was created: the gateway records calls off
 * the request path (the task-log writer stores them in batches), so run creation waits for the writer
 * as log reads do. The writer here batches for 2 s, so a run that did not wait would start over an
 * empty container.
 */

let h: Harness;
let mock: MockUpstream;

const between = (text: string, tag: string) => new RegExp(`${tag}<<([\\s\\S]*?)>>`).exec(text)?.[1] ?? '';

/** Generators echo `<model>:<question>`; the judge passes an output that mentions "fresh". */
function reply(req: MockRequest) {
  if (req.body.model !== 'judge-model') return `${req.body.model}:${req.lastUserText}`;
  return { json: { score: between(req.lastUserText, 'OUT').includes('fresh') ? 1 : 0, reasoning: 'x' } };
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  h = await startHarness({ env: { EVALGATE_LOG_FLUSH_MS: '2000' } });
  for (const [label, upstream] of [
    ['judge', 'judge-model'],
    ['gen', 'gen'],
  ]) {
    const res = await h.call('POST', '/v1/models', {
      body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
    });
    expect(res.status).toBe(201);
  }
  expect((await h.call('POST', '/v1/containers', { body: { label: 'live' } })).status).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

/** A chat call through the gateway, recorded under the container `live`. */
async function gatewayCall(question: string): Promise<void> {
  const res = await fetch(`${h.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${h.admin.key}`,
      'content-type': 'application/json',
      'x-evalgate-container': 'live',
    },
    body: JSON.stringify({ model: 'gen', messages: [{ role: 'user', content: question }] }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

async function finished(id: string) {
  await waitFor(async () => {
    const r = await h.call('GET', `/v1/evaluation/runs/${id}`);
    return ['completed', 'error', 'cancelled'].includes(r.body.status);
  }, 20_000);
  const done = await h.call('GET', `/v1/evaluation/runs/${id}`);
  expect(done.body.status, JSON.stringify(done.body.error)).toBe('completed');
  return done.body;
}

describe('a run created right after a gateway call', () => {
  it('includes that call in its task-log sample', async () => {
    const judge = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'judge',
        name: 'fresh',
        model: 'judge',
        prompt: 'OUT<<{{output}}>>',
        pass_threshold: 0.5,
      },
    });
    expect(judge.status, JSON.stringify(judge.body)).toBe(201);
    const id: string = judge.body.id;

    await gatewayCall('a fresh question');
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'live',
        evaluators: [id],
        sample: { type: 'container', container: 'live', range: '0:1' },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const run = await finished(created.body.id);
    expect(run.results.per_model[0].per_eval[id]).toMatchObject({
      num_total: 1,
      num_scored: 1,
      num_passed: 1,
      num_missing: 0,
    });
    // The judge was shown the output of that call.
    const judged = mock.requests.filter((r) => r.body.model === 'judge-model');
    expect(judged.map((r) => between(r.lastUserText, 'OUT'))).toEqual(['gen:a fresh question']);
  });
});

describe('the wait for the task-log writer', () => {
  const parts = (flushLogs: () => Promise<void>) =>
    runContext({
      db: h.services.db,
      environments: ['main'],
      queue: h.services.queue,
      resolveModel: () => Promise.reject(new Error('unused')),
      sandbox: null,
      flushLogs,
    });

  it('is bounded: a writer that never finishes holds run creation up SETTLE_WAIT_MS at most', async () => {
    vi.useFakeTimers();
    try {
      let settled = false;
      const waiting = parts(() => new Promise<void>(() => {}))
        .settleLogs()
        .then(() => {
          settled = true;
        });
      await vi.advanceTimersByTimeAsync(SETTLE_WAIT_MS - 1);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await waiting;
      expect(settled).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("does not fail run creation when the writer's flush fails", async () => {
    await expect(parts(() => Promise.reject(new Error('database away'))).settleLogs()).resolves.toBe(
      undefined,
    );
  });
});
