import { ApiError } from '../../shared/errors.js';
import { isObject } from '../../shared/json.js';
import type { ChatMessage, ChatRequest } from '../types.js';
import type { JsonObject } from './types.js';

/** Anthropic requires max_tokens; this is used when neither the request nor the model's defaults set it. */
export const DEFAULT_MAX_TOKENS = 4096;

type Block = JsonObject & { type: string };
interface MessagesTurn {
  role: 'user' | 'assistant';
  content: Block[];
}

function unsupported(message: string, field: string): ApiError {
  return new ApiError('bad_request', message, { provider: 'anthropic', field });
}

/** Text of a message content: a string, or the text parts of a content array. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => (isObject(part) && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

function imageBlock(part: JsonObject): Block {
  const image = isObject(part.image_url) ? part.image_url : {};
  const url = typeof image.url === 'string' ? image.url : '';
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } };
  if (!/^https?:\/\//.test(url))
    throw unsupported('image_url.url must be an http(s) or data: URL', 'messages');
  return { type: 'image', source: { type: 'url', url } };
}

function userBlocks(content: unknown): Block[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  return content.map((part: unknown): Block => {
    if (!isObject(part)) throw unsupported('Message content parts must be objects', 'messages');
    if (part.type === 'text') return { type: 'text', text: typeof part.text === 'string' ? part.text : '' };
    if (part.type === 'image_url') return imageBlock(part);
    throw unsupported(
      `Content parts of type '${String(part.type)}' are not supported by Anthropic models`,
      'messages',
    );
  });
}

function parseArguments(raw: unknown): JsonObject {
  if (isObject(raw)) return raw;
  if (typeof raw !== 'string' || raw.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    return isObject(parsed) ? parsed : { value: parsed };
  } catch {
    throw unsupported('tool_calls[].function.arguments must be a JSON object', 'messages');
  }
}

function assistantBlocks(message: ChatMessage): Block[] {
  const blocks: Block[] = [];
  const text = textOf(message.content);
  if (text !== '') blocks.push({ type: 'text', text });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls as unknown[]) {
      if (!isObject(call) || !isObject(call.function)) continue;
      blocks.push({
        type: 'tool_use',
        id: typeof call.id === 'string' ? call.id : '',
        name: typeof call.function.name === 'string' ? call.function.name : '',
        input: parseArguments(call.function.arguments),
      });
    }
  }
  return blocks;
}

function toolResult(message: ChatMessage): Block {
  return {
    type: 'tool_result',
    tool_use_id: typeof message.tool_call_id === 'string' ? message.tool_call_id : '',
    content: textOf(message.content),
  };
}

/** System text and alternating turns (consecutive same-role messages merged, as Anthropic requires). */
function translateMessages(messages: ChatMessage[]): { system: string[]; turns: MessagesTurn[] } {
  const system: string[] = [];
  const turns: MessagesTurn[] = [];
  const push = (role: MessagesTurn['role'], content: Block[]) => {
    const last = turns[turns.length - 1];
    if (last && last.role === role) last.content.push(...content);
    else turns.push({ role, content });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(textOf(message.content));
        break;
      case 'user':
        push('user', userBlocks(message.content));
        break;
      case 'assistant':
        push('assistant', assistantBlocks(message));
        break;
      case 'tool':
        push('user', [toolResult(message)]);
        break;
      default:
        throw unsupported(
          `Messages with role '${message.role}' are not supported by Anthropic models`,
          'messages',
        );
    }
  }
  return { system, turns };
}

/** The forced tool that carries a `json_schema` response format, or null. */
export interface JsonTool {
  name: string;
  /** The schema was not an object and travels wrapped as `{value: …}`. */
  wrapped: boolean;
  schema: JsonObject;
}

export function jsonToolOf(request: ChatRequest): JsonTool | null {
  const format = request.response_format;
  if (!isObject(format) || format.type !== 'json_schema' || !isObject(format.json_schema)) return null;
  const spec = format.json_schema;
  const schema = isObject(spec.schema) ? spec.schema : { type: 'object' };
  const name = typeof spec.name === 'string' && spec.name !== '' ? spec.name : 'json_response';
  const wrapped = schema.type !== 'object';
  return {
    name,
    wrapped,
    schema: wrapped ? { type: 'object', properties: { value: schema }, required: ['value'] } : schema,
  };
}

function translateTools(tools: unknown): JsonObject[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((tool: unknown) => {
    if (!isObject(tool) || tool.type !== 'function' || !isObject(tool.function)) {
      throw unsupported('Only tools of type function are supported by Anthropic models', 'tools');
    }
    const fn = tool.function;
    const out: JsonObject = {
      name: fn.name,
      input_schema: isObject(fn.parameters) ? fn.parameters : { type: 'object', properties: {} },
    };
    if (typeof fn.description === 'string') out.description = fn.description;
    return out;
  });
}

function translateToolChoice(choice: unknown, parallel: unknown): JsonObject | undefined {
  let out: JsonObject | undefined;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'required') out = { type: 'any' };
  else if (choice === 'none') out = { type: 'none' };
  else if (isObject(choice) && isObject(choice.function)) out = { type: 'tool', name: choice.function.name };
  if (parallel === false) out = { ...(out ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return out;
}

/** A chat-completion request as an Anthropic Messages request. */
export function toMessagesRequest(request: ChatRequest, upstreamModel: string, stream: boolean): JsonObject {
  if (typeof request.n === 'number' && request.n > 1) {
    throw unsupported('n > 1 is not supported by Anthropic models', 'n');
  }
  const { system, turns } = translateMessages(request.messages);
  const format = isObject(request.response_format) ? request.response_format : null;
  if (format?.type === 'json_object') system.push('Respond with a single JSON object and nothing else.');
  const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? DEFAULT_MAX_TOKENS;
  const body: JsonObject = { model: upstreamModel, messages: turns, max_tokens: maxTokens };
  if (system.length > 0) body.system = system.join('\n\n');
  for (const field of ['temperature', 'top_p', 'top_k'] as const) {
    if (typeof request[field] === 'number') body[field] = request[field];
  }
  if (typeof request.stop === 'string') body.stop_sequences = [request.stop];
  else if (Array.isArray(request.stop)) body.stop_sequences = request.stop;
  if (typeof request.user === 'string') body.metadata = { user_id: request.user };
  const tools = translateTools(request.tools);
  const toolChoice = translateToolChoice(request.tool_choice, request.parallel_tool_calls);
  if (toolChoice) body.tool_choice = toolChoice;
  const jsonTool = jsonToolOf(request);
  if (jsonTool) {
    tools.push({
      name: jsonTool.name,
      description: 'Give the final answer as the input of this tool.',
      input_schema: jsonTool.schema,
    });
    body.tool_choice = { type: 'tool', name: jsonTool.name };
  }
  if (tools.length > 0) body.tools = tools;
  if (stream) body.stream = true;
  return body;
}
