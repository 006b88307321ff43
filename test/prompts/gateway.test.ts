import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';

/*
 * The gateway resolves stored prompts: OpenAI's Responses `prompt: {id, version, variables}` sent by the
 * official SDK, and the chat-completions forms (the `prompt` field, the X-Evalgate-Prompt header), against
 * a fake upstream on loopback; the task log names the prompt and version.
 */

let g: Gateway;
let promptId: string;

beforeAll(async () => {
  g = await startGateway();
  for (const [label, api] of [
    ['chat-only', 'chat'],
    ['native', 'responses'],
  ] as const) {
    const res = await g.h.call('POST', '/v1/models', {
      body: { label, base_url: g.mock.baseUrl, upstream_model: `${label}-upstream`, api },
    });
    expect(res.status).toBe(201);
  }
  const created = await g.h.call('POST', '/v1/prompts', {
    body: {
      name: 'support',
      messages: [
        { role: 'system', content: 'You answer for {{company}} in at most {{limit}} words.' },
        { role: 'user', content: 'Question: {{question}}' },
      ],
      variables: { company: 'string', limit: 'number', question: 'string' },
      model: 'chat-only',
      parameters: { temperature: 0.2, max_tokens: 64 },
      commit_message: 'first',
      labels: ['production'],
    },
  });
  expect(created.status).toBe(201);
  promptId = created.body.id;
  const v2 = await g.h.call('POST', '/v1/prompts/support/versions', {
    body: {
      messages: [{ role: 'system', content: 'V2 for {{company}}: {{question}}' }],
      variables: { company: 'string', question: 'string' },
      model: 'chat-only',
      parameters: { temperature: 0.7 },
      commit_message: 'shorter',
      labels: ['staging'],
    },
  });
  expect(v2.status).toBe(201);
  expect(v2.body.version).toBe(2);
});
afterAll(async () => {
  await g.close();
});
beforeEach(() => {
  g.mock.reset();
  g.mock.set({ reply: () => 'Stored prompt answer.', responses: true });
});

async function logById(id: string): Promise<any> {
  const found = (await g.logs('default')).find((l) => l.id === id);
  if (!found) throw new Error(`log ${id} not found`);
  return found;
}

const variables = { company: 'Acme', limit: '30', question: 'Where is my order?' };

