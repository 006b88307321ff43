import type {
  Response as ApiResponse,
  ResponseFunctionToolCall,
  ResponseOutputItem,
  ResponseOutputMessage,
  ResponseStreamEvent,
  ResponseUsage,
  Tool,
} from 'openai/resources/responses/responses';
import { chatAnswer } from '../../../shared/chat-answer.js';
import { isObject, type JsonObject } from '../../../shared/json.js';
import type { StreamEncoder } from '../../dialect-types.js';
import { readUsage } from '../../providers/openai-compatible.js';
import type { StreamResult } from '../../stream-pump.js';
import type { Usage } from '../../types.js';

/*
 * The internal answer (a chat completion, or its chunks) as the Responses API's answer: a `response`
 * object, or the event sequence `response.created` … `response.completed`.
 */

/** What the answer repeats of the request (as the Responses API does), and its ids. */
export interface ResponseFrame {
  id: string;
  /** The model as the client named it. */
  model: string;
  createdAt: number;
  request: JsonObject;
}

/** `resp_…` from the task log's `log_…` (a stored response is the task log), and back. */
export function responseIdOf(logId: string): string {
  return `resp_${logId.slice(4)}`;
}

export function logIdOf(responseId: string): string | null {
  return /^resp_[A-Za-z0-9_-]{1,100}$/.test(responseId) ? `log_${responseId.slice(5)}` : null;
}

function usageOf(usage: Usage | null): ResponseUsage | undefined {
  if (!usage) return undefined;
  const extra = usage as Usage & JsonObject;
  const details = isObject(extra.prompt_tokens_details) ? extra.prompt_tokens_details : {};
  const out = isObject(extra.completion_tokens_details) ? extra.completion_tokens_details : {};
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: Number(details.cached_tokens ?? 0), cache_write_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: Number(out.reasoning_tokens ?? 0) },
    total_tokens: usage.total_tokens,
  };
}

function messageItem(id: string, text: string, status: 'in_progress' | 'completed'): ResponseOutputMessage {
  return {
    id,
    type: 'message',
    role: 'assistant',
    status,
    content: status === 'completed' || text !== '' ? [{ type: 'output_text', text, annotations: [] }] : [],
  };
}

function callItem(
  id: string,
  callId: string,
  name: string,
  args: string,
  status: 'in_progress' | 'completed',
): ResponseFunctionToolCall {
  return { id, type: 'function_call', call_id: callId, name, arguments: args, status };
}

/** The request's own settings, echoed on the response object as the Responses API does. */
function envelope(frame: ResponseFrame, status: ApiResponse['status']): ApiResponse {
  const r = frame.request;
  const num = (v: unknown) => (typeof v === 'number' ? v : null);
  return {
    id: frame.id,
    object: 'response',
    created_at: frame.createdAt,
    status,
    error: null,
    incomplete_details: null,
    instructions: typeof r.instructions === 'string' ? r.instructions : null,
    max_output_tokens: num(r.max_output_tokens),
    metadata: isObject(r.metadata) ? (r.metadata as Record<string, string>) : {},
    model: frame.model,
    output: [],
    output_text: '',
    parallel_tool_calls: r.parallel_tool_calls !== false,
    previous_response_id: typeof r.previous_response_id === 'string' ? r.previous_response_id : null,
    reasoning: isObject(r.reasoning)
      ? (r.reasoning as ApiResponse['reasoning'])
      : { effort: null, summary: null },
    store: r.store !== false,
    temperature: num(r.temperature),
    text: isObject(r.text) ? (r.text as ApiResponse['text']) : { format: { type: 'text' } },
    tool_choice: (r.tool_choice ?? 'auto') as ApiResponse['tool_choice'],
    tools: Array.isArray(r.tools) ? (r.tools as Tool[]) : [],
    top_p: num(r.top_p),
    truncation: r.truncation === 'auto' ? 'auto' : 'disabled',
    ...(typeof r.user === 'string' ? { user: r.user } : {}),
  } as ApiResponse;
}

/** A chat completion as a finished `response` object. */
export function responseOf(frame: ResponseFrame, completion: JsonObject): ApiResponse {
  const answer = chatAnswer(completion);
  const output: ResponseOutputItem[] = [];
  const text = typeof answer.message?.content === 'string' ? answer.message.content : '';
  const suffix = frame.id.slice(5);
  if (text !== '') output.push(messageItem(`msg_${suffix}`, text, 'completed'));
  answer.toolCalls.forEach((call, i) => {
    const callId = call.id ?? `call_${suffix}_${i}`;
    output.push(callItem(`fc_${suffix}_${i}`, callId, call.name, call.arguments, 'completed'));
  });
  const incomplete = answer.finishReason === 'length';
  const response = envelope(frame, incomplete ? 'incomplete' : 'completed');
  response.output = output;
  response.output_text = text;
  if (incomplete) response.incomplete_details = { reason: 'max_output_tokens' };
  const usage = usageOf(readUsage(completion.usage));
  if (usage) response.usage = usage;
  return response;
}

/** Where one chat choice's parts went in the response's output. */
interface OpenItem {
  outputIndex: number;
  id: string;
  kind: 'message' | 'call';
  text: string;
  callId: string;
  name: string;
}

/**
 * Chat-completion chunks as Responses events, one chunk at a time: the text becomes a message item,
 * each tool call a function_call item, each opened when its first delta comes and closed at the end.
 */
