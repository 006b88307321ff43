// Database-independent: the provider layer against a loopback upstream, no store.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderLayer } from '../../src/llm/provider-layer.js';
import { drain, layerFor, modelAt } from './layer-helpers.js';

// An Anthropic upstream whose stream starts, sends some text, then reports an error event mid-way.
let server: http.Server;
let layer: ProviderLayer;
let baseUrl: string;
const events = [
  [
    'message_start',
    {
      type: 'message_start',
      message: { id: 'msg_1', model: 'claude-mock', usage: { input_tokens: 3, output_tokens: 0 } },
    },
  ],
  [
    'content_block_start',
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  ],
  [
    'content_block_delta',
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
  ],
  ['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
] as const;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join(''));
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

describe('an upstream error event in the middle of a stream', () => {
  it('ends the stream with an error event and records the error', async () => {
    const model = modelAt(baseUrl, {
      slug: 'anthropic/claude-mock',
      provider: 'anthropic',
      upstreamModel: 'claude-mock',
    });
    const stream = await layer.stream(
      model,
      { model: 'x', messages: [{ role: 'user', content: 'Hi' }], stream: true },
      { collect: true },
    );
    const { text } = await drain(stream);
    expect(text).toContain('"content":"Hel"');
    expect(text).toContain('data: {"error":{"code":"upstream_unavailable","message":"Overloaded"}}');
    expect(stream.result().error).toEqual({ code: 'upstream_unavailable', message: 'Overloaded' });
  });
});
