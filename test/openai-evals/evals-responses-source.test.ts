import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { finishedRun } from './eval-run.js';

let h: Harness;
let mock: MockUpstream;
let client: OpenAI;

/** Capitals by country ('wrongly' answers Lyon); the model `cached` reports 3 cached prompt tokens. */
function reply(req: MockRequest) {
  const text = req.lastUserText;
  const capitals: Record<string, string> = { France: 'Paris', Italy: 'Rome', Spain: 'Madrid' };
  const country = /(France|Italy|Spain)/.exec(text)?.[1] ?? '';
  const answer = text.includes('wrongly') ? 'Lyon' : (capitals[country] ?? 'unknown');
  return {
    text: answer,
    promptTokens: 4,
    completionTokens: 1,
    ...(req.body?.model === 'cached' ? { cachedTokens: 3 } : {}),
  };
}

async function register(label: string, key = h.admin.key) {
  const res = await h.call('POST', '/v1/models', {
    key,
    body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: label },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply, record: true });
  h = await startHarness();
  await register('gen');
  await register('cached');
  client = new OpenAI({ apiKey: h.admin.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const finished = (evalId: string, runId: string) => finishedRun(client, evalId, runId);

const paris = {
  type: 'string_check' as const,
  name: 'paris',
  input: '{{sample.output_text}}',
  reference: 'Paris',
  operation: 'eq' as const,
};

describe('a responses source over recorded Responses traffic', () => {
  it('selects the stored responses by every filter, grades them as stored and regenerates them', async () => {
    const t0 = Math.floor(Date.now() / 1000);
    const a = await client.responses.create({
      model: 'gen',
      input: 'Capital of France?',
      instructions: 'Answer with a city.',
      temperature: 0.2,
      metadata: { suite: 'geo' },
    });
    const b = await client.responses.create({
      model: 'gen',
      input: [{ role: 'user', content: 'Capital of Italy wrongly?' }],
      user: 'u1',
      reasoning: { effort: 'low' },
      tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' }, strict: false }],
      metadata: { suite: 'geo' },
    });
    expect([a.output_text, b.output_text]).toEqual(['Paris', 'Lyon']);
    // Not selected: another suite, not stored, deleted, another project's.
    const c = await client.responses.create({
      model: 'gen',
      input: 'Capital of Spain?',
      metadata: { suite: 'other' },
    });
    await client.responses.create({
      model: 'gen',
      input: 'Capital of France?',
      store: false,
      metadata: { suite: 'geo' },
    });
    const gone = await client.responses.create({
      model: 'gen',
      input: 'Capital of France?',
      metadata: { suite: 'geo' },
    });
    await client.responses.delete(gone.id);
    const other = await h.key(['*'], 'responses-other');
    await register('gen', other.key);
    const theirs = new OpenAI({ apiKey: other.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    await theirs.responses.create({ model: 'gen', input: 'Capital of France?', metadata: { suite: 'geo' } });

    const ev = await client.evals.create({
      data_source_config: { type: 'custom', item_schema: { type: 'object' } },
      testing_criteria: [paris],
    });
    // Graded as stored: no model, no input messages.
    const graded = await client.evals.runs.create(ev.id, {
      data_source: { type: 'responses', source: { type: 'responses', metadata: { suite: 'geo' } } },
    });
    const gradedRun = await finished(ev.id, graded.id);
    expect(gradedRun.result_counts).toEqual({ total: 2, passed: 1, failed: 1, errored: 0 });
    expect(gradedRun.per_model_usage).toEqual([]);
    const items = (await client.evals.runs.outputItems.list(graded.id, { eval_id: ev.id })).data;
    expect(items.map((i) => i.datasource_item)).toEqual([
      {
        id: a.id,
        input: [{ role: 'user', content: 'Capital of France?' }],
        instructions: 'Answer with a city.',
        metadata: { suite: 'geo' },
        model: 'gen',
      },
      {
        id: b.id,
        input: [{ role: 'user', content: 'Capital of Italy wrongly?' }],
        metadata: { suite: 'geo' },
        model: 'gen',
      },
    ]);
    expect(items.map((i) => i.status)).toEqual(['pass', 'fail']);
    expect(items[0]?.sample.output).toEqual([{ role: 'assistant', content: 'Paris' }]);
    expect(items[0]?.sample.usage).toEqual({
      prompt_tokens: 4,
      completion_tokens: 1,
      total_tokens: 5,
      cached_tokens: 0,
    });

    // Regenerated from item.input: one call per selected response.
    const calls = mock.requests.length;
    const regenerated = await client.evals.runs.create(ev.id, {
      data_source: {
        type: 'responses',
        model: 'gen',
        input_messages: { type: 'item_reference', item_reference: 'item.input' },
        source: { type: 'responses', metadata: { suite: 'geo' } },
      },
    });
    const regenRun = await finished(ev.id, regenerated.id);
    expect(mock.requests.length - calls).toBe(2);
    expect(regenRun.result_counts).toEqual({ total: 2, passed: 1, failed: 1, errored: 0 });
    expect(regenRun.per_model_usage).toEqual([
      {
        model_name: 'gen',
        invocation_count: 2,
        prompt_tokens: 8,
        completion_tokens: 2,
        total_tokens: 10,
        cached_tokens: 0,
      },
    ]);
    const regenItems = (await client.evals.runs.outputItems.list(regenerated.id, { eval_id: ev.id })).data;
    expect(regenItems.map((i) => i.sample.input)).toEqual([
      [{ role: 'user', content: 'Capital of France?' }],
      [{ role: 'user', content: 'Capital of Italy wrongly?' }],
    ]);

    // The request's own filters, each applied: only one response passes each set.
    const selected = async (source: Record<string, unknown>) => {
      const created = await client.evals.runs.create(ev.id, {
        data_source: { type: 'responses', source: { type: 'responses', ...source } },
      });
      await finished(ev.id, created.id);
      const out = await client.evals.runs.outputItems.list(created.id, { eval_id: ev.id });
      return out.data.map((i) => i.datasource_item.id);
    };
    const now = Math.floor(Date.now() / 1000);
    const cases: [Record<string, unknown>, string[]][] = [
      [{ temperature: 0.2 }, [a.id]],
      [{ instructions_search: 'WITH A CITY' }, [a.id]],
      [{ users: ['u1'] }, [b.id]],
      [{ tools: ['lookup', 'unused'] }, [b.id]],
      [{ reasoning_effort: 'low' }, [b.id]],
      [{ top_p: 0.5 }, []],
      [{ model: 'gen', created_after: t0, created_before: now }, [a.id, b.id, c.id]],
      [{ created_before: t0 - 1 }, []],
      [{ model: 'other' }, []],
    ];
    for (const [source, ids] of cases) expect(await selected(source), JSON.stringify(source)).toEqual(ids);

    // A filter the SDK does not declare is refused, not ignored.
    const bad = await h.call('POST', `/v1/evals/${ev.id}/runs`, {
      body: {
        data_source: {
          type: 'responses',
          source: { type: 'responses', limit: 5, temperature: 'hot' },
        },
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/data_source\.source\.limit: Extra field not allowed/);
    expect(bad.body.error.message).toMatch(/data_source\.source\.temperature: must be a number/);
  }, 120_000);
});

describe("file rows checked against the eval's item_schema", () => {
  const upload = async (rows: unknown[]) =>
    client.files.create({
      file: await toFile(Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n')), 'rows.jsonl'),
      purpose: 'evals',
    });

  it('refuses a file with a bad row, naming its line; runs a good one', async () => {
    const ev = await client.evals.create({
      data_source_config: {
        type: 'custom',
        item_schema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      },
      testing_criteria: [
        {
          type: 'string_check',
          name: 'one',
          input: '{{sample.output_text}}',
          reference: '1',
          operation: 'eq',
        },
      ],
    });
    const bad = await upload([
      { item: { n: 1 } },
      { item: { n: 2 } },
      { item: { n: 'three' } },
      { item: { n: 4 } },
    ]);
    const refused = client.evals.runs.create(ev.id, {
      data_source: { type: 'jsonl', source: { type: 'file_id', id: bad.id } },
    });
    await expect(refused).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const err = (await refused.catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(err.message).toContain(
      "data_source.source.id: line 3: item does not match the eval's item_schema: /n must be number",
    );
    expect(err.message).not.toMatch(/line [124]:/);

    // Many bad rows: the first 10 problems are named, then the check stops.
    const many = await upload(Array.from({ length: 25 }, (_, i) => ({ item: { m: i } })));
    const tooMany = await h.call('POST', `/v1/evals/${ev.id}/runs`, {
      body: { data_source: { type: 'jsonl', source: { type: 'file_id', id: many.id } } },
    });
    expect(tooMany.status).toBe(400);
    const issues = tooMany.body.error.details.issues as { msg: string }[];
    expect(issues.map((i) => i.msg.split(':')[0])).toEqual(
      Array.from({ length: 10 }, (_, i) => `line ${i + 1}`),
    );

    const good = await upload([1, 2, 1].map((n) => ({ item: { n }, sample: { output_text: String(n) } })));
    const created = await client.evals.runs.create(ev.id, {
      data_source: { type: 'jsonl', source: { type: 'file_id', id: good.id } },
    });
    const run = await finished(ev.id, created.id);
    expect(run.result_counts).toEqual({ total: 3, passed: 2, failed: 1, errored: 0 });
  }, 60_000);
});

describe('cached tokens', () => {
  it("sums the upstream's cached prompt tokens per model and shows them per output item", async () => {
    const ev = await client.evals.create({
      data_source_config: { type: 'custom', item_schema: { type: 'object' } },
      testing_criteria: [paris],
    });
    const created = await client.evals.runs.create(ev.id, {
      data_source: {
        type: 'completions',
        model: 'cached',
        input_messages: {
          type: 'template',
          template: [{ role: 'user', content: 'Capital of {{item.country}}?' }],
        },
        source: {
          type: 'file_content',
          content: [{ item: { country: 'France' } }, { item: { country: 'Spain' } }],
        },
      },
    });
    const run = await finished(ev.id, created.id);
    expect(run.result_counts).toEqual({ total: 2, passed: 1, failed: 1, errored: 0 });
    expect(run.per_model_usage).toEqual([
      {
        model_name: 'cached',
        invocation_count: 2,
        prompt_tokens: 8,
        completion_tokens: 2,
        total_tokens: 10,
        cached_tokens: 6,
      },
    ]);
    const items = (await client.evals.runs.outputItems.list(created.id, { eval_id: ev.id })).data;
    expect(items.map((i) => i.sample.usage.cached_tokens)).toEqual([3, 3]);
  }, 60_000);
});
