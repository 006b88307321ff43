import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { finishedRun } from './eval-run.js';

let h: Harness;
let mock: MockUpstream;
let client: OpenAI;

/** Capitals by country; a json_schema request gets `{city}`; a request with tools calls `lookup`. */
function reply(req: MockRequest) {
  const text = req.lastUserText;
  const capitals: Record<string, string> = { France: 'Paris', Italy: 'Rome', Spain: 'Madrid' };
  const country = /(France|Italy|Spain)/.exec(text)?.[1] ?? '';
  const city = capitals[country] ?? 'unknown';
  if (req.body?.response_format?.type === 'json_schema')
    return { json: { city }, promptTokens: 6, completionTokens: 5 };
  if (Array.isArray(req.body?.tools) && text.includes('weather')) {
    return { toolCalls: [{ name: 'weather', arguments: { city } }], promptTokens: 8, completionTokens: 6 };
  }
  return { text: text.includes('wrongly') ? 'Lyon' : city, promptTokens: 4, completionTokens: 1 };
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply, record: true });
  h = await startHarness();
  const res = await h.call('POST', '/v1/models', {
    body: { label: 'gen', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'gen' },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  client = new OpenAI({ apiKey: h.admin.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const exact = (input: string) => ({
  type: 'string_check' as const,
  name: 'exact',
  input,
  reference: '{{item.answer}}',
  operation: 'eq' as const,
});

const finished = (evalId: string, runId: string) => finishedRun(client, evalId, runId);

describe('eval run sources', () => {
  it('reads a file_id source uploaded through /v1/files', async () => {
    const ev = await client.evals.create({
      data_source_config: { type: 'custom', item_schema: { type: 'object' } },
      testing_criteria: [exact('{{sample.output_text}}')],
    });
    const lines = [
      { item: { answer: 'a' }, sample: { output_text: 'a' } },
      { item: { answer: 'b' }, sample: { output_text: 'c' } },
      { item: { answer: 'd' }, sample: { output_text: 'd' } },
    ];
    const file = await client.files.create({
      file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n')), 'rows.jsonl'),
      purpose: 'evals',
    });
    const created = await client.evals.runs.create(ev.id, {
      data_source: { type: 'jsonl', source: { type: 'file_id', id: file.id } },
    });
    const run = await finished(ev.id, created.id);
    expect(run.result_counts).toEqual({ total: 3, passed: 2, failed: 1, errored: 0 });
    const missing = await h.call('POST', `/v1/evals/${ev.id}/runs`, {
      body: { data_source: { type: 'jsonl', source: { type: 'file_id', id: 'ds_nothing' } } },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toMatch(/data_source\.source\.id: No file 'ds_nothing'/);
  }, 120_000);

  it('grades stored completions selected by metadata, and regenerates them from item.input', async () => {
    const ask = (country: string, suite: string, how = '') =>
      client.chat.completions.create({
        model: 'gen',
        messages: [{ role: 'user', content: `Capital of ${country}${how}?` }],
        store: true,
        metadata: { suite },
      });
    await ask('France', 'geo');
    await ask('Italy', 'geo', ' wrongly');
    await ask('Spain', 'other');
    // No wait: run creation reads the calls just answered (it waits for the task-log writer).
    const ev = await client.evals.create({
      data_source_config: { type: 'stored_completions', metadata: { suite: 'geo' } },
      testing_criteria: [
        {
          type: 'string_check',
          name: 'paris',
          input: '{{sample.output_text}}',
          reference: 'Paris',
          operation: 'eq',
        },
      ],
    });
    const graded = await client.evals.runs.create(ev.id, {
      data_source: {
        type: 'completions',
        source: { type: 'stored_completions', metadata: { suite: 'geo' } },
      },
    });
    const gradedRun = await finished(ev.id, graded.id);
    expect(gradedRun.result_counts).toEqual({ total: 2, passed: 1, failed: 1, errored: 0 });
    expect(gradedRun.per_model_usage).toEqual([]);
    const calls = mock.requests.length;

    const regenerated = await client.evals.runs.create(ev.id, {
      data_source: {
        type: 'completions',
        model: 'gen',
        input_messages: { type: 'item_reference', item_reference: 'item.input' },
        source: { type: 'stored_completions', metadata: { suite: 'geo' } },
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
    const items = await client.evals.runs.outputItems.list(regenRun.id, { eval_id: ev.id });
    expect(items.data.map((i) => i.sample.input)).toEqual([
      [{ role: 'user', content: 'Capital of France?' }],
      [{ role: 'user', content: 'Capital of Italy wrongly?' }],
    ]);
  }, 120_000);

  it('a responses run sends text.format json_schema and tools; output items are chat-style', async () => {
    const ev = await client.evals.create({
      data_source_config: { type: 'custom', item_schema: { type: 'object' } },
      testing_criteria: [exact('{{sample.output_json.city}}')],
    });
    const created = await client.evals.runs.create(ev.id, {
      data_source: {
        type: 'responses',
        model: 'gen',
        input_messages: {
          type: 'template',
          template: [{ role: 'user', content: 'Capital of {{item.country}}?' }],
        },
        sampling_params: {
          text: {
            format: {
              type: 'json_schema',
              name: 'city',
              schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
              strict: true,
            },
          },
        },
        source: {
          type: 'file_content',
          content: [
            { item: { country: 'France', answer: 'Paris' } },
            { item: { country: 'Italy', answer: 'Milan' } },
          ],
        },
      },
    });
    const run = await finished(ev.id, created.id);
    expect(run.result_counts).toEqual({ total: 2, passed: 1, failed: 1, errored: 0 });
    const sent = mock.requests.filter((r) => r.lastUserText === 'Capital of France?').at(-1)?.body;
    expect(sent?.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'city',
        schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        strict: true,
      },
    });

    const toolsEval = await client.evals.create({
      data_source_config: { type: 'custom', item_schema: { type: 'object' } },
      testing_criteria: [exact('{{sample.output_tools[0].function.arguments.city}}')],
    });
    const toolRun = await client.evals.runs.create(toolsEval.id, {
      data_source: {
        type: 'responses',
        model: 'gen',
        input_messages: {
          type: 'template',
          template: [{ role: 'user', content: 'weather in {{item.country}}' }],
        },
        sampling_params: {
          tools: [{ type: 'function', name: 'weather', parameters: { type: 'object' }, strict: false }],
        },
        source: { type: 'file_content', content: [{ item: { country: 'Spain', answer: 'Madrid' } }] },
      },
    });
    const done = await finished(toolsEval.id, toolRun.id);
    expect(done.result_counts).toEqual({ total: 1, passed: 1, failed: 0, errored: 0 });
    const toolSent = mock.requests.find((r) => r.lastUserText === 'weather in Spain')?.body;
    expect(toolSent?.tools).toEqual([
      { type: 'function', function: { name: 'weather', parameters: { type: 'object' }, strict: false } },
    ]);
    const [item] = (await client.evals.runs.outputItems.list(toolRun.id, { eval_id: toolsEval.id })).data;
    expect(item?.sample.output).toEqual([
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          expect.objectContaining({
            type: 'function',
            function: { name: 'weather', arguments: '{"city":"Madrid"}' },
          }),
        ],
      },
    ]);
    expect(item?.sample.finish_reason).toBe('tool_calls');
  }, 120_000);
});
