import Anthropic from '@anthropic-ai/sdk';
import { ApiError as GenAiError, GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type MockGemini, startMockGemini } from '../fixtures/mock-gemini.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { anthropic, caught, createPoliteJudge, sleep, verdicts } from './guard-helpers.js';

/*
 * Output guards on calls whose client speaks the upstream's own dialect (the Anthropic SDK to `anthropic/…`,
 * @google/genai to `gemini/…`), streamed and plain: a block ends the stream with the dialect's error event
 * (the SDK raises), a redaction arrives redacted, a flag passes and is recorded; a parallel judge holds such
 * a stream until it is done.
 */

const CODE = 'ACCT-4417-9921';
const MAIL = 'zoe@example.com';

let g: Gateway;
let gem: MockGemini;
let reply = '';
/** The judge's score, answered after `judgeMs`. */
let judgeScore = 1;
let judgeMs = 0;
beforeAll(async () => {
  gem = await startMockGemini();
  g = await startGateway({ GEMINI_API_KEY: 'operator-gemini-key', GEMINI_BASE_URL: gem.baseUrl });
  const judge = await g.h.call('POST', '/v1/models', {
    body: { label: 'judge', base_url: g.mock.baseUrl, upstream_model: 'j', api: 'chat' },
  });
  expect(judge.status, judge.text).toBe(201);
  await createPoliteJudge(g);
  const policies = [
    {
      name: 'native-block',
      applies_to: { models: ['anthropic/claude-block', 'gemini/gemini-block'] },
      checks: [
        { name: 'acct-out', guard: { type: 'regex', pattern: 'ACCT-\\d{4}-\\d{4}' }, stage: 'output' },
      ],
    },
    {
      name: 'native-redact',
      applies_to: { models: ['anthropic/claude-redact', 'gemini/gemini-redact'] },
      checks: [{ name: 'pii-out', guard: { type: 'pii' }, stage: 'output', action: 'redact' }],
    },
    {
      name: 'native-parallel',
      applies_to: { models: ['anthropic/claude-par'] },
      checks: [{ name: 'judge-par', guard: { type: 'evaluator', evaluator: 'polite' }, stage: 'parallel' }],
    },
    {
      name: 'native-flag',
      applies_to: { models: ['anthropic/claude-flag', 'gemini/gemini-flag'] },
      checks: [{ name: 'pii-flag', guard: { type: 'pii' }, stage: 'output', action: 'flag' }],
    },
  ];
  for (const body of policies) {
    const res = await g.h.call('POST', '/v1/guards', { body });
    expect(res.status, res.text).toBe(201);
  }
});
afterAll(async () => {
  await g.close();
  await gem.close();
});
beforeEach(() => {
  g.mock.reset();
  gem.reset();
  // Small pieces, so that a finding spans several upstream events.
  judgeScore = 1;
  judgeMs = 0;
  g.mock.set({
    chunkChars: 4,
    reply: async (r) => {
      if (r.body.model !== 'j') return reply;
      await sleep(judgeMs);
      return { json: { score: judgeScore, reasoning: 'ok' } };
    },
  });
  gem.set({ chunkChars: 4, reply: () => reply });
});

function genai(): GoogleGenAI {
  return new GoogleGenAI({ apiKey: g.h.admin.key, httpOptions: { baseUrl: g.h.url } });
}

const ask = { max_tokens: 50, messages: [{ role: 'user' as const, content: 'Hi' }] };

async function logOf(id: string): Promise<any> {
  const log = (await g.logs('default')).find((l) => l.id === id);
  if (!log) throw new Error(`no log ${id}`);
  return log;
}

describe('Anthropic Messages to an Anthropic upstream, streamed', () => {
  it('a block ends the stream with an error event the SDK raises, none of the finding shown', async () => {
    reply = `Your account is ${CODE}, keep it safe.`;
    let seen = '';
    const stream = anthropic(g).messages.stream({ model: 'anthropic/claude-block', ...ask });
    stream.on('text', (delta) => {
      seen += delta;
    });
    const err = await caught(stream.finalMessage());
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.message).toContain("guard 'acct-out'");
    expect(err.error?.error?.type).toBe('invalid_request_error');
    expect(seen).not.toContain(CODE);
    // The upstream is Anthropic's Messages API either way.
    expect(g.mock.requests[0]!.path).toBe('/v1/messages');
    const blocked = await verdicts(g, 'guard=acct-out&verdict=blocked');
    expect(blocked[0]).toMatchObject({ stage: 'output', action: 'block', score: 0 });
  });

  it('a redaction arrives redacted, in events the SDK assembles', async () => {
    reply = `Write to ${MAIL} for help.`;
    let seen = '';
    const stream = anthropic(g).messages.stream({ model: 'anthropic/claude-redact', ...ask });
    stream.on('text', (delta) => {
      seen += delta;
    });
    const message = await stream.finalMessage();
    expect(message.content).toEqual([
      expect.objectContaining({ type: 'text', text: 'Write to [EMAIL] for help.' }),
    ]);
    expect(message.stop_reason).toBe('end_turn');
    expect(seen).toBe('Write to [EMAIL] for help.');
    expect(g.mock.requests[0]!.path).toBe('/v1/messages');
  });

  it('a flag passes the answer as it came and records the verdict on the task log', async () => {
    reply = `Sure: ${MAIL}`;
    const { data, response } = await anthropic(g)
      .messages.create({ model: 'anthropic/claude-flag', stream: true, ...ask })
      .withResponse();
    let text = '';
    for await (const event of data) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
    expect(text).toBe(reply);
    const logId = response.headers.get('x-evalgate-log-id')!;
    const v = await verdicts(g, `task_log_id=${logId}`);
    expect(v.map((x) => [x.guard, x.stage, x.verdict])).toEqual([['pii-flag', 'output', 'flagged']]);
    const log = await logOf(logId);
    expect(log.metadata.guards).toEqual([expect.objectContaining({ guard: 'pii-flag', verdict: 'flagged' })]);
    expect(log.output).toBe(reply);
  });
});

