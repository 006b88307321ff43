import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/shared/ids.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';

let g: Gateway;
let flushes = 0;
const MODEL = 'openai/gpt-4o-mini';

beforeAll(async () => {
  // The writer waits long before a partial batch: only a flush writes a completion just answered.
  g = await startGateway({ EVALGATE_LOG_FLUSH_MS: '60000' });
  g.mock.set({ reply: (r) => `echo: ${r.lastUserText}` });
  const writer = g.h.app.services.logWriter;
  const flush = writer.flush.bind(writer);
  writer.flush = () => {
    flushes++;
    return flush();
  };
});
afterAll(async () => {
  await g?.close();
});

const unknownId = () => `chatcmpl-${newId('log').slice(4)}`;

describe('a stored completion that does not exist', () => {
  it('answers 404 at once, without flushing the log writer, to GET, POST, DELETE and messages', async () => {
    const before = flushes;
    for (const [method, path, body] of [
      ['GET', `/v1/chat/completions/${unknownId()}`, undefined],
      ['POST', `/v1/chat/completions/${unknownId()}`, { metadata: { a: 'b' } }],
      ['DELETE', `/v1/chat/completions/${unknownId()}`, undefined],
      ['GET', `/v1/chat/completions/${unknownId()}/messages`, undefined],
      ['GET', '/v1/chat/completions/chatcmpl-upstream_style_id', undefined],
    ] as const) {
      const t0 = performance.now();
      const res = await g.h.call(method, path, body === undefined ? {} : { body });
      const ms = performance.now() - t0;
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      expect(ms).toBeLessThan(1000);
    }
    expect(flushes).toBe(before);
    expect(g.h.app.services.logWriter.stats().buffered).toBe(0);
  });

  it('still finds a completion just answered, which the writer holds until a flush', async () => {
    const made = await g
      .client()
      .chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], store: true });
    const logId = `log_${made.id.slice(9)}`;
    const writer = g.h.app.services.logWriter;
    expect(writer.holds?.(logId)).toBe(true);
    const before = flushes;
    const got = await g.client().chat.completions.retrieve(made.id);
    expect(got.choices[0]!.message.content).toBe('echo: hi');
    expect(flushes).toBe(before + 1);
    expect(writer.holds?.(logId)).toBe(false);
    // Written now: a second read needs no flush, nor does a miss after it.
    await g.client().chat.completions.retrieve(made.id);
    expect((await g.h.call('GET', `/v1/chat/completions/${unknownId()}`)).status).toBe(404);
    expect(flushes).toBe(before + 1);
  });

  it("answers 404 for another project's completion the writer still holds, after flushing", async () => {
    const made = await g
      .client()
      .chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'mine' }], store: true });
    const other = await g.h.key(['*'], 'miss-other');
    const res = await g.h.call('GET', `/v1/chat/completions/${made.id}`, { key: other.key });
    expect(res.status).toBe(404);
    expect((await g.client().chat.completions.retrieve(made.id)).id).toBe(made.id);
  });
});
