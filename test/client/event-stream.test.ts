// Database-independent: the client's event-stream parser reads bytes handed to it.
import { describe, expect, it } from 'vitest';
import { parseEventStream, type RawEvent } from '../../src/client/sse.js';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
}

async function events(chunks: string[]): Promise<RawEvent[]> {
  const out: RawEvent[] = [];
  for await (const e of parseEventStream(streamOf(chunks))) out.push(e);
  return out;
}

describe('parseEventStream', () => {
  it('reads named events, joins data lines and keeps the last id', async () => {
    expect(await events(['event: progress\nid: 7\ndata: {"a":1}\ndata: {"b":2}\n\ndata: plain\n\n'])).toEqual(
      [
        { event: 'progress', data: '{"a":1}\n{"b":2}', id: '7' },
        { event: 'message', data: 'plain', id: '7' },
      ],
    );
  });

  it('ignores comments and events without data, and strips one leading space only', async () => {
    expect(await events([': keep-alive\n\nevent: empty\n\ndata:  two spaces\n\n'])).toEqual([
      { event: 'message', data: ' two spaces', id: null },
    ]);
  });

  it('accepts CRLF, CR and LF line ends, split anywhere across chunks', async () => {
    const text = 'event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n';
    const whole = await events([text]);
    expect(whole).toEqual([
      { event: 'a', data: '1', id: null },
      { event: 'b', data: '2', id: null },
      { event: 'message', data: '3', id: null },
    ]);
    // Every split point, the CR of a CRLF at the end of a chunk included.
    for (let i = 1; i < text.length; i++) {
      expect(await events([text.slice(0, i), text.slice(i)])).toEqual(whole);
    }
  });

  it('decodes multi-byte characters split across chunks', async () => {
    const bytes = new TextEncoder().encode('data: ꙮ€\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const b of bytes) controller.enqueue(new Uint8Array([b]));
        controller.close();
      },
    });
    const out: RawEvent[] = [];
    for await (const e of parseEventStream(body)) out.push(e);
    expect(out).toEqual([{ event: 'message', data: 'ꙮ€', id: null }]);
  });

  it('drops a final event that has no blank line after it', async () => {
    expect(await events(['data: done\n\ndata: cut off\n'])).toEqual([
      { event: 'message', data: 'done', id: null },
    ]);
  });
});
