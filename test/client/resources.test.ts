// Database-independent: the TypeScript client's methods over the API; the API runs on both databases in test/http and test/runs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  ConflictError,
  type Evalgate,
  NotFoundError,
  type RunEvent,
  type RunProgress,
} from '../../src/client/index.js';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { clientOf } from './helpers.js';

// Every endpoint of the API through the client, one test per resource group, against a live server.

let h: Harness;
let mock: MockUpstream;
let client: Evalgate;
let tmp: string;
let releaseHeld: () => void = () => {};
const held = new Promise<void>((resolve) => {
  releaseHeld = resolve;
});

const between = (text: string, tag: string) => new RegExp(`${tag}<<([\\s\\S]*?)>>`).exec(text)?.[1] ?? '';

/** The judge scores 1 when OUT equals EXP; an output saying "hold-me" is judged only once released. */
async function reply(req: MockRequest) {
  const text = req.lastUserText;
  const out = between(text, 'OUT');
  if (out.includes('hold-me')) await held;
  return { json: { score: out === between(text, 'EXP') ? 1 : 0, reasoning: 'scripted' } };
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  h = await startHarness();
  client = clientOf(h);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-client-'));
});
afterAll(async () => {
  releaseHeld();
  await h?.close();
  await mock?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the client against a live server', () => {
  it('health', async () => {
    expect(await client.health()).toEqual({ ok: true });
  });

  it('containers: create, list, get, update, delete', async () => {
    const created = await client.containers.create({
      label: 'c-one',
      description: 'first',
      metadata: { a: 1 },
    });
    expect(created).toMatchObject({ object: 'container', label: 'c-one', description: 'first' });
    await client.containers.create({ label: 'c-two' });
    const page = await client.containers.list({ limit: 1 });
    expect(page.data).toHaveLength(1);
    expect(page.total).toBeGreaterThanOrEqual(2);
    const labels: string[] = [];
    for await (const c of client.containers.list({ limit: 1 })) labels.push(c.label);
    expect(labels).toEqual(expect.arrayContaining(['c-one', 'c-two']));
    expect((await client.containers.get('c-one')).id).toBe(created.id);
    const updated = await client.containers.update('c-one', { description: null, label: 'c-uno' });
    expect(updated).toMatchObject({ id: created.id, label: 'c-uno', description: null });
    expect(await client.containers.delete(created.id)).toEqual({
      object: 'container',
      id: created.id,
      deleted: true,
    });
    await expect(client.containers.get(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('models: register, list, get, update, delete', async () => {
    const model = await client.models.register({
      label: 'judge',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'judge-model',
      api_key: 'sk-upstream',
      input_price_per_mtok: 1,
      output_price_per_mtok: 2,
    });
    expect(model).toMatchObject({ object: 'model', id: 'judge', kind: 'registered', has_api_key: true });
    const spare = await client.models.register({ label: 'spare', base_url: mock.baseUrl });
    const listed = await client.models.list();
    expect(listed.data.map((m) => m.id)).toEqual(expect.arrayContaining(['judge', 'spare']));
    expect(listed.hasNextPage()).toBe(false);
    expect((await client.models.get('judge')).model_id).toBe(model.model_id);
    const patched = await client.models.update('spare', { context_window: 8192, fallbacks: ['judge'] });
    expect(patched).toMatchObject({ context_window: 8192, fallbacks: ['judge'] });
    expect(await client.models.delete(spare.model_id!)).toEqual({
      object: 'model',
      id: spare.model_id,
      deleted: true,
    });
    await expect(client.models.get('spare')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('evaluators: create, list, get, update, delete', async () => {
    await client.containers.create({ label: 'support' });
    const judge = await client.evaluators.create({
      type: 'judge',
      name: 'exact',
      container: 'support',
      model: 'judge',
      prompt: 'Compare OUT<<{{output}}>> with EXP<<{{expected}}>>',
      pass_threshold: 0.5,
    });
    expect(judge).toMatchObject({
      object: 'evaluator.judge',
      name: 'exact',
      container: 'support',
      mode: 'pointwise',
    });
    const other = await client.evaluators.create({
      type: 'judge',
      name: 'other',
      model: 'judge',
      prompt: 'OUT<<{{output}}>>',
    });
    const inSupport = await client.evaluators.list({ container: 'support' });
    expect(inSupport.data.map((e) => e.name)).toEqual(['exact']);
    const all: string[] = [];
    for await (const e of client.evaluators.list({ limit: 1 })) all.push(e.name);
    expect(all.sort()).toEqual(['exact', 'other']);
    const got = await client.evaluators.get('exact');
    expect(got.id).toBe(judge.id);
    if (got.object !== 'evaluator.judge') throw new Error('expected a judge');
    expect(got.prompt).toContain('OUT<<');
    const patched = await client.evaluators.update('other', { description: 'patched', pass_threshold: 0.9 });
    expect(patched).toMatchObject({ description: 'patched', pass_threshold: 0.9 });
    expect(await client.evaluators.delete(other.id)).toEqual({
      object: 'evaluator',
      id: other.id,
      deleted: true,
    });
    await expect(client.evaluators.get('other')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('datasets: create, streamed uploads with progress, list, get, update, items, delete', async () => {
    const qa = await client.datasets.create({
      label: 'qa',
      items: [
        { input: 'q1', output: 'paris', expected: 'paris' },
        { input: 'q2', output: 'rome', expected: 'rome' },
        { input: 'q3', output: 'oslo', expected: 'lima' },
      ],
    });
    expect(qa).toMatchObject({ object: 'dataset', label: 'qa', item_count: 3 });

    // From a file: progress counts every byte and row of it.
    const file = path.join(tmp, 'rows.jsonl');
    const rows = Array.from({ length: 500 }, (_, i) => ({ id: `r${i}`, input: `q${i}`, expected: `a${i}` }));
    fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n'));
    const progress: { bytes: number; rows: number }[] = [];
    const fromFile = await client.datasets.upload(file, {
      label: 'from-file',
      description: 'uploaded',
      onProgress: (p) => progress.push(p),
    });
    expect(fromFile).toMatchObject({ label: 'from-file', description: 'uploaded', item_count: 500 });
    expect(progress.at(-1)).toEqual({ bytes: fs.statSync(file).size, rows: 500 });

    // From an async iterable of rows, compressed on the fly; and from raw bytes.
    async function* generated() {
      for (let i = 0; i < 2000; i++) yield { input: `g${i}`, output: 'x'.repeat(50) };
    }
    let last = { bytes: 0, rows: 0 };
    const gz = await client.datasets.upload(generated(), {
      label: 'generated',
      gzip: true,
      onProgress: (p) => {
        last = p;
      },
    });
    expect(gz.item_count).toBe(2000);
    expect(last.rows).toBe(2000);
    const bytes = await client.datasets.upload(
      [Buffer.from('{"input":"b1"}\n{"input":'), Buffer.from('"b2"}\n')],
      {
        label: 'bytes',
      },
    );
    expect(bytes.item_count).toBe(2);

    const listed = await client.datasets.list({ limit: 2 });
    expect(listed.total).toBe(4);
    expect((await listed.toArray()).map((d) => d.label).sort()).toEqual([
      'bytes',
      'from-file',
      'generated',
      'qa',
    ]);
    expect((await client.datasets.get('qa')).id).toBe(qa.id);
    expect(await client.datasets.update('bytes', { description: 'two rows' })).toMatchObject({
      description: 'two rows',
    });

    const slice = await client.datasets.items('from-file', { range: '10:20', limit: 5 });
    expect(slice.total).toBe(10);
    expect(slice.data.map((i) => i.id)).toEqual(['r10', 'r11', 'r12', 'r13', 'r14']);
    const allItems = await client.datasets.items('from-file', { limit: 100 }).toArray();
    expect(allItems.map((i) => i.position)).toEqual(rows.map((_, i) => i));

    expect(await client.datasets.delete(bytes.id)).toEqual({
      object: 'dataset',
      id: bytes.id,
      deleted: true,
    });
    await expect(client.datasets.get(bytes.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('task logs: import, streamed upload, list', async () => {
    await client.containers.create({ label: 'logs-here' });
    const imported = await client.logs.import('logs-here', [
      { model: 'm1', input: [{ role: 'user', content: 'hi' }], output: 'hello' },
      { model: 'm2', output: 'second' },
    ]);
    expect(imported).toMatchObject({ object: 'task_log.import', imported: 2, first_seq: 1, last_seq: 2 });
    async function* more() {
      for (let i = 0; i < 30; i++) yield { model: 'm1', output: `line ${i}` };
    }
    let rows = 0;
    const uploaded = await client.logs.upload('logs-here', more(), { onProgress: (p) => (rows = p.rows) });
    expect(uploaded).toMatchObject({ imported: 30, first_seq: 3, last_seq: 32 });
    expect(rows).toBe(30);
    const m2 = await client.logs.list('logs-here', { model: 'm2' });
    expect(m2.data.map((l) => l.output)).toEqual(['second']);
    const seqs: number[] = [];
    for await (const log of client.logs.list('logs-here', { limit: 7 })) seqs.push(log.seq);
    expect(seqs).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
    expect((await client.logs.list('logs-here', { range: '30:40' })).data.map((l) => l.seq)).toEqual([
      31, 32,
    ]);
  });

  it('api keys: create, list, revoke; the created key works until revoked', async () => {
    const created = await client.apiKeys.create({ name: 'reader', permissions: ['evaluators:read'] });
    expect(created).toMatchObject({ object: 'api_key', name: 'reader', permissions: ['evaluators:read'] });
    expect(created.key).toMatch(/^eg_/);
    const reader = clientOf(h, { apiKey: created.key });
    expect((await reader.evaluators.list()).object).toBe('list');
    const ids: string[] = [];
    for await (const k of client.apiKeys.list({ limit: 1 })) ids.push(k.id);
    expect(ids).toContain(created.id);
    const revoked = await client.apiKeys.revoke(created.id);
    expect(revoked.revoked_at).not.toBeNull();
    await expect(reader.evaluators.list()).rejects.toBeInstanceOf(AuthenticationError);
  });

  it('budgets: a key created with one, retrieved, updated and cleared; the project budget set and removed', async () => {
    const created = await client.apiKeys.create({
      name: 'capped',
      permissions: ['inference:write'],
      budget: { limit_usd: 2, period: 'month' },
    });
    expect(created.budget).toEqual({ limit_usd: 2, period: 'month' });
    expect(created.spend).toMatchObject({ used_usd: 0, limit_usd: 2 });
    expect((await client.apiKeys.retrieve(created.id)).budget).toEqual({ limit_usd: 2, period: 'month' });
    const updated = await client.apiKeys.update(created.id, {
      name: 'capped-daily',
      budget: { limit_usd: 1, period: 'day' },
    });
    expect(updated).toMatchObject({ name: 'capped-daily', budget: { limit_usd: 1, period: 'day' } });
    expect((await client.apiKeys.update(created.id, { budget: null })).spend).toBeNull();
    const set = await client.projects.setBudget({ limit_usd: 100, period: 'total' });
    expect(set).toMatchObject({ object: 'project_budget', budget: { limit_usd: 100, period: 'total' } });
    expect(set.spend?.resets_at).toBeNull();
    expect((await client.projects.retrieveBudget(set.project_id)).budget).toEqual({
      limit_usd: 100,
      period: 'total',
    });
    expect((await client.projects.deleteBudget()).budget).toBeNull();
    await expect(client.projects.retrieveBudget('prj_elsewhere')).rejects.toMatchObject({ status: 404 });
  });

  it('runs: create, wait, get, list, samples, events, compare, cancel', { timeout: 60_000 }, async () => {
    const source = { type: 'dataset' as const, dataset: 'qa' };
    const body = { container: 'support', evaluators: ['exact'], sample: source, ground_truth: source };
    const run = await client.runs.create(body);
    expect(run).toMatchObject({ object: 'evaluation.run', container: expect.any(String) });
    const statuses: string[] = [];
    const progress: RunProgress[] = [];
    const done = await client.runs.wait(run.id, {
      timeoutMs: 30_000,
      onStatus: (s) => statuses.push(s),
      onProgress: (p) => progress.push(p),
    });
    expect(done.status).toBe('completed');
    expect(statuses.at(-1)).toBe('completed');
    expect(progress.at(-1)).toEqual({ done: 3, total: 3 });
    const evaluatorId = done.evaluators![0]!;
    expect(done.results?.per_model?.[0]?.per_eval?.[evaluatorId]).toMatchObject({
      num_passed: 2,
      num_failed: 1,
    });

    expect((await client.runs.get(run.id)).status).toBe('completed');
    const completed = await client.runs.list({ status: 'completed', container: 'support' });
    expect(completed.data.map((r) => r.id)).toContain(run.id);

    const failed = await client.runs.samples(run.id, { passed: false });
    expect(failed.data.map((s) => s.output)).toEqual(['oslo']);
    const samples = await client.runs.samples(run.id, { limit: 1 }).toArray();
    expect(samples.map((s) => s.position).sort()).toEqual([0, 1, 2]);

    // A finished run's stream replays its state and ends with the terminal status.
    const events: RunEvent[] = [];
    for await (const e of client.runs.stream(run.id)) events.push(e);
    expect(events.at(-1)).toEqual({
      event: 'status',
      data: expect.objectContaining({ status: 'completed' }),
    });

    const again = await client.runs.wait((await client.runs.create(body)).id, { timeoutMs: 30_000 });
    const comparison = await client.runs.compare(again.id, { baseline: run.id });
    expect(comparison).toMatchObject({
      object: 'evaluation.run_comparison',
      run_id: again.id,
      baseline_id: run.id,
    });
    expect(comparison.summary.matched).toBe(3);

    // Cancel a run whose judge call is held up.
    await client.datasets.create({
      label: 'held',
      items: [{ input: 'q', output: 'hold-me', expected: 'x' }],
    });
    const heldSource = { type: 'dataset' as const, dataset: 'held' };
    const slow = await client.runs.create({ ...body, sample: heldSource, ground_truth: heldSource });
    await waitFor(() => mock.requests.some((r) => r.lastUserText.includes('hold-me')), 10_000);
    const cancelled = await client.runs.cancel(slow.id);
    expect(['running', 'cancelled']).toContain(cancelled.status);
    releaseHeld();
    expect((await client.runs.wait(slow.id, { timeoutMs: 20_000 })).status).toBe('cancelled');
    await expect(client.runs.cancel(slow.id)).rejects.toBeInstanceOf(ConflictError);
  });
});
