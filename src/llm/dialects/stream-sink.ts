import { isObject } from '../../shared/json.js';
import type { StreamEncoder } from '../dialect-types.js';
import { DONE } from '../providers/types.js';
import { SseReader } from '../sse.js';
import type { FrameSink, StreamResult } from '../stream-pump.js';

/**
 * A frame sink that speaks another dialect: the chat-completion frames the stream pump sends are read
 * event by event as they come and each is re-encoded at once (nothing is held back beyond a partial
 * event), then handed to the real sink with its back-pressure.
 */
export function translatingSink(inner: FrameSink, encoder: StreamEncoder): FrameSink {
  const reader = new SseReader();
  let started = false;
  const translate = (frames: string | Buffer | null, last: boolean): string => {
    let out = '';
    if (!started) {
      started = true;
      out += encoder.start();
    }
    if (frames !== null) {
      const events = typeof frames === 'string' ? reader.pushText(frames) : reader.push(frames as Buffer);
      for (const { data } of events) out += translateOne(data);
    }
    if (last) for (const { data } of reader.end()) out += translateOne(data);
    return out;
  };
  const translateOne = (data: string): string => {
    if (data === DONE) return '';
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return '';
    }
    if (!isObject(parsed)) return '';
    if (isObject(parsed.error)) {
      const { code, message } = parsed.error;
      return encoder.error(String(code ?? 'upstream_unavailable'), String(message ?? 'The upstream failed'));
    }
    return encoder.chunk(parsed);
  };
  return {
    write(frames) {
      const out = translate(frames, false);
      return out === '' ? true : inner.write(out);
    },
    drained: () => inner.drained(),
    end(frames, result: StreamResult) {
      const out = translate(frames, true) + encoder.end(result);
      inner.end(out === '' ? null : out, result);
    },
  };
}
