import { isObject, type JsonObject } from '../../shared/json.js';
import { assembleCompletion } from '../assemble.js';
import type { NativeCall, StreamEncoder } from '../dialect-types.js';
import { anthropic } from '../providers/anthropic.js';
import { chatOfResponse } from '../providers/openai-responses.js';
import type { ChatCompletion } from '../providers/types.js';
import { DONE } from '../providers/types.js';
import { SseReader, ssePayloads } from '../sse.js';
import type { StreamResult } from '../stream-pump.js';
import type { ChatRequest } from '../types.js';
import type { ResponseFrame } from './responses-answer.js';

/** A response object of the upstream's under the gateway's id and the model the client named. */
function relabel(response: JsonObject, frame: ResponseFrame): JsonObject {
  const previous = frame.request.previous_response_id;
  return {
    ...response,
    id: frame.id,
    model: frame.model,
    // The upstream never saw the gateway's previous response id (the conversation went as input).
    previous_response_id: typeof previous === 'string' ? previous : null,
  };
}

/** The upstream's events as they pass: only the objects naming the answer's id and model are re-labelled. */
class RelabelEncoder implements StreamEncoder {
  private failed = false;
  constructor(
    private readonly relabelEvent: (event: JsonObject) => JsonObject,
    private readonly errorEvent: (code: string, message: string) => JsonObject,
  ) {}

  start(): string {
    return '';
  }

  chunk(event: JsonObject): string {
    return `event: ${String(event.type ?? 'message')}\ndata: ${JSON.stringify(this.relabelEvent(event))}\n\n`;
  }

  error(code: string, message: string): string {
    this.failed = true;
    return `event: error\ndata: ${JSON.stringify(this.errorEvent(code, message))}\n\n`;
  }

  end(result: StreamResult): string {
    return result.error && !this.failed ? this.error(result.error.code, result.error.message) : '';
  }
}

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** A Responses call for an upstream that speaks the API: sent as it is, answered as it came. */
export function nativeResponses(request: ChatRequest, frame: ResponseFrame): NativeCall {
  return {
    api: 'responses',
    request,
    plain(bodyText) {
      const parsed: unknown = JSON.parse(bodyText);
      return JSON.stringify(isObject(parsed) ? relabel(parsed, frame) : parsed);
    },
    accepts: (model) => model.provider === 'openai-compatible' && model.api === 'responses',
    stream: () =>
      new RelabelEncoder(
        (event) =>
          isObject(event.response) ? { ...event, response: relabel(event.response, frame) } : event,
        (code, message) => ({ type: 'error', code, message, param: null }),
      ),
    recorded(sse): ChatCompletion | null {
      const payloads = ssePayloads(sse);
      for (let i = payloads.length - 1; i >= 0; i--) {
        let event: unknown;
        try {
          event = JSON.parse(payloads[i]!);
        } catch {
          continue;
        }
        if (isObject(event) && TERMINAL.has(String(event.type)) && isObject(event.response))
          return chatOfResponse(event.response);
      }
      return null;
    },
  };
}

/** A Messages call for an Anthropic upstream: sent as it is, answered as it came (id and model re-labelled). */
export function nativeMessages(request: ChatRequest, id: string, model: string): NativeCall {
  const label = (message: JsonObject) => ({ ...message, id, model });
  return {
    api: 'messages',
    request,
    accepts: (m) => m.provider === 'anthropic',
    plain(bodyText) {
      const parsed: unknown = JSON.parse(bodyText);
      return JSON.stringify(isObject(parsed) ? label(parsed) : parsed);
    },
    stream: () =>
      new RelabelEncoder(
        (event) =>
          event.type === 'message_start' && isObject(event.message)
            ? { ...event, message: label(event.message) }
            : event,
        (code, message) => ({
          type: 'error',
          error: { type: code === 'upstream_unavailable' ? 'overloaded_error' : 'api_error', message },
        }),
      ),
    recorded(sse, resolved) {
      // The events read again by the Anthropic adapter's translator, as chunks of one completion.
      const translator = anthropic.streamTranslator({ model: resolved, request, clientWantsUsage: true });
      const reader = new SseReader();
      const chunks: string[] = [];
      try {
        for (const event of [...reader.pushText(sse), ...reader.end()]) {
          if (event.data === '' || event.data === DONE) continue;
          const type = (JSON.parse(event.data) as JsonObject).type;
          chunks.push(...translator.event({ event: String(type), data: event.data }));
        }
      } catch {
        // A stream that broke: what came before it is the answer.
      }
      return assembleCompletion(
        chunks.filter((c) => c !== DONE),
        model,
      );
    },
  };
}
