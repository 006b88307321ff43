import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type MockRequest,
  type MockUpstream,
  mockEmbedding,
  startMockUpstream,
} from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
let mock: MockUpstream;
let client: OpenAI;

/** The judge's replies are scripted by the prompt: the test's text says what to answer. */
function reply(req: MockRequest) {
  const text = req.lastUserText;
  const format = req.body?.response_format?.json_schema?.name;
  if (text.includes('GIBBERISH'))
    return { text: 'I would rather not say', promptTokens: 5, completionTokens: 3 };
  if (format === 'label') {
    return {
      json: { label: text.includes('rude') ? 'rude' : 'polite', reasoning: 'tone' },
      promptTokens: 11,
      completionTokens: 4,
    };
  }
  if (text.includes('PROSE'))
    return {
      text: 'Sure. ```json\n{"score": 3, "reasoning": "fenced"}\n```',
      promptTokens: 10,
      completionTokens: 6,
    };
  if (text.includes('OUTSIDE')) return { json: { score: 42, reasoning: 'too high' } };
  return { json: { score: 0.7, reasoning: 'fine' }, promptTokens: 20, completionTokens: 5 };
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply, record: true });
  h = await startHarness();
  for (const label of ['judge', 'embedder']) {
    const res = await h.call('POST', '/v1/models', {
      body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: label },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  client = new OpenAI({ apiKey: h.admin.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const run = (body: OpenAI.FineTuning.Alpha.GraderRunParams | Record<string, unknown>) =>
  client.fineTuning.alpha.graders.run(body as OpenAI.FineTuning.Alpha.GraderRunParams);

describe('POST /v1/fine_tuning/alpha/graders/run with the official SDK', () => {
  it('string_check compares the rendered templates', async () => {
    const res = await run({
      grader: {
        type: 'string_check',
        name: 'exact',
        operation: 'eq',
        input: '{{sample.output_text}}',
        reference: '{{item.answer}}',
      },
      model_sample: 'Paris',
      item: { answer: 'Paris' },
    });
    expect(res.reward).toBe(1);
    expect(res.sub_rewards).toEqual({});
    expect(res.metadata.name).toBe('exact');
    expect(res.metadata.type).toBe('string_check');
    expect(Object.values(res.metadata.errors).filter((v) => v === true)).toEqual([]);
    expect(res.metadata.execution_time).toBeGreaterThanOrEqual(0);
    expect(res.metadata.token_usage).toBeNull();
    expect(res.metadata.sampled_model_name).toBeNull();
    const ilike = await run({
      grader: {
        type: 'string_check',
        name: 'i',
        operation: 'ilike',
        input: '{{sample.output_json.city}}',
        reference: 'paris',
      },
      model_sample: '{"city": "PARIS, France"}',
    });
    expect(ilike.reward).toBe(1);
  });

  it('text_similarity computes each metric, cosine through the embeddings model', async () => {
    const rouge = await run({
      grader: {
        type: 'text_similarity',
        name: 'r',
        evaluation_metric: 'rouge_l',
        input: '{{sample.output_text}}',
        reference: 'the cat sat down',
      },
      model_sample: 'the cat sat',
    });
    expect(rouge.reward).toBeCloseTo(6 / 7, 12);
    const fuzzy = await run({
      grader: {
        type: 'text_similarity',
        name: 'f',
        evaluation_metric: 'fuzzy_match',
        input: 'abcd',
        reference: 'abce',
      },
      model_sample: '',
    });
    expect(fuzzy.reward).toBeCloseTo(0.75, 12);
    const cosine = await run({
      grader: {
        type: 'text_similarity',
        name: 'c',
        evaluation_metric: 'cosine',
        input: '{{sample.output_text}}',
        reference: 'aab',
        embedding_model: 'embedder',
      },
      model_sample: 'ab',
    });
    const [a, b] = [mockEmbedding('ab'), mockEmbedding('aab')];
    const dot = a.reduce((s, x, i) => s + x * (b[i] as number), 0);
    const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    expect(cosine.reward).toBeCloseTo(dot / (norm(a) * norm(b)), 12);
    expect(cosine.model_grader_token_usage_per_model).toEqual({
      embedder: { prompt_tokens: 24, completion_tokens: 0, total_tokens: 24 },
    });
  });

  it('score_model asks the judge for structured output and reports its usage', async () => {
    const res = await run({
      grader: {
        type: 'score_model',
        name: 'quality',
        model: 'judge',
        input: [
          { role: 'developer', content: 'Grade the answer.' },
          {
            role: 'user',
            content: [{ type: 'input_text', text: 'Q: {{item.q}} A: {{sample.output_text}}' }],
          },
        ],
        range: [0, 1],
        sampling_params: { temperature: 0, seed: 7, max_completions_tokens: 50 },
      },
      model_sample: '4',
      item: { q: '2+2?' },
    });
    expect(res.reward).toBe(0.7);
    expect(res.metadata.token_usage).toBe(25);
    expect(res.model_grader_token_usage_per_model).toEqual({
      judge: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 },
    });
    const sent = mock.requests.at(-1)?.body;
    expect(sent.response_format.type).toBe('json_schema');
    expect(sent.temperature).toBe(0);
    expect(sent.seed).toBe(7);
    expect(sent.max_completion_tokens).toBe(50);
    expect(sent.messages[1].content).toBe('Q: 2+2? A: 4');
  });

  it('score_model falls back to parsing prose, and never scores an unparseable or out-of-range reply', async () => {
    const grader = (text: string) => ({
      type: 'score_model' as const,
      name: 's',
      model: 'judge',
      input: [{ role: 'user' as const, content: text }],
      range: [0, 5],
    });
    expect((await run({ grader: grader('PROSE {{sample.output_text}}'), model_sample: 'x' })).reward).toBe(3);
    const bad = await run({ grader: grader('GIBBERISH'), model_sample: 'x' });
    expect(bad.reward).toBe(0);
    expect(bad.metadata.errors.model_grader_parse_error).toBe(true);
    expect(bad.metadata.token_usage).toBe(16); // asked twice
    const outside = await run({ grader: grader('OUTSIDE'), model_sample: 'x' });
    expect(outside.metadata.errors.model_grader_parse_error).toBe(true);
  });

  it('label_model passes on a passing label only', async () => {
    const grader = {
      type: 'label_model' as const,
      name: 'tone',
      model: 'judge',
      input: [{ role: 'user' as const, content: 'Tone of: {{sample.output_text}}' }],
      labels: ['polite', 'rude'],
      passing_labels: ['polite'],
    };
    expect((await run({ grader, model_sample: 'thank you' })).reward).toBe(1);
    const rude = await run({ grader, model_sample: 'rude words' });
    expect(rude.reward).toBe(0);
    expect(rude.metadata.scores).toEqual({ label: 'rude' });
    expect(mock.requests.at(-1)?.body.response_format.json_schema.schema.properties.label.enum).toEqual([
      'polite',
      'rude',
    ]);
  });

  it('python runs grade(sample, item) in the sandbox; a failing grade is a runtime error', async () => {
    const ok = await run({
      grader: {
        type: 'python',
        name: 'py',
        image_tag: '2025-05-08',
        source:
          'def grade(sample, item):\n    return 1.0 if sample["output_text"] == item["answer"] else 0.25\n',
      },
      model_sample: '42',
      item: { answer: '42' },
    });
    expect(ok.reward).toBe(1);
    const failing = await run({
      grader: { type: 'python', name: 'py', source: 'def grade(sample, item):\n    return 1 / 0\n' },
      model_sample: '42',
    });
    expect(failing.metadata.errors.python_grader_runtime_error).toBe(true);
    expect(failing.metadata.errors.python_grader_runtime_error_details).toMatch(/ZeroDivisionError/);
  });

  it('multi combines sub-graders by calculate_output and reports formula errors', async () => {
    const res = await run({
      grader: {
        type: 'multi',
        name: 'combo',
        calculate_output: '0.5 * exact + 0.5 * tone',
        graders: {
          exact: {
            type: 'string_check',
            name: 'exact',
            operation: 'eq',
            input: '{{sample.output_text}}',
            reference: 'hi',
          },
          tone: {
            type: 'label_model',
            name: 'tone',
            model: 'judge',
            input: [{ role: 'user', content: 'rude? {{sample.output_text}}' }],
            labels: ['polite', 'rude'],
            passing_labels: ['polite'],
          },
        },
      },
      model_sample: 'hi',
    });
    expect(res.sub_rewards).toEqual({ exact: 1, tone: 0 });
    expect(res.reward).toBe(0.5);
    const single = await run({
      grader: {
        type: 'multi',
        name: 'one',
        calculate_output: 'exact * 2',
        graders: { type: 'string_check', name: 'exact', operation: 'eq', input: 'a', reference: 'a' },
      },
      model_sample: 'x',
    });
    expect(single.reward).toBe(2);
    // A formula that parses but fails only on evaluation is reported in metadata.errors.
    const broken = await run({
      grader: {
        type: 'multi',
        name: 'one',
        calculate_output: 'exact / 0 * 0',
        graders: { type: 'string_check', name: 'exact', operation: 'eq', input: 'a', reference: 'a' },
      },
      model_sample: 'x',
    });
    expect(broken.metadata.errors.other_error).toBe(true);
  });

  it('an unresolved template reference errors the sample with its reason', async () => {
    const res = await run({
      grader: { type: 'string_check', name: 's', operation: 'eq', input: '{{item.missing}}', reference: 'x' },
      model_sample: 'x',
      item: { present: 1 },
    });
    expect(res.metadata.errors.invalid_variable_error).toBe(true);
    expect((res.metadata as unknown as { error_message: string }).error_message).toMatch(
      /no field 'missing'/,
    );
  });
});

describe('graders errors as the SDK expects them', () => {
  it('400 BadRequestError naming every problem', async () => {
    const err = await run({
      grader: {
        type: 'label_model',
        name: 'l',
        model: 'judge',
        input: [{ role: 'judge', content: '{{x}}' }],
        labels: ['a'],
        passing_labels: ['b'],
      },
      model_sample: 3,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const message = (err as InstanceType<typeof OpenAI.BadRequestError>).message;
    expect(message).toMatch(/grader\.input\.0\.role/);
    expect(message).toMatch(/model_sample/);
    const formula = await run({
      grader: {
        type: 'multi',
        name: 'm',
        calculate_output: 'a +',
        graders: { type: 'string_check', name: 'a', operation: 'eq', input: 'x', reference: 'x' },
      },
      model_sample: 'x',
    }).catch((e: unknown) => e);
    expect(formula).toBeInstanceOf(OpenAI.BadRequestError);
    expect((formula as Error).message).toMatch(/calculate_output/);
  });

  it('validate answers the grader, or 400 with the problems', async () => {
    const grader = {
      type: 'string_check' as const,
      name: 'g',
      operation: 'eq' as const,
      input: '{{sample.output_text}}',
      reference: 'x',
    };
    expect(await client.fineTuning.alpha.graders.validate({ grader })).toEqual({ grader });
    // Every type comes back as sent, nested graders and all.
    const multi = {
      type: 'multi' as const,
      name: 'm',
      calculate_output: 'max(a, s)',
      graders: {
        a: grader,
        s: {
          type: 'score_model' as const,
          name: 's',
          model: 'judge',
          input: [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: '{{item.q}}' }] }],
          range: [0, 10],
          sampling_params: { temperature: 0.5, max_completions_tokens: 20 },
        },
      },
    };
    expect(
      await client.fineTuning.alpha.graders.validate({
        grader: multi as unknown as OpenAI.Graders.MultiGrader,
      }),
    ).toEqual({ grader: multi });
    const python = {
      type: 'python' as const,
      name: 'p',
      source: 'def grade(sample, item):\n    return 1\n',
      image_tag: 'x',
    };
    expect(await client.fineTuning.alpha.graders.validate({ grader: python })).toEqual({ grader: python });
    const err = await client.fineTuning.alpha.graders
      .validate({ grader: { ...grader, operation: 'contains' as 'eq', input: '{{nope.x}}' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toMatch(/operation/);
  });

  it("another project's model is not found: 400 naming the model", async () => {
    const other = await h.key(['*'], 'other');
    const otherClient = new OpenAI({ apiKey: other.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    const err = await otherClient.fineTuning.alpha.graders
      .run({
        grader: { type: 'score_model', name: 's', model: 'judge', input: [{ role: 'user', content: 'x' }] },
        model_sample: 'x',
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toMatch(/model 'judge'/);
  });

  it('401 AuthenticationError for a wrong key; 403 without the permission', async () => {
    const wrong = new OpenAI({ apiKey: 'eg_wrong', baseURL: `${h.url}/v1`, maxRetries: 0 });
    const err = await wrong.fineTuning.alpha.graders
      .validate({ grader: { type: 'string_check', name: 'g', operation: 'eq', input: 'a', reference: 'a' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    const reader = await h.key(['evaluators:read']);
    const limited = new OpenAI({ apiKey: reader.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    const denied = await limited.fineTuning.alpha.graders
      .run({
        grader: { type: 'string_check', name: 'g', operation: 'eq', input: 'a', reference: 'a' },
        model_sample: 'a',
      })
      .catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const runner = await h.key(['evaluation:write']);
    const noModels = new OpenAI({ apiKey: runner.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    const needsModels = await noModels.fineTuning.alpha.graders
      .run({
        grader: { type: 'score_model', name: 's', model: 'judge', input: [{ role: 'user', content: 'x' }] },
        model_sample: 'x',
      })
      .catch((e: unknown) => e);
    expect(needsModels).toBeInstanceOf(OpenAI.PermissionDeniedError);
  });
});
