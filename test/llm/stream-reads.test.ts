// Database-independent: the provider layer against a loopback upstream, no store.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleCompletion } from '../../src/llm/assemble.js';
import type { ProviderLayer } from '../../src/llm/provider-layer.js';
import { completionText } from '../../src/llm/providers/openai-compatible.js';
import { ssePayloads } from '../../src/llm/sse.js';
import { seeded } from '../helpers/random.js';
import { drain, layerFor, modelAt } from './layer-helpers.js';

// An upstream that sends a given event stream in given pieces, each its own write a little apart,
// so that the gateway reads them as separate reads: events split anywhere, multi-byte characters too.
let pieces: Buffer[] = [];
let server: http.Server;
let baseUrl: string;
let layer: ProviderLayer;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const piece of pieces) {
        res.write(piece);
        await new Promise((r) => setTimeout(r, 2));
      }
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  layer = layerFor();
});
afterAll(async () => {
  await layer.close();
  await new Promise((r) => server.close(r));
});

const TEXT = ['Hé', 'llo ', '— wörld', ' 🌍', '!'];
const chunk = (delta: object, finish: string | null = null, usage?: object) =>
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'up',
    choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }],
    usage: usage ?? null,
  });

/** The upstream's event stream, with LF or CRLF line ends, with or without comments and named events. */
function upstreamStream(eol: string, extras: boolean): string {
  const events = TEXT.map(
    (t, i) => `data: ${chunk(i === 0 ? { role: 'assistant', content: t } : { content: t })}`,
  );
  events.push(`data: ${chunk({}, 'stop')}`);
  if (extras) events.splice(2, 0, ': keep-alive', `event: message\ndata: ${chunk({ content: '' })}`);
  events.push(`data: ${chunk({}, null, { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 })}`);
  events.push('data: [DONE]');
  return events.map((e) => e.replaceAll('\n', eol) + eol + eol).join('');
}

/** The stream's bytes cut at random places (a multi-byte character may be cut too). */
function cut(bytes: Buffer, random: () => number): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at < bytes.length) {
    const size = 1 + Math.floor(random() * 120);
    out.push(bytes.subarray(at, at + size));
    at += size;
  }
  return out;
}

describe('streams read in arbitrary pieces', () => {
  it('sends every chunk once, drops the usage chunk nobody asked for and records what the client saw', async () => {
    const { random } = seeded(42);
    for (let round = 0; round < 24; round++) {
      const eol = round % 3 === 2 ? '\r\n' : '\n';
      const extras = round % 2 === 1;
      const whole = Buffer.from(upstreamStream(eol, extras));
      // Some rounds send the whole stream in one write, as a fast upstream does.
      pieces = round % 4 === 0 ? [whole] : cut(whole, random);
      const wantsUsage = round % 5 < 2;
      const stream = await layer.stream(
        modelAt(baseUrl),
        {
          model: 'x',
          messages: [{ role: 'user', content: 'Hi' }],
          stream: true,
          ...(wantsUsage ? { stream_options: { include_usage: true } } : {}),
        },
        { collect: true },
      );
      // Some rounds pipe into a client that is slow to take what it is sent.
      const slow = round % 3 === 1;
      const seen = await drain(stream, { slow });
      const label = `round ${round} (eol ${JSON.stringify(eol)}, extras ${extras}, usage ${wantsUsage}, slow ${slow})`;
      if (slow && pieces.length > 3) expect(seen.waits, label).toBeGreaterThan(0);
      expect(seen.done, label).toBe(true);
      const content = seen.chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
      expect(content, label).toBe(TEXT.join(''));
      expect(seen.chunks.filter((c) => c.choices.length === 0).length, label).toBe(wantsUsage ? 1 : 0);
      const result = stream.result();
      expect(result.usage, label).toMatchObject({ prompt_tokens: 4, completion_tokens: 5 });
      expect(result.error, label).toBeNull();
      // What is recorded is exactly what the client was sent.
      expect(ssePayloads(result.sse).length, label).toBe(seen.chunks.length);
      expect(completionText(assembleCompletion(ssePayloads(result.sse), 'x')), label).toBe(TEXT.join(''));
    }
  });
});
