import { isObject, type JsonObject } from '../../../shared/json.js';
import { assembleCompletion } from '../../assemble.js';
import type { NativeCall } from '../../dialect-types.js';
import { anthropic } from '../../providers/anthropic.js';
import { DONE } from '../../providers/types.js';
import { SseReader } from '../../sse.js';
import type { ChatRequest } from '../../types.js';
import { RelabelEncoder } from '../relabel.js';

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
