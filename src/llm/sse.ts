import { StringDecoder } from 'node:string_decoder';
import { DONE, type SseEvent } from './providers/types.js';

function parseBlock(block: string): SseEvent | null {
  // The common case, one `data:` line, without splitting.
  if (block.startsWith('data: ') && !block.includes('\n')) return { event: null, data: block.slice(6) };
  let event: string | null = null;
  let data: string | null = null;
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data = data === null ? value : `${data}\n${value}`;
    else if (field === 'event') event = value;
  }
  return data === null && event === null ? null : { event, data: data ?? '' };
}

/** An incremental server-sent-events reader: bytes in, complete events out. */
export class SseReader {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';

  /** True when no partial event is pending (the next bytes start a new event). */
  get idle(): boolean {
    return this.buffer === '';
  }

  push(bytes: Buffer): SseEvent[] {
    return this.pushText(this.decoder.write(bytes));
  }

  /** Like `push`, for text already decoded (whole characters). */
  pushText(decoded: string): SseEvent[] {
    let text = this.buffer + decoded;
    if (text.includes('\r')) {
      // A CR at the very end may be the first half of a CRLF: keep it for the next read.
      const held = text.endsWith('\r') ? '\r' : '';
      text = (held ? text.slice(0, -1) : text).replace(/\r\n?/g, '\n') + held;
    }
    const events: SseEvent[] = [];
    let start = 0;
    for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n', start)) {
      const event = parseBlock(text.slice(start, end));
      if (event) events.push(event);
      start = end + 2;
    }
    this.buffer = start === 0 ? text : text.slice(start);
    return events;
  }

  /** Whatever is left when the stream ends (a last event without its blank line). */
  end(): SseEvent[] {
    const rest = (this.buffer + this.decoder.end()).replace(/\r\n?/g, '\n').trim();
    this.buffer = '';
    const event = rest === '' ? null : parseBlock(rest);
    return event ? [event] : [];
  }
}

/** The data payloads of a whole event stream's text, the end marker left out. */
export function ssePayloads(text: string): string[] {
  const reader = new SseReader();
  const payloads: string[] = [];
  for (const events of [reader.pushText(text), reader.end()]) {
    for (const { data } of events) if (data !== DONE) payloads.push(data);
  }
  return payloads;
}
