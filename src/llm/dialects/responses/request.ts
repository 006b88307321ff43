import { ApiError, type ValidationIssue } from '../../../shared/errors.js';
import { isObject, type JsonObject } from '../../../shared/json.js';
import type { ChatMessage, ChatRequest } from '../../types.js';

/*
 * The Responses API's request (`POST /v1/responses`) decoded into the gateway's internal call shape,
 * the chat-completion request: `instructions` and `input` items become messages, function tools and
 * `text.format` their chat equivalents, sampling and reasoning parameters pass on.
 */

/** Fields of a Responses request that are the gateway's own business, never sent upstream as they are. */
const OWN_FIELDS = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'text',
  'reasoning',
  'max_output_tokens',
  'metadata',
  'store',
  'previous_response_id',
  'stream',
  'stream_options',
  'include',
  'truncation',
  'background',
  'conversation',
  'prompt',
  'prompt_cache_key',
  'safety_identifier',
  'service_tier',
  'max_tool_calls',
  'top_logprobs',
]);

function issue(loc: (string | number)[], msg: string): ValidationIssue {
  return { loc: ['body', ...loc], msg, type: 'value_error' };
}

function contentPart(
  part: unknown,
  where: (string | number)[],
  issues: ValidationIssue[],
): JsonObject | null {
  if (!isObject(part)) {
    issues.push(issue(where, 'A content part must be an object'));
    return null;
  }
  switch (part.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      return { type: 'text', text: typeof part.text === 'string' ? part.text : '' };
    case 'refusal':
      return { type: 'text', text: typeof part.refusal === 'string' ? part.refusal : '' };
    case 'input_image': {
      if (typeof part.image_url !== 'string') {
        issues.push(issue([...where, 'image_url'], 'input_image needs image_url (a URL or data: URL)'));
        return null;
      }
      const image: JsonObject = { url: part.image_url };
      if (typeof part.detail === 'string') image.detail = part.detail;
      return { type: 'image_url', image_url: image };
    }
    default:
      issues.push(
        issue([...where, 'type'], `Content parts of type '${String(part.type)}' are not supported`),
      );
      return null;
  }
}

/** A message's content: a string as it is, parts as chat parts (text alone collapses to a string). */
function contentOf(content: unknown, where: (string | number)[], issues: ValidationIssue[]): unknown {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    issues.push(issue(where, 'content must be a string or an array of content parts'));
    return '';
  }
  const parts: JsonObject[] = [];
  content.forEach((p: unknown, i) => {
    const part = contentPart(p, [...where, i], issues);
    if (part) parts.push(part);
  });
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => p.text as string).join('');
  return parts;
}

/** The input items as chat messages (function calls joined to the assistant turn they belong to). */
export function itemsToMessages(items: unknown[], issues: ValidationIssue[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  items.forEach((item, i) => {
    const where = ['input', i];
    if (!isObject(item)) {
      issues.push(issue(where, 'An input item must be an object'));
      return;
    }
    const type = item.type ?? 'message';
    if (type === 'message') {
      const role = item.role;
      if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') {
        issues.push(issue([...where, 'role'], 'role must be user, assistant, system or developer'));
        return;
      }
      messages.push({ role, content: contentOf(item.content, [...where, 'content'], issues) });
    } else if (type === 'function_call') {
      if (typeof item.call_id !== 'string' || typeof item.name !== 'string') {
        issues.push(issue(where, 'function_call needs call_id and name'));
        return;
      }
      const call = {
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : '{}' },
      };
      const last = messages[messages.length - 1];
      if (last?.role === 'assistant' && Array.isArray(last.tool_calls))
        (last.tool_calls as unknown[]).push(call);
      else if (last?.role === 'assistant' && last.tool_calls === undefined) last.tool_calls = [call];
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (type === 'function_call_output') {
      if (typeof item.call_id !== 'string') {
        issues.push(issue([...where, 'call_id'], 'function_call_output needs call_id'));
        return;
      }
      const output = typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? '');
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: output });
    } else if (type === 'reasoning') {
      // Reasoning items of an earlier turn carry nothing a chat upstream can take.
    } else {
      issues.push(issue([...where, 'type'], `Input items of type '${String(type)}' are not supported`));
    }
  });
  return messages;
}

function toolsOf(tools: unknown, issues: ValidationIssue[]): JsonObject[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) {
    issues.push(issue(['tools'], 'tools must be an array'));
    return undefined;
  }
  return tools.flatMap((tool, i) => {
    if (!isObject(tool) || tool.type !== 'function' || typeof tool.name !== 'string') {
      issues.push(
        issue(
          ['tools', i],
          'Only function tools ({"type":"function","name":…,"parameters":…}) are supported',
        ),
      );
      return [];
    }
    const fn: JsonObject = { name: tool.name };
    if (tool.description !== undefined) fn.description = tool.description;
    if (tool.parameters !== undefined && tool.parameters !== null) fn.parameters = tool.parameters;
    if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
    return [{ type: 'function', function: fn }];
  });
}