describe('Responses: prompt {id, version, variables}', () => {
  it('answers from a stored version (by id), with its model and parameters, and the task log names it', async () => {
    const { data, response } = await g
      .client()
      .responses.create({ prompt: { id: promptId, version: '1', variables } })
      .withResponse();
    expect(data.output_text).toBe('Stored prompt answer.');
    const sent = g.mock.requests[0]!.body;
    expect(sent.model).toBe('chat-only-upstream');
    expect(sent.temperature).toBe(0.2);
    expect(sent.max_tokens).toBe(64);
    expect(sent.prompt).toBeUndefined();
    expect(sent.messages).toEqual([
      { role: 'system', content: 'You answer for Acme in at most 30 words.' },
      { role: 'user', content: 'Question: Where is my order?' },
    ]);
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log.prompt_id).toBe(promptId);
    expect(log.prompt_version).toBe(1);
    const filtered = await g.h.call('GET', `/v1/containers/default/logs?prompt_id=support&prompt_version=1`);
    expect(filtered.body.data.map((l: any) => l.id)).toContain(log.id);
    const none = await g.h.call('GET', `/v1/containers/default/logs?prompt_id=support&prompt_version=2`);
    expect(none.body.data.map((l: any) => l.id)).not.toContain(log.id);
  });

  it('streams from a stored version named by its name and a label, the request overriding the model, input appended', async () => {
    const stream = await g.client().responses.create({
      model: 'native',
      prompt: { id: 'support', version: 'staging', variables: { company: 'Acme', question: 'Hi?' } },
      input: 'Thanks!',
      stream: true,
    });
    let text = '';
    for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
    expect(text).toBe('Stored prompt answer.');
    const upstream = g.mock.requests[0]!;
    expect(upstream.path).toBe('/v1/responses');
    expect(upstream.body.model).toBe('native-upstream');
    expect(upstream.body.prompt).toBeUndefined();
    expect(upstream.body.temperature).toBe(0.7);
    expect(JSON.stringify(upstream.body.input)).toContain('V2 for Acme: Hi?');
    expect(JSON.stringify(upstream.body.input)).toContain('Thanks!');
    const logs = await g.logs('default');
    const last = logs[logs.length - 1];
    expect(last.prompt_id).toBe(promptId);
    expect(last.prompt_version).toBe(2);
    expect(last.metadata.stream).toBe(true);
  });

  it('puts an input_image variable where it stands, as a content part', async () => {
    const img = await g.h.call('POST', '/v1/prompts', {
      body: {
        name: 'describe',
        model: 'native',
        messages: [{ role: 'user', content: 'Describe {{image}} please' }],
      },
    });
    expect(img.status).toBe(201);
    await g.client().responses.create({
      prompt: {
        id: 'describe',
        variables: { image: { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' } },
      },
    });
    const content = g.mock.requests[0]!.body.input[0].content;
    expect(content).toEqual([
      { type: 'input_text', text: 'Describe ' },
      { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' },
      { type: 'input_text', text: ' please' },
    ]);
  });

  it('answers a missing variable with BadRequestError and an unknown prompt or version with NotFoundError', async () => {
    const missing = await g
      .client()
      .responses.create({ prompt: { id: 'support', version: '1', variables: { company: 'Acme' } } })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.BadRequestError);
    expect((missing as InstanceType<typeof OpenAI.APIError>).message).toContain("'limit'");
    expect((missing as InstanceType<typeof OpenAI.APIError>).message).toContain("'question'");
    expect((missing as InstanceType<typeof OpenAI.APIError>).param).toBe('prompt.variables');

    const wrongType = await g
      .client()
      .responses.create({
        prompt: { id: 'support', version: '1', variables: { ...variables, limit: 'thirty' } },
      })
      .catch((e: unknown) => e);
    expect(wrongType).toBeInstanceOf(OpenAI.BadRequestError);
    expect((wrongType as InstanceType<typeof OpenAI.APIError>).message).toContain('finite number');

    const unknown = await g
      .client()
      .responses.create({ prompt: { id: 'no-such-prompt', variables } })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    const version = await g
      .client()
      .responses.create({ prompt: { id: 'support', version: '99', variables } })
      .catch((e: unknown) => e);
    expect(version).toBeInstanceOf(OpenAI.NotFoundError);
    const label = await g
      .client()
      .responses.create({ prompt: { id: 'support', version: 'canary', variables } })
      .catch((e: unknown) => e);
    expect(label).toBeInstanceOf(OpenAI.NotFoundError);
    expect(g.mock.stats.requests).toBe(0);
  });

  it("does not resolve another project's prompt", async () => {
    const other = await g.h.key(['*'], 'other-project');
    const err = await g
      .client({ key: other.key })
      .responses.create({ prompt: { id: promptId, variables } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('chat completions: the prompt field and X-Evalgate-Prompt', () => {
  it('renders the prompt field before the request messages, with typed variables', async () => {
    const { data, response } = await g
      .client()
      .chat.completions.create({
        messages: [{ role: 'user', content: 'And quickly.' }],
        prompt: {
          name: 'support',
          label: 'production',
          variables: { company: 'Acme', limit: 30, question: 'Q?' },
        },
      } as never)
      .withResponse();
    expect((data as OpenAI.ChatCompletion).choices[0]!.message.content).toBe('Stored prompt answer.');
    const sent = g.mock.requests[0]!.body;
    expect(sent.model).toBe('chat-only-upstream');
    expect(sent.prompt).toBeUndefined();
    expect(sent.messages).toEqual([
      { role: 'system', content: 'You answer for Acme in at most 30 words.' },
      { role: 'user', content: 'Question: Q?' },
      { role: 'user', content: 'And quickly.' },
    ]);
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log.prompt_id).toBe(promptId);
    expect(log.prompt_version).toBe(1);
    // The recorded input is what the model was sent.
    expect(log.input).toHaveLength(3);
  });

  it('takes the header form; a moved label serves the next call at once; a wrong type is a BadRequestError', async () => {
    const client = g.client({ headers: { 'X-Evalgate-Prompt': 'support@production' } });
    const ask = () =>
      client.chat.completions
        .create({ prompt: { variables: { company: 'Acme', limit: 5, question: 'Q?' } } } as never)
        .withResponse();
    const first = await ask();
    expect((await logById(first.response.headers.get('x-evalgate-log-id')!)).prompt_version).toBe(1);

    const moved = await g.h.call('PUT', '/v1/prompts/support/labels/production', { body: { version: 2 } });
    expect(moved.status).toBe(200);
    const second = await ask();
    expect(g.mock.requests[1]!.body.messages[0].content).toBe('V2 for Acme: Q?');
    expect((await logById(second.response.headers.get('x-evalgate-log-id')!)).prompt_version).toBe(2);

    const back = await g.h.call('POST', '/v1/prompts/support/labels/production/rollback');
    expect(back.status).toBe(200);
    expect(back.body.version).toBe(1);
    await ask();
    expect(g.mock.requests[2]!.body.messages[0].content).toContain('at most 5 words');

    const wrong = await client.chat.completions
      .create({ prompt: { variables: { company: 'Acme', limit: 'five', question: 'Q?' } } } as never)
      .catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(OpenAI.BadRequestError);
    expect((wrong as InstanceType<typeof OpenAI.APIError>).message).toContain(
      "variable 'limit' must be a finite number",
    );
  });

  it('answers an unknown prompt or label with NotFoundError and calls without a prompt as before', async () => {
    const unknown = await g
      .client({ headers: { 'X-Evalgate-Prompt': 'nope@production' } })
      .chat.completions.create({} as never)
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    const label = await g
      .client()
      .chat.completions.create({ prompt: { name: 'support', label: 'canary' } } as never)
      .catch((e: unknown) => e);
    expect(label).toBeInstanceOf(OpenAI.NotFoundError);
    expect(g.mock.stats.requests).toBe(0);

    const { response } = await g
      .client()
      .chat.completions.create({ model: 'chat-only', messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log.prompt_id).toBeNull();
    expect(log.prompt_version).toBeNull();
  });
});
