import { isObject } from '../../shared/json.js';
import { GeminiStreamTranslator, gemini } from './gemini.js';
import { generationConfigOf } from './gemini-request.js';
import type { JsonObject, ProviderAdapter, SseEvent, StreamTranslator } from './types.js';

/*
 * Google's Gemini API called natively by the gateway's Gemini route: the client's generateContent body
 * goes as it is (the model is in the path), the answer's bytes and events come back as they are, and the
 * answer is also read as a chat completion (by the Gemini adapter's translation) for pricing and the
 * task log.
 */

/** Events pass unchanged; the Gemini adapter's translator reads them alongside for usage and the end. */
class GeminiPassThrough implements StreamTranslator {
  constructor(private readonly inner: StreamTranslator) {}

  get usage() {
    return this.inner.usage;
  }

  get done() {
    return this.inner.done;
  }

  event(event: SseEvent): string[] {
    // Throws on an error event, as the translating adapter does.
    this.inner.event(event);
    return [event.data];
  }
}

/**
 * The client's body without what the internal call added (the model, the stream flags, the model's
 * default parameters under their chat names), those defaults under the client's own `generationConfig`
 * (the client's values win) and a default system prompt where the body has none.
 */
function nativeBody(request: JsonObject, defaults: JsonObject): JsonObject {
  const { model: _model, stream: _stream, stream_options: _options, messages: _messages, ...body } = request;
  if (Object.keys(defaults).length === 0) return body;
  for (const key of Object.keys(defaults)) delete body[key];
  const asked = isObject(body.generationConfig) ? body.generationConfig : {};
  const config = { ...generationConfigOf(defaults), ...asked };
  if (Object.keys(config).length > 0) body.generationConfig = config;
  const system = typeof defaults.system === 'string' ? defaults.system : defaults.system_prompt;
  if (typeof system === 'string' && body.systemInstruction == null)
    body.systemInstruction = { parts: [{ text: system }] };
  return body;
}

/** The generateContent body (carried as the internal request) sent as it is. */
export const geminiNative: ProviderAdapter = {
  ...gemini,
  nativeAnswer: true,
  requestBody: ({ model, request }) => nativeBody(request, model.defaultParameters),
  streamTranslator: (ctx) =>
    new GeminiPassThrough(new GeminiStreamTranslator({ ...ctx, clientWantsUsage: true })),
};
