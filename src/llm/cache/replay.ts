import { isObject, type JsonObject } from '../../shared/json.js';
import { DONE } from '../providers/types.js';
import type { ChatStream, FrameSink, StreamResult } from '../stream-pump.js';
import type { CacheEntry } from './store.js';

const frame = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`;

/**
 * The chat-completion chunks a cached completion amounts to, as server-sent events: per choice its
 * role and text, its tool calls, then its finish reason; the usage chunk when the client asked for it
 * (`stream_options.include_usage`); `[DONE]` last.
 */
export function replayFrames(completion: JsonObject, includeUsage: boolean): string {
  const head = {
    id: typeof completion.id === 'string' ? completion.id : 'chatcmpl-cached',
    object: 'chat.completion.chunk',
    created: typeof completion.created === 'number' ? completion.created : Math.floor(Date.now() / 1000),
    model: completion.model,
  };
  const choices = Array.isArray(completion.choices) ? completion.choices.filter(isObject) : [];
  let out = '';
  for (const choice of choices) {
    const index = typeof choice.index === 'number' ? choice.index : 0;
    const message = isObject(choice.message) ? choice.message : {};
    const delta: JsonObject = {
      role: 'assistant',
      content: typeof message.content === 'string' ? message.content : '',
    };
    if (message.refusal != null) delta.refusal = message.refusal;
    out += frame({ ...head, choices: [{ index, delta, logprobs: null, finish_reason: null }] });
    if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      const toolCalls = message.tool_calls.filter(isObject).map((call, i) => ({ index: i, ...call }));
      out += frame({
        ...head,
        choices: [{ index, delta: { tool_calls: toolCalls }, logprobs: null, finish_reason: null }],
      });
    }
    out += frame({
      ...head,
      choices: [{ index, delta: {}, logprobs: null, finish_reason: choice.finish_reason ?? 'stop' }],
    });
  }
  if (includeUsage && completion.usage != null)
    out += frame({ ...head, choices: [], usage: completion.usage });
  return `${out}data: ${DONE}\n\n`;
}

/** A cache hit as a stream: the cached completion's chunks, sent in one write, at no cost. */
export class ReplayStream implements ChatStream {
  readonly servedBy: string;
  readonly upstreamModel: string;
  private readonly frames: string;
  private readonly outcome: StreamResult;

  /** `frames`: the stored completion's chunks (`replayFrames`), built once per entry and reused. */
  constructor(entry: CacheEntry, frames: string, startedAt: number) {
    this.servedBy = entry.servedBy;
    this.upstreamModel = entry.upstreamModel;
    this.frames = frames;
    this.outcome = {
      sse: this.frames,
      usage: entry.usage,
      cost: 0,
      latencyMs: performance.now() - startedAt,
      servedBy: entry.servedBy,
      attempts: 0,
      error: null,
    };
  }

  pipe(sink: FrameSink): Promise<StreamResult> {
    sink.end(this.frames, this.outcome);
    return Promise.resolve(this.outcome);
  }

  result(): StreamResult {
    return this.outcome;
  }
}
