import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { finishedRun } from './eval-run.js';

/**
 * OpenAI-style eval runs read what their source kind needs to be read: stored completions and stored
 * responses are task logs (`logs:read`), an uploaded file's rows need what reading the file needs
 * (`data:read`). Creating such a run and reading its output items check it (403), as run samples do; a
 * stored response cannot be deleted by a key that cannot read it.
 */

let h: Harness;
let mock: MockUpstream;
let admin: OpenAI;

const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.url}/v1`, maxRetries: 0 });

const paris = {
  type: 'string_check' as const,
  name: 'paris',
  input: '{{sample.output_text}}',
  reference: 'Paris',
  operation: 'eq' as const,
};

beforeAll(async () => {
  mock = await startMockUpstream({ reply: () => ({ text: 'Paris', promptTokens: 4, completionTokens: 1 }) });
  h = await startHarness();
  const res = await h.call('POST', '/v1/models', {
    body: { label: 'gen', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'gen' },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  admin = sdk(h.admin.key);
  await admin.chat.completions.create({
    model: 'gen',
    messages: [{ role: 'user', content: 'Capital of France? (a secret prompt)' }],
    store: true,
    metadata: { suite: 'perm' },
  });
  await admin.responses.create({
    model: 'gen',
    input: 'Capital of France? (secret)',
    metadata: { suite: 'perm' },
  });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

async function newEval() {
  return admin.evals.create({
    data_source_config: { type: 'custom', item_schema: { type: 'object' } },
    testing_criteria: [paris],
  });
}

const SOURCES = {
  stored_completions: {
    type: 'completions',
    source: { type: 'stored_completions', metadata: { suite: 'perm' } },
  },
  responses: { type: 'responses', source: { type: 'responses', metadata: { suite: 'perm' } } },
} as const;

describe('eval runs over task logs and files check what their rows need', () => {
  for (const [name, dataSource] of Object.entries(SOURCES)) {
    it(`refuses an evaluation-only key an eval run over ${name}, and its output items`, async () => {
      const ev = await newEval();
      const narrow = await h.key(['evaluation:read', 'evaluation:write']);
      const refused = await h.call('POST', `/v1/evals/${ev.id}/runs`, {
        key: narrow.key,
        body: { data_source: dataSource },
      });
      expect(refused.status, JSON.stringify(refused.body)).toBe(403);
      expect(refused.body.error.details).toEqual({ required: 'logs:read' });
      // Nothing was created for it.
      expect((await admin.evals.runs.list(ev.id)).data).toEqual([]);

      // A key that may read task logs creates it; the narrow key cannot read what it shows.
      const allowed = await h.key(['evaluation:read', 'evaluation:write', 'logs:read']);
      const created = await h.call('POST', `/v1/evals/${ev.id}/runs`, {
        key: allowed.key,
        body: { data_source: dataSource },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const runId = created.body.id as string;
      const run = await finishedRun(admin, ev.id, runId);
      expect(run.result_counts.total).toBe(1);
      const items = await admin.evals.runs.outputItems.list(runId, { eval_id: ev.id });
      expect(JSON.stringify(items.data[0]?.datasource_item)).toContain('secret');
      const itemId = items.data[0]?.id ?? '';

      const list = await h.call('GET', `/v1/evals/${ev.id}/runs/${runId}/output_items`, { key: narrow.key });
      expect(list.status).toBe(403);
      expect(JSON.stringify(list.body)).not.toContain('secret');
      const one = await h.call('GET', `/v1/evals/${ev.id}/runs/${runId}/output_items/${itemId}`, {
        key: narrow.key,
      });
      expect(one.status).toBe(403);
      // The run's samples route refuses it the same way.
      const samples = await h.call('GET', `/v1/evaluation/runs/${runId}/samples`, { key: narrow.key });
      expect(samples.status).toBe(403);
      // With logs:read the same items are there.
      const readable = await h.call('GET', `/v1/evals/${ev.id}/runs/${runId}/output_items`, {
        key: allowed.key,
      });
      expect(readable.status).toBe(200);
      expect(readable.body.data).toHaveLength(1);
      // Another project's key does not see the run at all.
      const stranger = await h.key(['*'], 'perm-other');
      const theirs = await h.call('GET', `/v1/evals/${ev.id}/runs/${runId}/output_items`, {
        key: stranger.key,
      });
      expect(theirs.status).toBe(404);
    }, 120_000);
  }

  it("refuses an evaluation:read key a file's rows through output items, and creation without data:read", async () => {
    const ev = await newEval();
    const file = await admin.files.create({
      file: await toFile(
        Buffer.from(JSON.stringify({ item: { note: 'private row' }, sample: { output_text: 'Paris' } })),
        'rows.jsonl',
      ),
      purpose: 'evals',
    });
    const dataSource = { type: 'jsonl', source: { type: 'file_id', id: file.id } };
    const narrow = await h.key(['evaluation:read', 'evaluation:write']);
    const refused = await h.call('POST', `/v1/evals/${ev.id}/runs`, {
      key: narrow.key,
      body: { data_source: dataSource },
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(refused.body.error.details).toEqual({ required: 'data:read' });

    const created = await admin.evals.runs.create(ev.id, { data_source: dataSource as never });
    await finishedRun(admin, ev.id, created.id);
    const reader = await h.key(['evaluation:read']);
    const list = await h.call('GET', `/v1/evals/${ev.id}/runs/${created.id}/output_items`, {
      key: reader.key,
    });
    expect(list.status).toBe(403);
    expect(JSON.stringify(list.body)).not.toContain('private row');
    const withData = await h.key(['evaluation:read', 'data:read']);
    const ok = await h.call('GET', `/v1/evals/${ev.id}/runs/${created.id}/output_items`, {
      key: withData.key,
    });
    expect(ok.status).toBe(200);
    expect(JSON.stringify(ok.body)).toContain('private row');

    // Inline rows are the caller's own: an evaluation-only key grades and reads them.
    const inline = await h.call('POST', `/v1/evals/${ev.id}/runs`, {
      key: narrow.key,
      body: {
        data_source: {
          type: 'jsonl',
          source: { type: 'file_content', content: [{ item: { a: 1 }, sample: { output_text: 'Paris' } }] },
        },
      },
    });
    expect(inline.status, JSON.stringify(inline.body)).toBe(200);
    await finishedRun(admin, ev.id, inline.body.id);
    const own = await h.call('GET', `/v1/evals/${ev.id}/runs/${inline.body.id}/output_items`, {
      key: narrow.key,
    });
    expect(own.status).toBe(200);
  }, 120_000);

  it('refuses to delete a stored response to an inference:write key that cannot read it', async () => {
    const response = await admin.responses.create({ model: 'gen', input: 'Capital of France?' });
    const writer = await h.key(['inference:write']);
    const refused = await h.call('DELETE', `/v1/responses/${response.id}`, { key: writer.key });
    expect(refused.status).toBe(403);
    expect(refused.body.error.details).toEqual({ required: 'inference:read' });
    // Still served.
    expect((await admin.responses.retrieve(response.id)).id).toBe(response.id);
    const both = await h.key(['inference:write', 'inference:read']);
    const deleted = await h.call('DELETE', `/v1/responses/${response.id}`, { key: both.key });
    expect(deleted.status).toBe(200);
    const gone = await h.call('GET', `/v1/responses/${response.id}`);
    expect(gone.status).toBe(404);
    // Another project's key, even a full one, finds nothing to delete.
    const other = await admin.responses.create({ model: 'gen', input: 'Capital of Spain?' });
    const stranger = await h.key(['*'], 'perm-other');
    expect((await h.call('DELETE', `/v1/responses/${other.id}`, { key: stranger.key })).status).toBe(404);
  }, 60_000);
});
