import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { requestSchema, schemaFollowingReply } from '../fixtures/schema-following.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { finishedRun } from './eval-run.js';

/**
 * A cookbook-style eval: a score_model grader on a 1–7 scale and a label_model grader, judged by a
 * model that follows the JSON schema it is sent (and nothing else: the prose range is not read).
 */
let h: Harness;
let mock: MockUpstream;
let client: OpenAI;

beforeAll(async () => {
  mock = await startMockUpstream({ reply: schemaFollowingReply, record: true });
  h = await startHarness();
  const res = await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'judge' },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  client = new OpenAI({ apiKey: h.admin.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const input = [
  { role: 'system' as const, content: 'Rate the answer from 1 (useless) to 7 (perfect).' },
  { role: 'user' as const, content: 'Question: {{item.question}} Answer: {{sample.output_text}}' },
];

describe('model graders state their answer shape in the JSON schema', () => {
  it('a score_model grader with range [1, 7] scores every item within its range', async () => {
    const ev = await client.evals.create({
      name: 'cookbook-range',
      data_source_config: {
        type: 'custom',
        item_schema: { type: 'object', properties: { question: { type: 'string' } } },
        include_sample_schema: true,
      },
      testing_criteria: [
        { type: 'score_model', name: 'quality', model: 'judge', input, range: [1, 7], pass_threshold: 4 },
        {
          type: 'label_model',
          name: 'tone',
          model: 'judge',
          input,
          labels: ['rude', 'neutral', 'polite'],
          passing_labels: ['polite'],
        },
      ] as unknown as OpenAI.Evals.EvalCreateParams['testing_criteria'],
    });
    const content = ['2 + 2?', 'Capital of France?', 'Largest planet?'].map((question, i) => ({
      item: { question },
      sample: { output_text: `answer ${i}` },
    }));
    const created = await client.evals.runs.create(ev.id, {
      name: 'range',
      data_source: { type: 'jsonl', source: { type: 'file_content', content } },
    });
    const run = await finishedRun(client, ev.id, created.id);
    expect(run.status).toBe('completed');
    expect(run.result_counts).toEqual({ total: 3, passed: 3, failed: 0, errored: 0 });

    const items = [];
    for await (const item of client.evals.runs.outputItems.list(run.id, { eval_id: ev.id })) items.push(item);
    expect(items).toHaveLength(3);
    for (const item of items) {
      const quality = item.results.find((r) => r.name === 'quality');
      expect(quality?.score, JSON.stringify(item.results)).toBeGreaterThanOrEqual(1);
      expect(quality?.score).toBeLessThanOrEqual(7);
      expect(item.results.find((r) => r.name === 'tone')).toMatchObject({ passed: true, score: 1 });
    }

    // What the judge model was sent: the range as minimum/maximum, the labels as an enum.
    const schemas = mock.requests.map(requestSchema);
    const score = schemas.find((s) => s?.properties?.score);
    expect(score?.properties?.score).toEqual({ type: 'number', minimum: 1, maximum: 7 });
    const label = schemas.find((s) => s?.properties?.label);
    expect(label?.properties?.label).toEqual({ type: 'string', enum: ['rude', 'neutral', 'polite'] });
  });
});
