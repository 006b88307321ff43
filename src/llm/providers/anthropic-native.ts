import { anthropic } from './anthropic.js';
import type { JsonObject, ProviderAdapter, SseEvent, StreamTranslator } from './types.js';

/*
 * Anthropic's Messages API called natively by the gateway's Messages route: the client's request goes as
 * it is (the upstream's model name in it), the answer's bytes and events come back as they are, and the
 * answer is also read as a chat completion (by the Anthropic adapter's translation) for pricing and the
 * task log.
 */

/** Events pass unchanged; the Anthropic adapter's translator reads them alongside for usage and the end. */
class MessagesPassThrough implements StreamTranslator {
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
    return event.event === 'ping' ? [] : [event.data];
  }
}

/** The Messages body (carried as the internal request, its `messages` Anthropic's turns) sent as it is. */
export const anthropicMessages: ProviderAdapter = {
  ...anthropic,
  nativeAnswer: true,
  requestBody({ model, request }, stream) {
    const { stream_options: _options, ...body } = request;
    const out: JsonObject = { ...body, model: model.upstreamModel };
    if (stream) out.stream = true;
    else delete out.stream;
    return out;
  },
  streamTranslator: (ctx) =>
    new MessagesPassThrough(anthropic.streamTranslator({ ...ctx, clientWantsUsage: true })),
};