export class ResponsesStreamEncoder implements StreamEncoder {
  private seq = 0;
  private readonly items: OpenItem[] = [];
  private message: OpenItem | null = null;
  private readonly calls = new Map<number, OpenItem>();
  private finish: unknown = null;
  private usage: Usage | null = null;
  private failed = false;

  constructor(private readonly frame: ResponseFrame) {}

  private event(event: ResponseStreamEvent): string {
    const withSeq = { ...event, sequence_number: this.seq++ };
    return `event: ${event.type}\ndata: ${JSON.stringify(withSeq)}\n\n`;
  }

  start(): string {
    const response = envelope(this.frame, 'in_progress');
    return (
      this.event({ type: 'response.created', response, sequence_number: 0 }) +
      this.event({ type: 'response.in_progress', response, sequence_number: 0 })
    );
  }

  private open(kind: OpenItem['kind'], callId = '', name = ''): [OpenItem, string] {
    const outputIndex = this.items.length;
    const suffix = this.frame.id.slice(5);
    const id = kind === 'message' ? `msg_${suffix}` : `fc_${suffix}_${outputIndex}`;
    const item: OpenItem = { outputIndex, id, kind, text: '', callId, name };
    this.items.push(item);
    const shown =
      kind === 'message' ? messageItem(id, '', 'in_progress') : callItem(id, callId, name, '', 'in_progress');
    let out = this.event({
      type: 'response.output_item.added',
      output_index: outputIndex,
      item: shown,
      sequence_number: 0,
    });
    if (kind === 'message') {
      out += this.event({
        type: 'response.content_part.added',
        item_id: id,
        output_index: outputIndex,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
        sequence_number: 0,
      });
    }
    return [item, out];
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
      if (!this.message) {
        let opened: string;
        [this.message, opened] = this.open('message');
        out += opened;
      }
      this.message.text += delta.content;
      // The most frequent event, written directly (the same JSON an object would serialise to).
      out +=
        `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"${this.message.id}",` +
        `"output_index":${this.message.outputIndex},"content_index":0,"delta":${JSON.stringify(delta.content)},` +
        `"logprobs":[],"sequence_number":${this.seq++}}\n\n`;
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const d of delta.tool_calls) {
        if (!isObject(d)) continue;
        const index = typeof d.index === 'number' ? d.index : 0;
        const fn = isObject(d.function) ? d.function : {};
        let call = this.calls.get(index);
        if (!call) {
          let opened: string;
          const callId = typeof d.id === 'string' ? d.id : `call_${this.frame.id.slice(5)}_${index}`;
          [call, opened] = this.open('call', callId, typeof fn.name === 'string' ? fn.name : '');
          this.calls.set(index, call);
          out += opened;
        } else if (typeof fn.name === 'string') call.name += fn.name;
        if (typeof fn.arguments === 'string' && fn.arguments !== '') {
          call.text += fn.arguments;
          out += this.event({
            type: 'response.function_call_arguments.delta',
            item_id: call.id,
            output_index: call.outputIndex,
            delta: fn.arguments,
            sequence_number: 0,
          });
        }
      }
    }
    return out;
  }

  error(code: string, message: string): string {
    this.failed = true;
    const response = envelope(this.frame, 'failed');
    response.error = { code: 'server_error', message: `${code}: ${message}` };
    return this.event({ type: 'response.failed', response, sequence_number: 0 });
  }

  private close(item: OpenItem): [string, ResponseOutputItem] {
    let out = '';
    if (item.kind === 'message') {
      const done = messageItem(item.id, item.text, 'completed');
      const base = { item_id: item.id, output_index: item.outputIndex, content_index: 0, sequence_number: 0 };
      out += this.event({ type: 'response.output_text.done', ...base, text: item.text, logprobs: [] });
      out += this.event({
        type: 'response.content_part.done',
        ...base,
        part: { type: 'output_text', text: item.text, annotations: [] },
      });
      out += this.event({
        type: 'response.output_item.done',
        output_index: item.outputIndex,
        item: done,
        sequence_number: 0,
      });
      return [out, done];
    }
    const done = callItem(item.id, item.callId, item.name, item.text, 'completed');
    out += this.event({
      type: 'response.function_call_arguments.done',
      item_id: item.id,
      output_index: item.outputIndex,
      name: item.name,
      arguments: item.text,
      sequence_number: 0,
    });
    out += this.event({
      type: 'response.output_item.done',
      output_index: item.outputIndex,
      item: done,
      sequence_number: 0,
    });
    return [out, done];
  }

  end(result: StreamResult): string {
    if (this.failed) return '';
    if (result.error) return this.error(result.error.code, result.error.message);
    let out = '';
    const output: ResponseOutputItem[] = [];
    for (const item of this.items) {
      const [events, done] = this.close(item);
      out += events;
      output.push(done);
    }
    const incomplete = this.finish === 'length';
    const response = envelope(this.frame, incomplete ? 'incomplete' : 'completed');
    response.output = output;
    response.output_text = this.message?.text ?? '';
    if (incomplete) response.incomplete_details = { reason: 'max_output_tokens' };
    const usage = usageOf(this.usage ?? result.usage);
    if (usage) response.usage = usage;
    const type = incomplete ? 'response.incomplete' : 'response.completed';
    return out + this.event({ type, response, sequence_number: 0 } as ResponseStreamEvent);
  }
}
