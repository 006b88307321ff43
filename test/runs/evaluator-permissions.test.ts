import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type CallResult, type Harness, startHarness } from '../helpers/harness.js';

/**
 * An evaluator that calls a model (score_model, label_model, text_similarity by cosine) asks its
 * creator for `models:read` and `inference:write` wherever it is used: a run, a monitor, an OpenAI eval
 * run. Each origin refuses a key without them (403 naming the permission) and accepts one with them.
 */

let h: Harness;
let mock: MockUpstream;

function reply(req: MockRequest) {
  if (req.body?.response_format?.json_schema?.name === 'label')
    return { json: { label: 'yes', reasoning: 'ok' } };
  return { json: { score: 1, reasoning: 'ok' } };
}

const messages = [{ role: 'user', content: 'Rate {{sample.output_text}}' }];

/** The model-calling graders, by name, as evaluators and as an eval's testing criteria. */
const GRADERS: Record<string, Record<string, unknown>> = {
  score_model: { type: 'score_model', model: 'judge', input: messages, pass_threshold: 0.5 },
  label_model: {
    type: 'label_model',
    model: 'judge',
    input: messages,
    labels: ['yes', 'no'],
    passing_labels: ['yes'],
  },
  cosine: {
    type: 'text_similarity',
    input: '{{sample.output_text}}',
    reference: '{{item.expected}}',
    evaluation_metric: 'cosine',
    embedding_model: 'embedder',
  },
};

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  h = await startHarness();
  for (const label of ['judge', 'embedder']) {
    const res = await h.call('POST', '/v1/models', {
      body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: label },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  expect((await h.call('POST', '/v1/containers', { body: { label: 'c' } })).status).toBe(201);
  const ds = await h.call('POST', '/v1/datasets', {
    body: { label: 'd', items: [{ input: 'q', output: 'a', expected: 'a' }] },
  });
  expect(ds.status, JSON.stringify(ds.body)).toBe(201);
  for (const [name, grader] of Object.entries(GRADERS)) {
    const ev = await h.call('POST', '/v1/evaluators', { body: { ...grader, name } });
    expect(ev.status, JSON.stringify(ev.body)).toBe(201);
  }
  const exact = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'string_check',
      name: 'exact',
      input: '{{sample.output_text}}',
      reference: 'a',
      operation: 'eq',
    },
  });
  expect(exact.status, JSON.stringify(exact.body)).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const MODELS = ['models:read', 'inference:write'];

/** What the checks read of a creation's answer: the created object's id, or the error. */
interface Reply {
  id: string;
  error: { code: string; message: string; details: unknown };
}

/**
 * `create` refused without `models:read`, then without `inference:write`, each 403 naming it and
 * saying why (`<subject> uses|calls judge models`); accepted with both, as `created`.
 */
async function refusedThenAllowed(
  base: string[],
  create: (key: string) => Promise<CallResult<Reply>>,
  subject: string,
  created: number,
): Promise<Reply> {
  const steps: [string[], string, string][] = [
    [base, 'models:read', `${subject} uses`],
    [[...base, 'models:read'], 'inference:write', `${subject} calls`],
  ];
  for (const [granted, missing, why] of steps) {
    const res = await create((await h.key(granted)).key);
    expect(res.status, `${granted} → ${JSON.stringify(res.body)}`).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'permission_denied', details: { required: missing } });
    expect(res.body.error.message).toContain(why);
  }
  const ok = await create((await h.key([...base, ...MODELS])).key);
  expect(ok.status, JSON.stringify(ok.body)).toBe(created);
  return ok.body;
}

describe('an evaluator that calls a model asks its creator to call models', () => {
  for (const name of Object.keys(GRADERS)) {
    it(`a run with ${name}`, async () => {
      const src = { type: 'dataset', dataset: 'd' };
      const body = { container: 'c', evaluators: [name], sample: src, ground_truth: src };
      await refusedThenAllowed(
        ['evaluation:*', 'evaluators:read', 'data:read'],
        (key) => h.call('POST', '/v1/evaluation/runs', { key, body }),
        'the run',
        201,
      );
    });

    it(`a monitor with ${name}`, async () => {
      let n = 0;
      const monitor = await refusedThenAllowed(
        ['evaluation:*', 'evaluators:read', 'logs:read'],
        (key) =>
          h.call('POST', '/v1/monitors', {
            key,
            body: { name: `m-${name}-${n++}`, container: 'c', evaluators: [name] },
          }),
        'the monitor',
        201,
      );
      // Refused attempts created nothing.
      const list = await h.call('GET', '/v1/monitors?container=c');
      const mine = list.body.data.filter((m: { name: string }) => m.name.startsWith(`m-${name}-`));
      expect(mine.map((m: { id: string }) => m.id)).toEqual([monitor.id]);
    });

    it(`an OpenAI eval run with ${name}`, async () => {
      const ev = await h.call('POST', '/v1/evals', {
        body: {
          data_source_config: { type: 'custom', item_schema: { type: 'object' } },
          testing_criteria: [{ ...GRADERS[name], name }],
        },
      });
      expect(ev.status, JSON.stringify(ev.body)).toBe(200);
      const data_source = {
        type: 'jsonl',
        source: {
          type: 'file_content',
          content: [{ item: { expected: 'a' }, sample: { output_text: 'a' } }],
        },
      };
      await refusedThenAllowed(
        ['evaluation:read', 'evaluation:write'],
        (key) => h.call('POST', `/v1/evals/${ev.body.id}/runs`, { key, body: { data_source } }),
        'the run',
        200,
      );
    });
  }

  it('a monitor whose evaluators call no model asks for nothing more', async () => {
    const key = await h.key(['evaluation:*', 'evaluators:read', 'logs:read']);
    const res = await h.call('POST', '/v1/monitors', {
      key: key.key,
      body: { name: 'exact-only', container: 'c', evaluators: ['exact'] },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });
});
