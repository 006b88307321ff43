import { isObject, type JsonObject } from './json.js';

/*
 * The one reader of a chat completion's answer: its first choice, message, text and tool calls, read
 * defensively once (a completion that came from an upstream, a stored task log or an eval's rows is
 * untyped JSON), so that the gateway's dialects, the recorder, stored completions and responses, eval
 * output items and graders read a typed value.
 */

/** A tool call of the answer, as the upstream sent it (arguments as JSON text). */
export interface AnswerToolCall {
  id: string | null;
  name: string;
  arguments: string;
}

/** The first choice of a chat completion. */
export interface ChatAnswer {
  /** The message as sent (every field, for carrying it on); null when there is none. */
  message: JsonObject | null;
  /** The text: a string content, or its text parts joined; '' when there is none. */
  text: string;
  toolCalls: AnswerToolCall[];
  finishReason: string | null;
  /** The model's refusal, when it sent a non-empty one. */
  refusal: string | null;
}

const EMPTY: ChatAnswer = { message: null, text: '', toolCalls: [], finishReason: null, refusal: null };

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => (isObject(part) && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

function toolCallsOf(value: unknown): AnswerToolCall[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((call: unknown) => {
    if (!isObject(call) || !isObject(call.function)) return [];
    const { name, arguments: args } = call.function;
    return [
      {
        id: typeof call.id === 'string' ? call.id : null,
        name: typeof name === 'string' ? name : '',
        arguments: typeof args === 'string' ? args : args === undefined ? '' : JSON.stringify(args),
      },
    ];
  });
}

/** The first choice of a chat completion (an empty answer when the body has none). */
export function chatAnswer(body: unknown): ChatAnswer {
  if (!isObject(body) || !Array.isArray(body.choices)) return EMPTY;
  const first: unknown = body.choices[0];
  if (!isObject(first)) return EMPTY;
  const message = isObject(first.message) ? first.message : null;
  return {
    message,
    text: textOf(message?.content),
    toolCalls: toolCallsOf(message?.tool_calls),
    finishReason: typeof first.finish_reason === 'string' ? first.finish_reason : null,
    refusal: typeof message?.refusal === 'string' && message.refusal.length > 0 ? message.refusal : null,
  };
}
