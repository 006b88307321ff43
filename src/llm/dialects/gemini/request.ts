import { ApiError, type ValidationIssue } from '../../../shared/errors.js';
import { isObject, type JsonObject } from '../../../shared/json.js';
import type { ChatMessage, ChatRequest } from '../../types.js';

/*
 * A Gemini `generateContent` request (contents of parts, systemInstruction, generationConfig, tools,
 * toolConfig) as the internal call: a chat-completion request. The model comes from the path.
 */

type Loc = (string | number)[];

function issue(loc: Loc, msg: string): ValidationIssue {
  return { loc: ['body', ...loc], msg, type: 'value_error' };
}

/** The text of a Content's parts (`systemInstruction`), or of a bare string. */
function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!isObject(content) || !Array.isArray(content.parts)) return null;
  return content.parts
    .map((p: unknown) => (isObject(p) && typeof p.text === 'string' ? p.text : ''))
    .join('');
}

/**
 * Gemini's OpenAPI-style schema (`responseSchema`, a declaration's `parameters`: upper-case types,
 * `nullable`) as JSON Schema.
 */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'nullable' || key === 'propertyOrdering') continue;
    if (key === 'type' && typeof value === 'string') out.type = value.toLowerCase();
    else if (key === 'properties' && isObject(value))
      out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSchemaOf(v)]));
    else if (key === 'items' || key === 'anyOf') out[key] = jsonSchemaOf(value);
    else out[key] = value;
  }
  if (schema.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

/** Tool call ids given to function calls that came without one, by function name, oldest first. */
class CallIds {
  private readonly pending = new Map<string, string[]>();

  /** The id of a function call (its own, or one made from its place in the conversation). */
  call(name: string, id: unknown, at: string): string {
    const given = typeof id === 'string' && id !== '' ? id : `call_${at}`;
    const list = this.pending.get(name) ?? [];
    list.push(given);
    this.pending.set(name, list);
    return given;
  }

  /** The id of the call a function response answers: its own, else the oldest unanswered call of its name. */
  response(name: string, id: unknown): string {
    const list = this.pending.get(name) ?? [];
    if (typeof id === 'string' && id !== '') {
      const at = list.indexOf(id);
      if (at !== -1) list.splice(at, 1);
      return id;
    }
    return list.shift() ?? `call_${name}`;
  }
}

/** A user turn's parts: text and inline images as content parts, function responses as tool messages. */
function userTurn(parts: unknown[], i: number, ids: CallIds, issues: ValidationIssue[]): ChatMessage[] {
  const tools: ChatMessage[] = [];
  const content: JsonObject[] = [];
  parts.forEach((part: unknown, j) => {
    if (!isObject(part)) {
      issues.push(issue(['contents', i, 'parts', j], 'A part must be an object'));
      return;
    }
    if (typeof part.text === 'string') content.push({ type: 'text', text: part.text });
    else if (isObject(part.inlineData) && typeof part.inlineData.data === 'string') {
      const mime = typeof part.inlineData.mimeType === 'string' ? part.inlineData.mimeType : 'image/png';
      content.push({ type: 'image_url', image_url: { url: `data:${mime};base64,${part.inlineData.data}` } });
    } else if (isObject(part.functionResponse) && typeof part.functionResponse.name === 'string') {
      const { name, id, response } = part.functionResponse;
      tools.push({
        role: 'tool',
        tool_call_id: ids.response(name, id),
        content: JSON.stringify(response ?? {}),
      });
    } else {
      issues.push(
        issue(['contents', i, 'parts', j], 'A user part must carry text, inlineData or functionResponse'),
      );
    }
  });
  if (content.length === 0) return tools;
  const only = content.length === 1 ? content[0] : undefined;
  return [...tools, { role: 'user', content: only?.type === 'text' ? only.text : content }];
}

/** A model turn's parts: text as the assistant's content, function calls as its tool calls. */
function modelTurn(parts: unknown[], i: number, ids: CallIds, issues: ValidationIssue[]): ChatMessage {
  let text = '';
  const calls: JsonObject[] = [];
  parts.forEach((part: unknown, j) => {
    if (!isObject(part)) {
      issues.push(issue(['contents', i, 'parts', j], 'A part must be an object'));
      return;
    }
    // A model's thoughts are not part of the conversation it continues.
    if (part.thought === true) return;
    if (typeof part.text === 'string') text += part.text;
    else if (isObject(part.functionCall) && typeof part.functionCall.name === 'string') {
      const { name, id, args } = part.functionCall;
      calls.push({
        id: ids.call(name, id, `${i}_${j}`),
        type: 'function',
        function: { name, arguments: JSON.stringify(args ?? {}) },
      });
    } else {
      issues.push(issue(['contents', i, 'parts', j], 'A model part must carry text or functionCall'));
    }
  });
  return {
    role: 'assistant',
    content: text === '' && calls.length > 0 ? null : text,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
  };
}

function messagesOf(body: JsonObject, issues: ValidationIssue[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (body.systemInstruction !== undefined && body.systemInstruction !== null) {
    const system = textOf(body.systemInstruction);
    if (system === null) issues.push(issue(['systemInstruction'], 'systemInstruction must be a Content'));
    else if (system !== '') messages.push({ role: 'system', content: system });
  }
  const ids = new CallIds();
  const contents = Array.isArray(body.contents) ? body.contents : [];
  contents.forEach((turn: unknown, i) => {
    if (!isObject(turn) || !Array.isArray(turn.parts)) {
      issues.push(issue(['contents', i], 'A content must be an object with parts'));
      return;
    }
    const role = turn.role ?? 'user';
    if (role === 'model') messages.push(modelTurn(turn.parts, i, ids, issues));
    else if (role === 'user' || role === 'function') messages.push(...userTurn(turn.parts, i, ids, issues));
    else issues.push(issue(['contents', i, 'role'], "role must be 'user' or 'model'"));
  });
  return messages;
}

/** `functionDeclarations` as function tools. */
function toolsOf(tools: unknown, issues: ValidationIssue[]): JsonObject[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) {
    issues.push(issue(['tools'], 'tools must be an array'));
    return [];
  }
  const out: JsonObject[] = [];
  tools.forEach((tool: unknown, i) => {
    if (!isObject(tool)) {
      issues.push(issue(['tools', i], 'A tool must be an object'));
      return;
    }
    const declarations = Array.isArray(tool.functionDeclarations) ? tool.functionDeclarations : [];
    for (const d of declarations) {
      if (!isObject(d) || typeof d.name !== 'string' || d.name === '') {
        issues.push(issue(['tools', i, 'functionDeclarations'], 'A function declaration needs a name'));
        continue;
      }
      const parameters =
        d.parametersJsonSchema ?? (d.parameters === undefined ? undefined : jsonSchemaOf(d.parameters));
      out.push({
        type: 'function',
        function: {
          name: d.name,
          ...(typeof d.description === 'string' ? { description: d.description } : {}),
          parameters: parameters ?? { type: 'object', properties: {} },
        },
      });
    }
  });
  return out;
}

/** `toolConfig.functionCallingConfig` as the chat `tool_choice` (undefined: the default). */
function toolChoiceOf(config: unknown): unknown {
  const calling =
    isObject(config) && isObject(config.functionCallingConfig) ? config.functionCallingConfig : null;
  if (!calling) return undefined;
  if (calling.mode === 'NONE') return 'none';
  if (calling.mode === 'ANY') {
    const names = Array.isArray(calling.allowedFunctionNames) ? calling.allowedFunctionNames : [];
    return names.length === 1 && typeof names[0] === 'string'
      ? { type: 'function', function: { name: names[0] } }
      : 'required';
  }
  return calling.mode === 'AUTO' ? 'auto' : undefined;
}

/** The sampling parameters (camelCase in `generationConfig`) under their chat names. */
const SAMPLING: Record<string, string> = {
  temperature: 'temperature',
  topP: 'top_p',
  maxOutputTokens: 'max_tokens',
  seed: 'seed',
  presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty',
  candidateCount: 'n',
};

/** `generationConfig` as chat parameters: sampling, stop sequences, and JSON or JSON-schema output. */
function applyGenerationConfig(request: ChatRequest, config: unknown, issues: ValidationIssue[]): void {
  if (config === undefined || config === null) return;
  if (!isObject(config)) {
    issues.push(issue(['generationConfig'], 'generationConfig must be an object'));
    return;
  }
  for (const [from, to] of Object.entries(SAMPLING))
    if (config[from] !== undefined) request[to] = config[from];
  if (Array.isArray(config.stopSequences) && config.stopSequences.length > 0)
    request.stop = config.stopSequences;
  const schema =
    config.responseJsonSchema ??
    (config.responseSchema === undefined ? undefined : jsonSchemaOf(config.responseSchema));
  if (schema !== undefined) {
    request.response_format = { type: 'json_schema', json_schema: { name: 'response', schema } };
  } else if (config.responseMimeType === 'application/json') {
    request.response_format = { type: 'json_object' };
  }
}

/** A generateContent request (its model from the path) as the internal call; every problem at once. */
export function decodeGeminiRequest(body: JsonObject, model: string, stream: boolean): ChatRequest {
  const issues: ValidationIssue[] = [];
  const messages = messagesOf(body, issues);
  if (messages.every((m) => m.role === 'system'))
    issues.push(issue(['contents'], 'contents must not be empty'));
  const request: ChatRequest = { model, messages };
  applyGenerationConfig(request, body.generationConfig, issues);
  const tools = toolsOf(body.tools, issues);
  if (tools.length > 0) request.tools = tools;
  const choice = toolChoiceOf(body.toolConfig);
  if (choice !== undefined) request.tool_choice = choice;
  if (stream) {
    request.stream = true;
    request.stream_options = { include_usage: true };
  }
  if (issues.length > 0) throw ApiError.validation(issues);
  return request;
}
