import { ApiError } from '../../shared/errors.js';
import { isObject } from '../../shared/json.js';
import type { ChatMessage, ChatRequest } from '../types.js';
import { textOf } from './anthropic-request.js';
import type { JsonObject } from './types.js';

/*
 * A chat-completion request as a Gemini `generateContent` body: system messages as `systemInstruction`,
 * turns as `contents` of parts (user, and `model` for the assistant), tool calls and their results as
 * `functionCall` / `functionResponse` parts, tools as `functionDeclarations`, and the sampling parameters,
 * stop sequences and response format in `generationConfig`.
 */

type Part = JsonObject;
interface Turn {
  role: 'user' | 'model';
  parts: Part[];
}

function unsupported(message: string, field: string): ApiError {
  return new ApiError('bad_request', message, { provider: 'gemini', field });
}

/** Image types by file extension, for images given by URL (Gemini's `fileData` names its type). */
const IMAGE_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  heic: 'image/heic',
  heif: 'image/heif',
};

function imagePart(part: JsonObject): Part {
  const image = isObject(part.image_url) ? part.image_url : {};
  const url = typeof image.url === 'string' ? image.url : '';
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return { inlineData: { mimeType: data[1], data: data[2] } };
  if (!/^https?:\/\//.test(url))
    throw unsupported('image_url.url must be an http(s) or data: URL', 'messages');
  const extension = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase() ?? '';
  return { fileData: { fileUri: url, mimeType: IMAGE_TYPES[extension] ?? 'image/jpeg' } };
}

function userParts(content: unknown): Part[] {
  if (typeof content === 'string') return [{ text: content }];
  if (!Array.isArray(content)) return [];
  return content.map((part: unknown): Part => {
    if (!isObject(part)) throw unsupported('Message content parts must be objects', 'messages');
    if (part.type === 'text') return { text: typeof part.text === 'string' ? part.text : '' };
    if (part.type === 'image_url') return imagePart(part);
    throw unsupported(
      `Content parts of type '${String(part.type)}' are not supported by Gemini models`,
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

/**
 * The thought signature Gemini gave a function call, as Google's OpenAI-compatible endpoint carries it on
 * the tool call (`extra_content.google.thought_signature`); thinking models want it back with the call.
 */
export function thoughtSignatureOf(call: JsonObject): string | null {
  const extra = isObject(call.extra_content) ? call.extra_content : null;
  const google = extra && isObject(extra.google) ? extra.google : null;
  return google && typeof google.thought_signature === 'string' ? google.thought_signature : null;
}

/** The assistant's parts; records the function name of each tool call id for the results that follow. */
function modelParts(message: ChatMessage, names: Map<string, string>): Part[] {
  const parts: Part[] = [];
  const text = textOf(message.content);
  if (text !== '') parts.push({ text });
  if (!Array.isArray(message.tool_calls)) return parts;
  for (const call of message.tool_calls as unknown[]) {
    if (!isObject(call) || !isObject(call.function)) continue;
    const name = typeof call.function.name === 'string' ? call.function.name : '';
    if (typeof call.id === 'string') names.set(call.id, name);
    const part: Part = { functionCall: { name, args: parseArguments(call.function.arguments) } };
    const signature = thoughtSignatureOf(call);
    if (signature !== null) part.thoughtSignature = signature;
    parts.push(part);
  }
  return parts;
}

/** A tool message as the function response its call asked for (Gemini names the function, not the call). */
function functionResponse(message: ChatMessage, names: Map<string, string>): Part {
  const id = typeof message.tool_call_id === 'string' ? message.tool_call_id : '';
  const name = names.get(id);
  if (name === undefined) {
    throw unsupported(
      `The tool message for '${id}' answers no tool call of an earlier assistant message`,
      'messages',
    );
  }
  const text = textOf(message.content);
  let response: JsonObject = { result: text };
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObject(parsed)) response = parsed;
  } catch {
    // Plain text: sent as the result.
  }
  return { functionResponse: { name, response } };
}

/** System text and turns (consecutive same-role turns merged: function responses join one user turn). */
function translateMessages(messages: ChatMessage[]): { system: string[]; turns: Turn[] } {
  const system: string[] = [];
  const turns: Turn[] = [];
  const names = new Map<string, string>();
  const push = (role: Turn['role'], parts: Part[]) => {
    if (parts.length === 0) return;
    const last = turns[turns.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else turns.push({ role, parts });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(textOf(message.content));
        break;
      case 'user':
        push('user', userParts(message.content));
        break;
      case 'assistant':
        push('model', modelParts(message, names));
        break;
      case 'tool':
        push('user', [functionResponse(message, names)]);
        break;
      default:
        throw unsupported(
          `Messages with role '${message.role}' are not supported by Gemini models`,
          'messages',
        );
    }
  }
  return { system, turns };
}

function translateTools(tools: unknown): JsonObject[] {
  if (!Array.isArray(tools) || tools.length === 0) return [];
  const declarations = tools.map((tool: unknown) => {
    if (!isObject(tool) || tool.type !== 'function' || !isObject(tool.function)) {
      throw unsupported('Only tools of type function are supported by Gemini models', 'tools');
    }
    const fn = tool.function;
    const out: JsonObject = { name: fn.name };
    if (typeof fn.description === 'string') out.description = fn.description;
    // JSON Schema as it is (`parametersJsonSchema`), not Gemini's OpenAPI subset (`parameters`).
    if (isObject(fn.parameters)) out.parametersJsonSchema = fn.parameters;
    return out;
  });
  return [{ functionDeclarations: declarations }];
}

function translateToolChoice(choice: unknown): JsonObject | undefined {
  let config: JsonObject | undefined;
  if (choice === 'auto') config = { mode: 'AUTO' };
  else if (choice === 'required') config = { mode: 'ANY' };
  else if (choice === 'none') config = { mode: 'NONE' };
  else if (isObject(choice) && isObject(choice.function))
    config = { mode: 'ANY', allowedFunctionNames: [choice.function.name] };
  return config ? { functionCallingConfig: config } : undefined;
}

/** The chat sampling parameters under their `generationConfig` names. */
const SAMPLING: Record<string, string> = {
  temperature: 'temperature',
  top_p: 'topP',
  top_k: 'topK',
  seed: 'seed',
  presence_penalty: 'presencePenalty',
  frequency_penalty: 'frequencyPenalty',
};

/** The chat parameters of a request (or a model's defaults) as Gemini's `generationConfig`. */
export function generationConfigOf(request: JsonObject): JsonObject {
  const config: JsonObject = {};
  for (const [from, to] of Object.entries(SAMPLING))
    if (typeof request[from] === 'number') config[to] = request[from];
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (typeof maxTokens === 'number') config.maxOutputTokens = maxTokens;
  if (typeof request.stop === 'string') config.stopSequences = [request.stop];
  else if (Array.isArray(request.stop) && request.stop.length > 0) config.stopSequences = request.stop;
  const format = isObject(request.response_format) ? request.response_format : null;
  if (format?.type === 'json_object') config.responseMimeType = 'application/json';
  else if (format?.type === 'json_schema') {
    config.responseMimeType = 'application/json';
    const spec = isObject(format.json_schema) ? format.json_schema : {};
    // JSON Schema as it is (`responseJsonSchema`), not Gemini's OpenAPI subset (`responseSchema`).
    if (isObject(spec.schema)) config.responseJsonSchema = spec.schema;
  }
  return config;
}

/** A chat-completion request as a Gemini `generateContent` body (the model and streaming are in the path). */
export function toGenerateContentRequest(request: ChatRequest): JsonObject {
  if (typeof request.n === 'number' && request.n > 1) {
    throw unsupported('n > 1 is not supported for Gemini models (send the calls one by one)', 'n');
  }
  const { system, turns } = translateMessages(request.messages);
  const body: JsonObject = { contents: turns };
  if (system.length > 0) body.systemInstruction = { parts: [{ text: system.join('\n\n') }] };
  const tools = translateTools(request.tools);
  if (tools.length > 0) body.tools = tools;
  const toolConfig = translateToolChoice(request.tool_choice);
  if (toolConfig) body.toolConfig = toolConfig;
  const config = generationConfigOf(request);
  if (Object.keys(config).length > 0) body.generationConfig = config;
  return body;
}
