import { ApiError, type ValidationIssue } from '../../../shared/errors.js';
import { isObject, type JsonObject } from '../../../shared/json.js';
import type { ChatMessage, ChatRequest } from '../../types.js';

/*
 * Anthropic's Messages request (`POST /v1/messages`) decoded into the internal call shape: `system` as a
 * system message, content blocks (text, images, tool_use, tool_result) as chat parts, tool calls and tool
 * messages, `stop_sequences` as `stop`, tools and tool_choice as their chat equivalents.
 */

/** Fields handled here; the rest (temperature, top_p, top_k, …) pass on. */
const OWN_FIELDS = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stop_sequences',
  'tools',
  'tool_choice',
  'metadata',
  'stream',
  'thinking',
  'service_tier',
  'container',
  'mcp_servers',
]);

function issue(loc: (string | number)[], msg: string): ValidationIssue {
  return { loc: ['body', ...loc], msg, type: 'value_error' };
}

function textOfBlocks(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b: unknown) => (isObject(b) && typeof b.text === 'string' ? b.text : '')).join('');
}

function imagePart(
  block: JsonObject,
  where: (string | number)[],
  issues: ValidationIssue[],
): JsonObject | null {
  const source = isObject(block.source) ? block.source : {};
  if (source.type === 'base64' && typeof source.media_type === 'string' && typeof source.data === 'string')
    return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  if (source.type === 'url' && typeof source.url === 'string')
    return { type: 'image_url', image_url: { url: source.url } };
  issues.push(
    issue([...where, 'source'], 'An image needs a base64 source (media_type, data) or a url source'),
  );
  return null;
}

/** One Anthropic turn as chat messages: tool results become tool messages, tool_use blocks tool calls. */
function turnToMessages(turn: JsonObject, i: number, issues: ValidationIssue[]): ChatMessage[] {
  const where = ['messages', i];
  const role = turn.role;
  if (role !== 'user' && role !== 'assistant') {
    issues.push(issue([...where, 'role'], 'role must be user or assistant'));
    return [];
  }
  if (typeof turn.content === 'string') return [{ role, content: turn.content }];
  if (!Array.isArray(turn.content)) {
    issues.push(issue([...where, 'content'], 'content must be a string or an array of content blocks'));
    return [];
  }
  const out: ChatMessage[] = [];
  const parts: JsonObject[] = [];
  const calls: JsonObject[] = [];
  turn.content.forEach((block: unknown, j) => {
    const at = [...where, 'content', j];
    if (!isObject(block)) {
      issues.push(issue(at, 'A content block must be an object'));
      return;
    }
    switch (block.type) {
      case 'text':
        parts.push({ type: 'text', text: typeof block.text === 'string' ? block.text : '' });
        break;
      case 'image': {
        const part = imagePart(block, at, issues);
        if (part) parts.push(part);
        break;
      }
      case 'tool_use':
        if (role !== 'assistant' || typeof block.id !== 'string' || typeof block.name !== 'string') {
          issues.push(issue(at, 'tool_use blocks belong to assistant turns and need id and name'));
          return;
        }
        calls.push({
          id: block.id,
          type: 'function',
          function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
        });
        break;
      case 'tool_result': {
        if (typeof block.tool_use_id !== 'string') {
          issues.push(issue([...at, 'tool_use_id'], 'tool_result needs tool_use_id'));
          return;
        }
        const text = textOfBlocks(block.content);
        out.push({
          role: 'tool',
          tool_call_id: block.tool_use_id,
          content: block.is_error === true ? `Error: ${text}` : text,
        });
        break;
      }
      case 'thinking':
      case 'redacted_thinking':
        // Earlier reasoning carries nothing another upstream can take.
        break;
      default:
        issues.push(
          issue([...at, 'type'], `Content blocks of type '${String(block.type)}' are not supported`),
        );
    }
  });
  if (parts.length > 0 || calls.length > 0) {
    const content = parts.every((p) => p.type === 'text')
      ? parts.map((p) => p.text as string).join('')
      : parts;
    const message: ChatMessage = { role, content: calls.length > 0 && content === '' ? null : content };
    if (calls.length > 0) message.tool_calls = calls;
    out.push(message);
  }
  return out;
}

function toolsOf(tools: unknown, issues: ValidationIssue[]): JsonObject[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool: unknown, i) => {
    if (
      !isObject(tool) ||
      typeof tool.name !== 'string' ||
      (tool.type !== undefined && tool.type !== 'custom')
    ) {
      issues.push(issue(['tools', i], 'Only custom tools ({"name":…,"input_schema":…}) are supported'));
      return [];
    }
    const fn: JsonObject = { name: tool.name, parameters: tool.input_schema ?? { type: 'object' } };
    if (typeof tool.description === 'string') fn.description = tool.description;
    return [{ type: 'function', function: fn }];
  });
}

function toolChoiceOf(choice: unknown): unknown {
  if (!isObject(choice)) return undefined;
  if (choice.type === 'any') return 'required';
  if (choice.type === 'none') return 'none';
  if (choice.type === 'tool' && typeof choice.name === 'string')
    return { type: 'function', function: { name: choice.name } };
  return 'auto';
}

/** A Messages request as the internal call; every problem is reported at once. */
export function decodeMessagesRequest(body: JsonObject): ChatRequest {
  const issues: ValidationIssue[] = [];
  const messages: ChatMessage[] = [];
  if (typeof body.system === 'string') {
    if (body.system !== '') messages.push({ role: 'system', content: body.system });
  } else if (Array.isArray(body.system)) {
    messages.push({ role: 'system', content: textOfBlocks(body.system) });
  } else if (body.system !== undefined && body.system !== null) {
    issues.push(issue(['system'], 'system must be a string or an array of text blocks'));
  }
  if (Array.isArray(body.messages)) {
    body.messages.forEach((turn: unknown, i) => {
      if (isObject(turn)) messages.push(...turnToMessages(turn, i, issues));
      else issues.push(issue(['messages', i], 'A message must be an object'));
    });
  }
  const request: ChatRequest = { model: String(body.model), messages };
  for (const [key, value] of Object.entries(body)) if (!OWN_FIELDS.has(key)) request[key] = value;
  if (typeof body.max_tokens === 'number') request.max_tokens = body.max_tokens;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0)
    request.stop = body.stop_sequences;
  const tools = toolsOf(body.tools, issues);
  if (tools.length > 0) request.tools = tools;
  const choice = toolChoiceOf(body.tool_choice);
  if (choice !== undefined) request.tool_choice = choice;
  if (isObject(body.tool_choice) && body.tool_choice.disable_parallel_tool_use === true)
    request.parallel_tool_calls = false;
  if (isObject(body.metadata) && typeof body.metadata.user_id === 'string')
    request.user = body.metadata.user_id;
  if (body.stream === true) {
    request.stream = true;
    request.stream_options = { include_usage: true };
  }
  if (issues.length > 0) throw ApiError.validation(issues);
  return request;
}
