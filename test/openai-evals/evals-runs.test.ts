import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { finishedRun } from './eval-run.js';

let h: Harness;
let mock: MockUpstream;
let slow: MockUpstream;
let client: OpenAI;

/** Judges compare `Answer: X` with `Expected: Y`; the generator answers capitals, or calls a tool. */
function reply(req: MockRequest) {
  const text = req.lastUserText;
  const graded = /Answer: (.*) Expected: (.*)$/s.exec(text);
  if (graded) {
    const right = graded[1] === graded[2];
    if (req.body?.response_format?.json_schema?.name === 'label') {
      return {
        json: { label: right ? 'correct' : 'wrong', reasoning: 'compared' },
        promptTokens: 3,
        completionTokens: 2,
      };
    }
    return {
      json: { score: right ? 0.9 : 0.2, reasoning: 'compared' },
      promptTokens: 3,
      completionTokens: 2,
    };
  }
  const stock = /Quote (\w+)/.exec(text);
  if (stock)
    return {
      toolCalls: [{ name: 'lookup', arguments: { symbols: [stock[1]] } }],
      promptTokens: 9,
      completionTokens: 4,
    };
  const capitals: Record<string, string> = { France: 'Paris', Italy: 'Rome', Spain: 'Lisbon' };
  const country = /Capital of (\w+)\?/.exec(text)?.[1] ?? '';
  return { text: capitals[country] ?? 'unknown', promptTokens: 7, completionTokens: 2 };
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply, record: true });
  slow = await startMockUpstream({ reply: () => 'late', latencyMs: 3000 });
  h = await startHarness();
  for (const [label, upstream] of [
    ['judge', mock],
    ['gen', mock],
    ['slow', slow],
  ] as const) {
    const res = await h.call('POST', '/v1/models', {
      body: { label, provider: 'openai-compatible', base_url: upstream.baseUrl, upstream_model: label },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  client = new OpenAI({ apiKey: h.admin.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
  await slow?.close();
});

const judgeInput = [
  { role: 'user' as const, content: 'Answer: {{sample.output_text}} Expected: {{item.answer}}' },
];
const criteria = [
  {
    type: 'string_check',
    name: 'exact',
    input: '{{sample.output_text}}',
    reference: '{{ item.answer }}',
    operation: 'eq',
  },
  {
    type: 'text_similarity',
    name: 'fuzzy',
    input: '{{sample.output_text}}',
    reference: '{{item.answer}}',
    evaluation_metric: 'fuzzy_match',
    pass_threshold: 0.8,
  },
  { type: 'score_model', name: 'judged', model: 'judge', input: judgeInput, pass_threshold: 0.5 },
  {
    type: 'label_model',
    name: 'labelled',
    model: 'judge',
    input: judgeInput,
    labels: ['correct', 'wrong'],
    passing_labels: ['correct'],
  },
  {
    type: 'python',
    name: 'py',
    source:
      "def grade(sample, item):\n    if sample['output_text'] == 'Lisbon':\n        raise ValueError('boom')\n    return 1.0 if sample['output_text'] == item['answer'] else 0.0\n",
    pass_threshold: 0.5,
  },
] as unknown as OpenAI.Evals.EvalCreateParams['testing_criteria'];

const finished = (evalId: string, runId: string) => finishedRun(client, evalId, runId);

async function allItems(evalId: string, runId: string, query: Record<string, unknown> = {}) {
  const out: OpenAI.Evals.Runs.OutputItemListResponse[] = [];
  for await (const item of client.evals.runs.outputItems.list(runId, { eval_id: evalId, limit: 2, ...query }))
    out.push(item);
  return out;
}

describe('eval runs with the official SDK', () => {
  it('a jsonl run grades with all five grader types; counts and output items match hand-computed values', async () => {
    const ev = await client.evals.create({
      name: 'capitals',
      data_source_config: {
        type: 'custom',
        item_schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
        include_sample_schema: true,
      },
      testing_criteria: criteria,
    });
    const content = [
      { item: { answer: 'Paris' }, sample: { output_text: 'Paris' } },
      {
        item: { answer: 'Rome' },
        sample: {
          model: 'someone',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Roma' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
        },
      },
      {
        item: { answer: 'Berlin' },
        sample: {
          object: 'response',
          output: [
            { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Berlin' }] },
          ],
        },
      },
      { item: { answer: 'Madrid' }, sample: { output_text: 'Lisbon' } },
    ];
    const created = await client.evals.runs.create(ev.id, {
      name: 'jsonl',
      metadata: { kind: 'stored' },
      data_source: { type: 'jsonl', source: { type: 'file_content', content } },
    });
    expect(created).toMatchObject({
      object: 'eval.run',
      eval_id: ev.id,
      name: 'jsonl',
      metadata: { kind: 'stored' },
      model: '',
    });
    expect(['queued', 'in_progress', 'completed']).toContain(created.status);
    expect(created.report_url).toBe(`${h.url}/projects/${h.admin.projectId}/runs/${created.id}`);
    const run = await finished(ev.id, created.id);
    expect(run.status).toBe('completed');
    expect(run.error).toBeNull();
    expect(run.result_counts).toEqual({ total: 4, passed: 2, failed: 1, errored: 1 });
    expect(run.per_testing_criteria_results).toEqual([
      { testing_criteria: 'exact', passed: 2, failed: 2 },
      { testing_criteria: 'fuzzy', passed: 2, failed: 2 },
      { testing_criteria: 'judged', passed: 2, failed: 2 },
      { testing_criteria: 'labelled', passed: 2, failed: 2 },
      { testing_criteria: 'py', passed: 2, failed: 1 },
    ]);
    expect(run.per_model_usage).toEqual([]);
    // The same run is an Evalgate run.
    const evalgate = await h.call('GET', `/v1/evaluation/runs/${created.id}`);
    expect(evalgate.status).toBe(200);
    expect(evalgate.body.status).toBe('completed');

    const items = await allItems(ev.id, run.id);
    expect(items.map((i) => i.datasource_item_id)).toEqual([0, 1, 2, 3]);
    expect(items.map((i) => i.status)).toEqual(['pass', 'fail', 'pass', 'fail']);
    const [paris, rome, berlin, madrid] = items;
    expect(paris?.datasource_item).toEqual({ answer: 'Paris' });
    expect(paris?.results.map((r) => [r.name, r.passed, r.score])).toEqual([
      ['exact', true, 1],
      ['fuzzy', true, 1],
      ['judged', true, 0.9],
      ['labelled', true, 1],
      ['py', true, 1],
    ]);
    // rapidfuzz's ratio of Roma / Rome: 1 - 2 / 8.
    expect(rome?.results.find((r) => r.name === 'fuzzy')?.score).toBeCloseTo(0.75, 9);
    expect(rome?.results.every((r) => !r.passed)).toBe(true);
    expect(rome?.sample).toMatchObject({
      output: [{ role: 'assistant', content: 'Roma' }],
      model: 'someone',
      finish_reason: 'stop',
      usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6, cached_tokens: 0 },
    });
    expect(berlin?.sample.output).toEqual([{ role: 'assistant', content: 'Berlin' }]);
    expect(madrid?.results.find((r) => r.name === 'py')?.passed).toBe(false);
    expect(madrid?.sample.error?.message).toMatch(/boom/);

    expect((await allItems(ev.id, run.id, { status: 'pass' })).map((i) => i.datasource_item_id)).toEqual([
      0, 2,
    ]);
    expect(
      (await allItems(ev.id, run.id, { status: 'fail', order: 'desc' })).map((i) => i.datasource_item_id),
    ).toEqual([3, 1]);
    const one = await client.evals.runs.outputItems.retrieve(rome?.id ?? '', {
      eval_id: ev.id,
      run_id: run.id,
    });
    expect(one).toEqual(rome);
  }, 120_000);

  it('a completions run generates through a registered model from a template; per_model_usage is exact', async () => {
    const ev = await client.evals.create({
      data_source_config: {
        type: 'custom',
        item_schema: {
          type: 'object',
          properties: { country: { type: 'string' }, answer: { type: 'string' } },
        },
      },
      testing_criteria: [criteria[0]] as OpenAI.Evals.EvalCreateParams['testing_criteria'],
    });
    const created = await client.evals.runs.create(ev.id, {
      data_source: {
        type: 'completions',
        model: 'gen',
        input_messages: {
          type: 'template',
          template: [
            { role: 'developer', content: 'Answer with the city only.' },
            {
              type: 'message',
              role: 'user',
              content: { type: 'input_text', text: 'Capital of {{item.country}}?' },
            },
          ],
        },
        sampling_params: {
          temperature: 0.2,
          seed: 7,
          max_completions_tokens: 20,
        } as OpenAI.Evals.CreateEvalCompletionsRunDataSource.SamplingParams,
        source: {
          type: 'file_content',
          content: [
            { item: { country: 'France', answer: 'Paris' } },
            { item: { country: 'Italy', answer: 'Rome' } },
            { item: { country: 'Spain', answer: 'Madrid' } },
            { item: { answer: 'Nowhere' } },
          ],
        },
      },
    });
    const run = await finished(ev.id, created.id);
    expect(run.status).toBe('completed');
    expect(run.model).toBe('gen');
    expect(run.per_model_usage).toEqual([
      {
        model_name: 'gen',
        invocation_count: 3,
        prompt_tokens: 21,
        completion_tokens: 6,
        total_tokens: 27,
        cached_tokens: 0,
      },
    ]);
    expect(run.result_counts).toEqual({ total: 4, passed: 2, failed: 1, errored: 1 });
    const items = await allItems(ev.id, run.id);
    expect(items[0]?.sample).toMatchObject({
      input: [
        { role: 'developer', content: 'Answer with the city only.' },
        { role: 'user', content: 'Capital of France?' },
      ],
      output: [{ role: 'assistant', content: 'Paris' }],
      finish_reason: 'stop',
      model: expect.any(String),
      usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9, cached_tokens: 0 },
      temperature: 0.2,
      seed: 7,
      max_completion_tokens: 20,
    });
    const sent = mock.requests.find((r) => r.lastUserText === 'Capital of France?')?.body;
    expect(sent).toMatchObject({ temperature: 0.2, seed: 7, max_completion_tokens: 20 });
    // An unresolved reference errors the item with the reason, never an empty string.
    expect(items[3]?.status).toBe('fail');
    expect(items[3]?.sample.error?.message).toMatch(/item\.country.*no field 'country'/);
  }, 120_000);

  it('template paths reach into tool-call arguments; item_reference supplies whole message lists', async () => {
    const ev = await client.evals.create({
      data_source_config: { type: 'custom', item_schema: { type: 'object' } },
      testing_criteria: [
        {
          type: 'string_check',
          name: 'symbol',
          input: '{{sample.output_tools[0].function.arguments.symbols[0]}}',
          reference: '{{item.symbol}}',
          operation: 'eq',
        },
      ],
    });
    const created = await client.evals.runs.create(ev.id, {
      data_source: {
        type: 'completions',
        model: 'gen',
        input_messages: { type: 'item_reference', item_reference: 'item.input' },
        sampling_params: {
          tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
        },
        source: {
          type: 'file_content',
          content: [
            { item: { input: [{ role: 'user', content: 'Quote AAPL' }], symbol: 'AAPL' } },
            { item: { input: [{ role: 'user', content: 'Quote MSFT' }], symbol: 'GOOG' } },
          ],
        },
      },
    });
    const run = await finished(ev.id, created.id);
    expect(run.result_counts).toEqual({ total: 2, passed: 1, failed: 1, errored: 0 });
    const [first] = await allItems(ev.id, run.id);
    expect(first?.sample.finish_reason).toBe('tool_calls');
    expect(first?.sample.output[0]).toMatchObject({
      role: 'assistant',
      tool_calls: [{ type: 'function', function: { name: 'lookup', arguments: '{"symbols":["AAPL"]}' } }],
    });
  }, 120_000);

  it('rejects inline items that break the item schema, naming them; cancels and deletes runs', async () => {
    const ev = await client.evals.create({
      data_source_config: {
        type: 'custom',
        item_schema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      },
      testing_criteria: [criteria[0]] as OpenAI.Evals.EvalCreateParams['testing_criteria'],
    });
    const bad = await client.evals.runs
      .create(ev.id, {
        data_source: {
          type: 'jsonl',
          source: {
            type: 'file_content',
            content: [{ item: { n: 1 } }, { item: { n: 'two' } }, { item: {} }],
          },
        },
      })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as Error).message).toMatch(/content\.1\.item.*item_schema.*\/n must be number/);
    expect((bad as Error).message).toMatch(/content\.2\.item.*required property 'n'/);
    const wrongKind = await h.call('POST', `/v1/evals/${ev.id}/runs`, {
      body: { data_source: { type: 'completions', source: { type: 'file_content', content: [] } } },
    });
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.body.error.message).toMatch(/data_source\.model: Field required/);
    expect(wrongKind.body.error.message).toMatch(/data_source\.input_messages/);

    const slowRun = await client.evals.runs.create(ev.id, {
      data_source: {
        type: 'completions',
        model: 'slow',
        input_messages: { type: 'template', template: [{ role: 'user', content: 'n={{item.n}}' }] },
        source: { type: 'file_content', content: Array.from({ length: 5 }, (_, n) => ({ item: { n } })) },
      },
    });
    const canceled = await client.evals.runs.cancel(slowRun.id, { eval_id: ev.id });
    expect(canceled.id).toBe(slowRun.id);
    const ended = await finished(ev.id, slowRun.id);
    expect(ended.status).toBe('canceled');
    expect((await client.evals.runs.list(ev.id, { status: 'canceled' })).data.map((r) => r.id)).toEqual([
      slowRun.id,
    ]);
    expect((await client.evals.runs.list(ev.id, { status: 'completed' })).data).toEqual([]);

    const outsider = await h.key(['*'], 'elsewhere');
    const other = new OpenAI({ apiKey: outsider.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    await expect(other.evals.runs.retrieve(slowRun.id, { eval_id: ev.id })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    await expect(other.evals.runs.outputItems.list(slowRun.id, { eval_id: ev.id })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    const wrong = new OpenAI({ apiKey: 'eg_wrong', baseURL: `${h.url}/v1`, maxRetries: 0 });
    await expect(wrong.evals.runs.list(ev.id)).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

    const deleted = await client.evals.runs.delete(slowRun.id, { eval_id: ev.id });
    expect(deleted).toEqual({ object: 'eval.run.deleted', deleted: true, run_id: slowRun.id });
    await expect(client.evals.runs.retrieve(slowRun.id, { eval_id: ev.id })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
  }, 120_000);
});
