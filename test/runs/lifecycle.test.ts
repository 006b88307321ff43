import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { cliArgs } from '../helpers/cli-bundle.js';
import { freshDatabase } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream({ reply: () => ({ json: { score: 1, reasoning: 'fine' } }), latencyMs: 5 });
});
afterAll(async () => {
  await mock?.close();
});

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

async function setUp(call: Call, rows: number) {
  await call('POST', '/v1/models', {
    label: 'judge',
    provider: 'openai-compatible',
    base_url: mock.baseUrl,
    upstream_model: 'j',
  });
  await call('POST', '/v1/containers', { label: 'c' });
  const items = Array.from({ length: rows }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
  expect((await call('POST', '/v1/datasets', { label: 'big', items })).status).toBe(201);
  const ev = await call('POST', '/v1/evaluators', {
    type: 'judge',
    name: 'j',
    model: 'judge',
    prompt: 'Rate {{output}}',
  });
  const src = { type: 'dataset', dataset: 'big', range: `0:${rows}` };
  const run = await call('POST', '/v1/evaluation/runs', {
    container: 'c',
    evaluators: [ev.body.id],
    sample: src,
    ground_truth: src,
  });
  expect(run.status).toBe(201);
  return run.body.id as string;
}

describe('run lifecycle', () => {
  let h: Harness;
  afterAll(async () => {
    await h?.close();
  });

  it('cancels a 10,000-position run within one second and keeps its partial results', async () => {
    h = await startHarness({ env: { EVALGATE_MODEL_CONCURRENCY: '16' } });
    mock.set({ latencyMs: 20 });
    const call: Call = (method, path, body) => h.call(method, path, { body });
    const id = await setUp(call, 10_000);
    await waitFor(
      async () => ((await call('GET', `/v1/evaluation/runs/${id}`)).body.metrics?.progress?.done ?? 0) > 0,
      15_000,
    );
    const asked = Date.now();
    const cancelled = await call('POST', `/v1/evaluation/runs/${id}/cancel`);
    const elapsed = Date.now() - asked;
    expect(cancelled.status).toBe(200);
    // The answer comes once the run has stopped: it is already `cancelled`, with its results.
    expect(cancelled.body.status).toBe('cancelled');
    expect(cancelled.body.results.per_model[0]).toBeTruthy();
    const run = (await call('GET', `/v1/evaluation/runs/${id}`)).body;
    const e = Object.values(run.results.per_model[0].per_eval)[0] as Record<string, number | string>;
    expect(elapsed).toBeLessThan(1_000);
    expect(e.break_reason).toBe('cancelled');
    expect(e.num_total).toBeGreaterThan(0);
    expect(e.num_total).toBeLessThan(10_000);
    expect(e.num_scored).toBe(e.num_total);
    expect(run.finished_at).not.toBeNull();
    const samples = await call('GET', `/v1/evaluation/runs/${id}/samples?limit=1`);
    expect(samples.body.total).toBe(e.num_total);
    // Nothing keeps calling the model after the cancel settled.
    const seen = mock.stats.requests;
    await new Promise((r) => setTimeout(r, 300));
    expect(mock.stats.requests).toBe(seen);
  });
});

interface Server {
  child: ChildProcess;
  url: string;
  key: string | null;
}

function startServer(env: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, [...cliArgs(), 'serve', '--port', '0'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 30_000);
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      // The first start prints a key a few lines after the address.
      if (url && (out.includes('Try:') || !out.includes('Created project'))) {
        clearTimeout(timer);
        resolve({ child, url, key: /^\s+(eg_\S+)$/m.exec(out)?.[1] ?? null });
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
  });
}

describe('restart', () => {
  it('resumes a run after SIGKILL and scores every position exactly once', async () => {
    const db = await freshDatabase();
    const env = {
      EVALGATE_DATA_DIR: db.dataDir,
      EVALGATE_DATABASE_URL: db.url,
      EVALGATE_LOG_LEVEL: 'warn',
      EVALGATE_MODEL_CONCURRENCY: '8',
      EVALGATE_RUN_CHUNK_SIZE: '64',
    };
    mock.set({ latencyMs: 5 });
    mock.reset();
    let server = await startServer(env);
    const key = server.key;
    expect(key).toMatch(/^eg_/);
    const call: Call = async (method, path, body) => {
      const res = await fetch(server.url + path, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };
    const rows = 2_000;
    try {
      const id = await setUp(call, rows);
      await waitFor(
        async () =>
          ((await call('GET', `/v1/evaluation/runs/${id}`)).body.metrics?.progress?.done ?? 0) >= 300,
        20_000,
      );
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
      const doneBefore = mock.stats.requests;
      expect(doneBefore).toBeLessThan(rows);

      server = await startServer(env);
      expect(server.key).toBeNull(); // not a first start
      await waitFor(
        async () => (await call('GET', `/v1/evaluation/runs/${id}`)).body.status === 'completed',
        30_000,
      );
      const run = (await call('GET', `/v1/evaluation/runs/${id}`)).body;
      const e = Object.values(run.results.per_model[0].per_eval)[0] as Record<string, number>;
      expect(e).toMatchObject({ num_total: rows, num_scored: rows, num_errors: 0 });
      const positions = new Set<number>();
      for (let offset = 0; offset < rows; offset += 100) {
        const page = await call('GET', `/v1/evaluation/runs/${id}/samples?limit=100&offset=${offset}`);
        for (const s of page.body.data) positions.add(s.position);
      }
      expect(positions.size).toBe(rows);
      // Only the chunks in flight at the kill (at most 3 of 64 positions) were asked again.
      expect(mock.stats.requests).toBeGreaterThanOrEqual(rows);
      expect(mock.stats.requests - rows).toBeLessThanOrEqual(3 * 64);
    } finally {
      server.child.kill('SIGKILL');
      await db.drop();
    }
  }, 90_000);
});
