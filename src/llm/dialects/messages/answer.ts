import type {
  ContentBlock,
  Message,
  RawMessageStreamEvent,
  StopReason,
} from '@anthropic-ai/sdk/resources/messages/messages';
import { chatAnswer } from '../../../shared/chat-answer.js';
import { isObject, type JsonObject } from '../../../shared/json.js';
import type { StreamEncoder } from '../../dialect-types.js';
import { readUsage } from '../../providers/openai-compatible.js';
import type { StreamResult } from '../../stream-pump.js';
import type { Usage } from '../../types.js';

/*
 * The internal answer (a chat completion, or its chunks) as Anthropic's Messages answer: a `message`, or
 * the events message_start, content_block_start/delta/stop, message_delta, message_stop.
 */

export interface MessageFrame {
  id: string;
  /** The model as the client named it. */
  model: string;
}

const STOP_REASONS: Record<string, StopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

function stopReasonOf(finish: unknown): StopReason | null {
  return typeof finish === 'string' ? (STOP_REASONS[finish] ?? 'end_turn') : null;
}

function parseInput(args: unknown): unknown {
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return { arguments: args };
  }
}

function usageOf(usage: Usage | null): Message['usage'] {
  return {
    input_tokens: usage?.prompt_tokens ?? 0,
    output_tokens: usage?.completion_tokens ?? 0,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null,
  } as Message['usage'];
}

function envelope(
  frame: MessageFrame,
  content: ContentBlock[],
  stop: StopReason | null,
  usage: Usage | null,
): Message {
  return {
    id: frame.id,
    type: 'message',
    role: 'assistant',
    model: frame.model,
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: usageOf(usage),
  } as Message;
}

/** A chat completion as an Anthropic message. */
export function messageOf(frame: MessageFrame, completion: JsonObject): Message {
  const answer = chatAnswer(completion);
  const content: ContentBlock[] = [];
  const text = answer.message?.content;
  if (typeof text === 'string' && text !== '') content.push({ type: 'text', text, citations: null });
  for (const call of answer.toolCalls) {
    content.push({
      type: 'tool_use',
      id: call.id ?? '',
      name: call.name,
      input: parseInput(call.arguments),
    } as ContentBlock);
  }
  return envelope(frame, content, stopReasonOf(answer.finishReason), readUsage(completion.usage));
}

interface OpenBlock {
  index: number;
  kind: 'text' | 'tool_use';
}

/** Chat-completion chunks as Anthropic stream events, one chunk at a time. */
export class MessagesStreamEncoder implements StreamEncoder {
  private open: OpenBlock | null = null;
  private blocks = 0;
  private readonly toolBlocks = new Map<number, number>();
  private finish: unknown = null;
  private usage: Usage | null = null;
  private failed = false;

  constructor(private readonly frame: MessageFrame) {}

  private event(event: RawMessageStreamEvent | { type: 'error'; error: JsonObject }): string {
    return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
  }

  start(): string {
    return this.event({ type: 'message_start', message: envelope(this.frame, [], null, null) });
  }

  private closeOpen(): string {
    if (!this.open) return '';
    const out = this.event({ type: 'content_block_stop', index: this.open.index });
    this.open = null;
    return out;
  }

  chunk(chunk: JsonObject): string {
    let out = '';
    const usage = readUsage(chunk.usage);
    if (usage) this.usage = usage;
    const choice = Array.isArray(chunk.choices) && isObject(chunk.choices[0]) ? chunk.choices[0] : null;
    if (!choice) return out;
    if (choice.finish_reason != null) this.finish = choice.finish_reason;
    const delta = isObject(choice.delta) ? choice.delta : {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      if (this.open?.kind !== 'text') {
        out += this.closeOpen();
        this.open = { index: this.blocks++, kind: 'text' };
        out += this.event({
          type: 'content_block_start',
          index: this.open.index,
          content_block: { type: 'text', text: '', citations: null },
        });
      }
      out += this.event({
        type: 'content_block_delta',
        index: this.open.index,
        delta: { type: 'text_delta', text: delta.content },
      });
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const d of delta.tool_calls) {
        if (!isObject(d)) continue;
        const callIndex = typeof d.index === 'number' ? d.index : 0;
        const fn = isObject(d.function) ? d.function : {};
        let index = this.toolBlocks.get(callIndex);
        if (index === undefined) {
          out += this.closeOpen();
          index = this.blocks++;
          this.toolBlocks.set(callIndex, index);
          this.open = { index, kind: 'tool_use' };
          out += this.event({
            type: 'content_block_start',
            index,
            content_block: {
              type: 'tool_use',
              id: typeof d.id === 'string' ? d.id : `toolu_${this.frame.id.slice(4)}_${callIndex}`,
              name: typeof fn.name === 'string' ? fn.name : '',
              input: {},
            } as ContentBlock,
          } as RawMessageStreamEvent);
        }
        if (typeof fn.arguments === 'string' && fn.arguments !== '') {
          out += this.event({
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: fn.arguments },
          });
        }
      }
    }
    return out;
  }

  error(code: string, message: string): string {
    this.failed = true;
    const type =
      code === 'rate_limit_exceeded'
        ? 'rate_limit_error'
        : code === 'content_filter'
          ? 'invalid_request_error'
          : code === 'upstream_unavailable'
            ? 'overloaded_error'
            : 'api_error';
    return this.event({ type: 'error', error: { type, message } });
  }

  end(result: StreamResult): string {
    if (this.failed) return '';
    if (result.error) return this.error(result.error.code, result.error.message);
    const usage = this.usage ?? result.usage;
    return (
      this.closeOpen() +
      this.event({
        type: 'message_delta',
        delta: { stop_reason: stopReasonOf(this.finish) ?? 'end_turn', stop_sequence: null },
        usage: {
          input_tokens: usage?.prompt_tokens ?? 0,
          output_tokens: usage?.completion_tokens ?? 0,
          cache_creation_input_tokens: null,
          cache_read_input_tokens: null,
          server_tool_use: null,
        },
      } as RawMessageStreamEvent) +
      this.event({ type: 'message_stop' })
    );
  }
}
