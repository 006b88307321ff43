import { isObject, type JsonObject } from '../../../shared/json.js';
import { assembleCompletion } from '../../assemble.js';
import type { NativeCall, StreamEncoder } from '../../dialect-types.js';
import { GeminiStreamTranslator } from '../../providers/gemini.js';
import { DONE } from '../../providers/types.js';
import { ssePayloads } from '../../sse.js';
import type { StreamResult } from '../../stream-pump.js';
import type { ChatRequest } from '../../types.js';
import type { GeminiFrame } from './answer.js';
import { googleErrorOf } from './errors.js';

/** A GenerateContentResponse of the upstream's under the gateway's id and the model the client named. */
function relabel(response: JsonObject, frame: GeminiFrame): JsonObject {
  return { ...response, modelVersion: frame.model, responseId: frame.id };
}

/** The upstream's events as they pass (Google's framing: `data:` lines only), each re-labelled. */
class GeminiRelabelEncoder implements StreamEncoder {
  private failed = false;
  constructor(private readonly frame: GeminiFrame) {}

  start(): string {
    return '';
  }

  chunk(event: JsonObject): string {
    return `data: ${JSON.stringify(relabel(event, this.frame))}\r\n\r\n`;
  }

  error(code: string, message: string): string {
    this.failed = true;
    return `data: ${JSON.stringify(googleErrorOf(code, message))}\r\n\r\n`;
  }

  end(result: StreamResult): string {
    return result.error && !this.failed ? this.error(result.error.code, result.error.message) : '';
  }
}

/**
 * A generateContent call for a Gemini upstream: the client's body sent as it is (carried as the internal
 * request, the model from the path beside it), answered as it came with only the id and model re-labelled.
 */
export function nativeGemini(body: JsonObject, frame: GeminiFrame): NativeCall {
  // `labels` are the gateway's (the call's metadata): Google's API for Gemini takes none.
  const { labels: _labels, ...sent } = body;
  const request = { ...sent, model: frame.model, messages: [] } as ChatRequest;
  return {
    api: 'gemini',
    request,
    accepts: (model) => model.provider === 'gemini',
    plain(bodyText) {
      const parsed: unknown = JSON.parse(bodyText);
      return JSON.stringify(isObject(parsed) ? relabel(parsed, frame) : parsed);
    },
    stream: () => new GeminiRelabelEncoder(frame),
    recorded(sse, resolved) {
      // The events read again by the Gemini adapter's translator, as chunks of one completion.
      const translator = new GeminiStreamTranslator({ model: resolved, request, clientWantsUsage: true });
      const chunks: string[] = [];
      try {
        for (const data of ssePayloads(sse)) chunks.push(...translator.event({ event: null, data }));
      } catch {
        // A stream that broke: what came before it is the answer.
      }
      return assembleCompletion(
        chunks.filter((c) => c !== DONE),
        frame.model,
      );
    },
  };
}