function toolChoiceOf(choice: unknown): unknown {
  if (isObject(choice) && choice.type === 'function' && typeof choice.name === 'string')
    return { type: 'function', function: { name: choice.name } };
  return choice;
}

function responseFormatOf(text: unknown, issues: ValidationIssue[]): JsonObject | undefined {
  if (!isObject(text) || !isObject(text.format)) return undefined;
  const { format } = text;
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema') {
    if (typeof format.name !== 'string' || !isObject(format.schema)) {
      issues.push(issue(['text', 'format'], 'text.format json_schema needs name and schema'));
      return undefined;
    }
    const schema: JsonObject = { name: format.name, schema: format.schema };
    if (typeof format.strict === 'boolean') schema.strict = format.strict;
    if (typeof format.description === 'string') schema.description = format.description;
    return { type: 'json_schema', json_schema: schema };
  }
  issues.push(issue(['text', 'format', 'type'], 'text.format.type must be text, json_object or json_schema'));
  return undefined;
}

/**
 * A Responses request as the internal call, `history` (the messages of `previous_response_id`'s
 * conversation) first. Every problem found is reported at once (400 on this route).
 */
export function decodeResponsesRequest(body: JsonObject, history: ChatMessage[]): ChatRequest {
  const issues: ValidationIssue[] = [];
  const messages: ChatMessage[] = [];
  if (body.instructions !== undefined && body.instructions !== null) {
    if (typeof body.instructions !== 'string')
      issues.push(issue(['instructions'], 'instructions must be a string'));
    else messages.push({ role: 'system', content: body.instructions });
  }
  messages.push(...history);
  if (typeof body.input === 'string') messages.push({ role: 'user', content: body.input });
  else if (Array.isArray(body.input)) messages.push(...itemsToMessages(body.input, issues));
  else issues.push(issue(['input'], 'input must be a string or an array of input items'));
  if (messages.length === 0 && issues.length === 0) issues.push(issue(['input'], 'input must not be empty'));

  const request: ChatRequest = { model: String(body.model), messages };
  // Sampling parameters (temperature, top_p, parallel_tool_calls, user, …) and vendor extensions pass on.
  for (const [key, value] of Object.entries(body)) if (!OWN_FIELDS.has(key)) request[key] = value;
  const tools = toolsOf(body.tools, issues);
  if (tools && tools.length > 0) request.tools = tools;
  if (body.tool_choice !== undefined) request.tool_choice = toolChoiceOf(body.tool_choice);
  const format = responseFormatOf(body.text, issues);
  if (format) request.response_format = format;
  if (typeof body.max_output_tokens === 'number') request.max_tokens = body.max_output_tokens;
  if (isObject(body.reasoning) && typeof body.reasoning.effort === 'string')
    request.reasoning_effort = body.reasoning.effort;
  if (body.stream === true) {
    request.stream = true;
    request.stream_options = { include_usage: true };
  }
  if (issues.length > 0) throw ApiError.validation(issues);
  return request;
}

function itemContent(content: unknown, role: string): unknown {
  if (typeof content === 'string' || !Array.isArray(content)) return content ?? '';
  const textType = role === 'assistant' ? 'output_text' : 'input_text';
  return content.map((part: unknown) => {
    if (!isObject(part)) return part;
    if (part.type === 'text') return { type: textType, text: part.text };
    if (part.type === 'image_url' && isObject(part.image_url))
      return { type: 'input_image', image_url: part.image_url.url, detail: part.image_url.detail ?? 'auto' };
    return part;
  });
}

/** Chat messages as Responses input items (a stored conversation sent on to a native upstream). */
export function messagesToItems(messages: readonly ChatMessage[]): JsonObject[] {
  const items: JsonObject[] = [];
  for (const m of messages) {
    if (m.role === 'tool') {
      items.push({
        type: 'function_call_output',
        call_id: m.tool_call_id,
        output: typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
      });
      continue;
    }
    const hasText = m.content !== null && m.content !== undefined && m.content !== '';
    if (hasText || m.role !== 'assistant')
      items.push({ role: m.role, content: itemContent(m.content, m.role) });
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls) {
        if (!isObject(call) || !isObject(call.function)) continue;
        items.push({
          type: 'function_call',
          call_id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        });
      }
    }
  }
  return items;
}

/**
 * The Responses body for an upstream that speaks the API natively, carried as the internal request (no
 * messages): the client's own body, a `previous_response_id` of this gateway replaced by the stored
 * conversation as input items.
 */
export function nativeResponsesRequest(body: JsonObject, history: readonly ChatMessage[]): ChatRequest {
  const { previous_response_id: _previous, ...rest } = body;
  const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input;
  const request: ChatRequest = { ...rest, model: String(body.model), messages: [] };
  if (history.length > 0)
    request.input = [...messagesToItems(history), ...(Array.isArray(input) ? input : [])];
  return request;
}
