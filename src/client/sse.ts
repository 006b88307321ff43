/** One server-sent event: its `event:` name (default `message`) and its `data:` lines joined. */
export interface RawEvent {
  event: string;
  data: string;
  id: string | null;
}

/**
 * Parses a text/event-stream body (https://html.spec.whatwg.org/multipage/server-sent-events.html):
 * fields per line, events ended by a blank line, comments (`:`) ignored, CRLF or LF line ends.
 */
export async function* parseEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<RawEvent> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | null = null;
  const line = (text: string): RawEvent | null => {
    if (text === '') {
      const done = data.length ? { event: event || 'message', data: data.join('\n'), id } : null;
      event = '';
      data = [];
      return done;
    }
    if (text.startsWith(':')) return null;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
    return null;
  };
  try {
    while (true) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let end = buffer.search(/\r\n|\r|\n/);
      while (end !== -1) {
        const sep = buffer.startsWith('\r\n', end) ? 2 : 1;
        // A lone \r at the very end may be the first half of \r\n: wait for more.
        if (!done && buffer[end] === '\r' && end === buffer.length - 1) break;
        const out = line(buffer.slice(0, end));
        buffer = buffer.slice(end + sep);
        if (out) yield out;
        end = buffer.search(/\r\n|\r|\n/);
      }
      if (done) break;
    }
    // A final event without its blank line is dropped, as the specification says.
  } finally {
    await reader.cancel().catch(() => {});
  }
}
