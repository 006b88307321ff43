import { isObject, type JsonObject } from '../../../shared/json.js';
import type { NativeCall } from '../../dialect-types.js';
import { chatOfResponse } from '../../providers/openai-responses.js';
import type { ChatCompletion } from '../../providers/types.js';
import { ssePayloads } from '../../sse.js';
import type { ChatRequest } from '../../types.js';
import { RelabelEncoder } from '../relabel.js';
import type { ResponseFrame } from './answer.js';

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
