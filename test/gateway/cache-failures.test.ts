import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MOCK_REPLY } from '../fixtures/mock-upstream.js';
import { type Gateway, startGateway } from './gateway-helpers.js';

/*
 * The response cache keeps only successful answers: an upstream that answers 200 with a failure (an error
 * object, `{}`, no choices; a stream of only an error event, of a chunk that is no completion, or a bare
 * end marker) to every attempt of a call (the gateway retries such an answer like a 5xx, then answers
 * 502) and then recovers is asked again on the repeat, which answers the good answer as a miss (and is
 * kept from then on).
 */

/** One call's attempts: the first and the gateway's default two retries (EVALGATE_UPSTREAM_RETRIES). */
const ATTEMPTS = 3;

let g: Gateway;
const label = `cached-${randomBytes(3).toString('hex')}`;
beforeAll(async () => {
  g = await startGateway();
  const res = await g.h.call('POST', '/v1/models', {
    body: { label, base_url: g.mock.baseUrl, upstream_model: 'u', cache_ttl_seconds: 3600 },
  });
  expect(res.status, res.text).toBe(201);
});
afterAll(async () => {
  await g?.close();
});
beforeEach(() => {
  g.mock.reset();
});

const plainLies: [string, string][] = [
  ['an error object', JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } })],
  ['an empty object', '{}'],
  ['no choices', JSON.stringify({ id: 'x', object: 'chat.completion', choices: [] })],
];

const streamLies: [string, string][] = [
  ['only an error event', `data: ${JSON.stringify({ error: { message: 'overloaded' } })}\n\n`],
  ['a chunk that is no completion', 'data: {"foo":1}\n\ndata: [DONE]\n\n'],
  ['a bare end marker', 'data: [DONE]\n\n'],
];

/** A call without the harness's contract check: the lying answers are not what the schema promises. */
async function chat(content: string, stream = false) {
  const res = await fetch(`${g.h.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${g.h.admin.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: label,
      messages: [{ role: 'user', content }],
      ...(stream ? { stream: true } : {}),
    }),
  });
  const text = await res.text();
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: res.status, headers: res.headers, text, body };
}

describe('the response cache stores only successes', () => {
  it.each(plainLies)(
    'a 200 with %s is not kept: the repeat is a miss with the good answer',
    async (_what, lie) => {
      const content = `plain ${randomBytes(4).toString('hex')}`;
      g.mock.fail({ lie, times: ATTEMPTS });
      const first = await chat(content);
      expect(first.status, first.text).toBe(502);
      expect(first.headers.get('x-evalgate-cache')).not.toBe('hit');
      const second = await chat(content);
      expect(second.status).toBe(200);
      expect(second.headers.get('x-evalgate-cache')).toBe('miss');
      expect(second.body.choices[0].message.content).toBe(MOCK_REPLY);
      expect(g.mock.stats.requests).toBe(ATTEMPTS + 1);
      // The good answer is kept.
      const third = await chat(content);
      expect(third.headers.get('x-evalgate-cache')).toBe('hit');
      expect(third.body.choices[0].message.content).toBe(MOCK_REPLY);
      expect(g.mock.stats.requests).toBe(ATTEMPTS + 1);
    },
  );

  it.each(streamLies)(
    'a stream of %s is not kept: the repeat is a miss with the good answer',
    async (_what, lie) => {
      const content = `streamed ${randomBytes(4).toString('hex')}`;
      g.mock.fail({ lie, times: ATTEMPTS });
      const first = await chat(content, true);
      expect(first.status, first.text).toBe(502);
      expect(first.headers.get('x-evalgate-cache')).not.toBe('hit');
      const second = await chat(content, true);
      expect(second.status).toBe(200);
      expect(second.headers.get('x-evalgate-cache')).toBe('miss');
      const text = second.text
        .split('\n\n')
        .filter((e) => e.startsWith('data: {'))
        .map((e) => JSON.parse(e.slice(6)).choices?.[0]?.delta?.content ?? '')
        .join('');
      expect(text).toBe(MOCK_REPLY);
      expect(g.mock.stats.requests).toBe(ATTEMPTS + 1);
      const third = await chat(content, true);
      expect(third.headers.get('x-evalgate-cache')).toBe('hit');
      expect(g.mock.stats.requests).toBe(ATTEMPTS + 1);
    },
  );
});
