import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI, { type APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/** How the upstream lies, for every request it gets (streamed or not). */
type Lie =
  | 'json-for-stream'
  | 'truncated-sse'
  | 'garbage-first'
  | 'control-bytes'
  | 'garbage-in-first-read'
  | 'del-in-first-read'
  | 'garbage-later'
  | 'truncated-later'
  | 'honest';

const chunk = (content: string, finish: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: { content }, finish_reason: finish }],
  })}\n\n`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A loopback upstream speaking the OpenAI protocol badly, in the ways seen from broken providers. */
async function lyingUpstream() {
  let lie: Lie = 'honest';
  let requests = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      requests++;
      switch (lie) {
        case 'json-for-stream':
          // 200 application/json, cut short.
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"id":"x","object":"chat.completion","choices":[{"index":0,"mess');
          return;
        case 'truncated-sse':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: {"id":"c1","object":"chat.completion.chunk","choices":[{"ind');
          return;
        case 'garbage-first':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: {not json\n\ndata: [DONE]\n\n');
          return;
        case 'control-bytes':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: \x01\x02\x03\n\ndata: [DONE]\n\n');
          return;
        case 'garbage-in-first-read':
          // A good first event, then one framed as an object that is not JSON, in the same write.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end(`${chunk('Hello')}data: {"a":}\n\ndata: [DONE]\n\n`);
          return;
        case 'del-in-first-read':
          // A DEL byte (valid JSON inside a string) in the second event of the first write.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end(`${chunk('Hello')}${chunk('wor\x7fld', 'stop')}data: [DONE]\n\n`);
          return;
        case 'garbage-later':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(chunk('Hello'));
          await sleep(50);
          res.end('data: {not json\n\ndata: [DONE]\n\n');
          return;
        case 'truncated-later':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(chunk('Hello'));
          await sleep(50);
          res.end(chunk(' wor'));
          return;
        case 'honest':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end(`${chunk('Hello')}${chunk('!', 'stop')}data: [DONE]\n\n`);
          return;
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    set(next: Lie) {
      lie = next;
      requests = 0;
    },
    get requests() {
      return requests;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let h: Harness;
let up: Awaited<ReturnType<typeof lyingUpstream>>;
let client: OpenAI;

beforeAll(async () => {
  up = await lyingUpstream();
  h = await startHarness({
    env: {
      EVALGATE_UPSTREAM_RETRIES: '1',
      EVALGATE_UPSTREAM_RETRY_BASE_MS: '5',
      EVALGATE_UPSTREAM_RETRY_MAX_MS: '10',
    },
  });
  const reg = await h.call('POST', '/v1/models', { body: { label: 'liar', base_url: up.baseUrl } });
  expect(reg.status).toBe(201);
  client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: h.admin.key, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await up?.close();
});

async function logOf(id: string | null): Promise<any> {
  await h.app.services.logWriter.flush();
  const logs = (await h.call('GET', '/v1/containers/default/logs?limit=100')).body.data as any[];
  const log = logs.find((l) => l.id === id);
  if (!log) throw new Error(`no task log ${id}`);
  return log;
}

/** Streams a completion with the raw fetch API: the status, the events and the log id. */
async function stream() {
  const res = await fetch(`${h.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.admin.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'liar', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const text = await res.text();
  return { status: res.status, text, logId: res.headers.get('x-evalgate-log-id') };
}

describe('a streamed answer that lies before its first event is an upstream failure', () => {
  // Every event of the first read is checked before anything is sent (the pump then passes that read on unchecked).
  const lies = [
    'json-for-stream',
    'truncated-sse',
    'garbage-first',
    'control-bytes',
    'garbage-in-first-read',
    'del-in-first-read',
  ] as const;
  for (const lie of lies) {
    it(`${lie}: retried, then 503 in the envelope, logged as an error`, async () => {
      up.set(lie);
      const r = await stream();
      expect(r.status).toBe(503);
      const body = JSON.parse(r.text);
      expect(body.error.code).toBe('upstream_unavailable');
      // The first attempt and the one retry.
      expect(up.requests).toBe(2);
      const log = await logOf(r.logId);
      expect(log.status).toBe('error');
      expect(log.error.code).toBe('upstream_unavailable');
      // Through the official client too: an error, never an empty success.
      const err = (await client.chat.completions
        .create({ model: 'liar', stream: true, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e) => e)) as APIError;
      expect(err.status).toBe(503);
    });
  }
});

describe('a streamed answer that lies after its first event ends with an error event', () => {
  for (const lie of ['garbage-later', 'truncated-later'] as const) {
    it(`${lie}: the client reads an error event and no [DONE]; the log says error with the reason`, async () => {
      up.set(lie);
      const r = await stream();
      expect(r.status).toBe(200);
      expect(r.text).toContain('"content":"Hello"');
      expect(r.text).not.toContain('data: [DONE]');
      expect(r.text).not.toContain('{not json');
      const last = r.text.trim().split('\n\n').at(-1)!;
      const event = JSON.parse(last.replace(/^data: /, ''));
      const code = lie === 'garbage-later' ? 'upstream_bad_stream' : 'upstream_truncated';
      expect(event.error.code).toBe(code);
      const log = await logOf(r.logId);
      expect(log.status).toBe('error');
      expect(log.error.code).toBe(code);
      // The official client raises on the error event instead of returning a partial success.
      const iterate = async () => {
        const s = await client.chat.completions.create({
          model: 'liar',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        });
        for await (const _ of s) {
          // read to the end
        }
      };
      await expect(iterate()).rejects.toThrow();
    });
  }

  it('an honest stream still passes, finished and logged as a success', async () => {
    up.set('honest');
    const r = await stream();
    expect(r.status).toBe(200);
    expect(r.text).toContain('data: [DONE]');
    expect((await logOf(r.logId)).status).toBe('success');
  });
});

describe('a run judged by a lying upstream records errors, not scores', () => {
  it('every position is an error for each way of lying', async () => {
    await h.call('POST', '/v1/containers', { body: { label: 'runs' } });
    const items = Array.from({ length: 4 }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
    expect((await h.call('POST', '/v1/datasets', { body: { label: 'four', items } })).status).toBe(201);
    const ev = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'liar-judge', model: 'liar', prompt: 'Rate {{output}}' },
    });
    expect(ev.status).toBe(201);
    for (const lie of ['json-for-stream', 'truncated-sse', 'garbage-first', 'control-bytes'] as const) {
      up.set(lie);
      const run = await h.call('POST', '/v1/evaluation/runs', {
        body: {
          container: 'runs',
          evaluators: ['liar-judge'],
          sample: { type: 'dataset', dataset: 'four' },
        },
      });
      expect(run.status).toBe(201);
      let done: any;
      await waitFor(async () => {
        done = (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body;
        return ['completed', 'error', 'cancelled'].includes(done.status);
      }, 30_000);
      const stats = done.results.per_model[0].per_eval[ev.body.id];
      expect(stats, lie).toMatchObject({ num_scored: 0, num_errors: 4 });
    }
  }, 120_000);
});