describe('a parallel judge on an Anthropic stream', () => {
  it('holds the stream until the judge is done: a block is an error event before any of the answer', async () => {
    reply = 'An answer the judge will not like.';
    judgeScore = 0;
    // The upstream answers at once; the judge only after the answer is complete.
    judgeMs = 300;
    let seen = '';
    const stream = anthropic(g).messages.stream({ model: 'anthropic/claude-par', ...ask });
    stream.on('text', (delta) => {
      seen += delta;
    });
    const err = await caught(stream.finalMessage());
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.message).toContain("guard 'judge-par'");
    expect(seen).toBe('');

    judgeScore = 1;
    const ok = await anthropic(g)
      .messages.stream({ model: 'anthropic/claude-par', ...ask })
      .finalMessage();
    expect(ok.content[0]).toMatchObject({ type: 'text', text: reply });
  });
});

describe('Gemini to a Gemini upstream, streamed', () => {
  async function drain(model: string): Promise<{ text: string; last: any }> {
    const stream = await genai().models.generateContentStream({ model, contents: 'Hi' });
    let text = '';
    let last: any = null;
    for await (const chunk of stream) {
      text += chunk.text ?? '';
      last = chunk;
    }
    return { text, last };
  }

  it("a block ends the stream with an error in Google's shape, which the SDK raises", async () => {
    reply = `Your account is ${CODE}, keep it safe.`;
    let seen = '';
    const err = await caught(
      (async () => {
        const stream = await genai().models.generateContentStream({
          model: 'gemini/gemini-block',
          contents: 'Hi',
        });
        for await (const chunk of stream) seen += chunk.text ?? '';
      })(),
    );
    expect(err).toBeInstanceOf(GenAiError);
    expect(err.status).toBe(400);
    expect(err.message).toContain("guard 'acct-out'");
    expect(seen).not.toContain(CODE);
    expect(gem.requests[0]).toMatchObject({ method: 'streamGenerateContent', query: 'alt=sse' });
  });

  it('a redaction arrives redacted', async () => {
    reply = `Write to ${MAIL} for help.`;
    const { text, last } = await drain('gemini/gemini-redact');
    expect(text).toBe('Write to [EMAIL] for help.');
    expect(last.candidates[0].finishReason).toBe('STOP');
  });

  it('a flag passes the answer as it came and records the verdict on the task log', async () => {
    reply = `Sure: ${MAIL}`;
    const { text, last } = await drain('gemini/gemini-flag');
    expect(text).toBe(reply);
    const logId = String(last.responseId);
    const v = await verdicts(g, `task_log_id=${logId}`);
    expect(v.map((x) => [x.guard, x.stage, x.verdict])).toEqual([['pii-flag', 'output', 'flagged']]);
    expect((await logOf(logId)).metadata).toMatchObject({ route: 'gemini', stream: true });
  });
});

describe('plain (not streamed) native calls', () => {
  it("are blocked in the dialect's error shape and redacted in the upstream's own answer", async () => {
    reply = `Your account is ${CODE}.`;
    const aErr = await caught(anthropic(g).messages.create({ model: 'anthropic/claude-block', ...ask }));
    expect(aErr).toBeInstanceOf(Anthropic.BadRequestError);
    expect(aErr.message).toContain("guard 'acct-out'");
    const gErr = await caught(
      genai().models.generateContent({ model: 'gemini/gemini-block', contents: 'Hi' }),
    );
    expect(gErr).toBeInstanceOf(GenAiError);
    expect(gErr.status).toBe(400);
    expect(gErr.message).toContain("guard 'acct-out'");

    reply = `Write to ${MAIL} for help.`;
    const msg = await anthropic(g).messages.create({ model: 'anthropic/claude-redact', ...ask });
    expect(msg.content[0]).toMatchObject({ type: 'text', text: 'Write to [EMAIL] for help.' });
    expect(msg.id).toMatch(/^msg_/);
    const answer = await genai().models.generateContent({ model: 'gemini/gemini-redact', contents: 'Hi' });
    expect(answer.text).toBe('Write to [EMAIL] for help.');
    // Natively: the body went upstream as the client wrote it.
    expect(gem.requests[0]!.body).toEqual({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] });
  });
});
