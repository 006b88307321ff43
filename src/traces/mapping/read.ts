import { createHash } from 'node:crypto';
import type { Attributes, ChatMessage, JsonValue, SpanView, ToolCall } from './types.js';

/** Helpers the conventions share to read attribute values. */

export function str(v: JsonValue | undefined): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return null;
}

export function num(v: JsonValue | undefined): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return null;
}

export function firstStr(a: Attributes, ...keys: string[]): string | null {
  for (const k of keys) {
    const v = str(a[k]);
    if (v !== null && v !== '') return v;
  }
  return null;
}

export function firstNum(a: Attributes, ...keys: string[]): number | null {
  for (const k of keys) {
    const v = num(a[k]);
    if (v !== null) return Math.max(0, Math.round(v));
  }
  return null;
}

/** A value that may be a JSON text (emitters put structured values in string attributes). */
export function parsed(v: JsonValue | undefined): JsonValue | undefined {
  if (typeof v !== 'string') return v;
  const t = v.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return v;
  try {
    return JSON.parse(t) as JsonValue;
  } catch {
    return v;
  }
}

export function asObject(v: JsonValue | undefined): { [key: string]: JsonValue } | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : null;
}

/**
 * Flat indexed attributes (`prefix.0.role`, `prefix.0.tool_calls.1.name`, …) as one record per index, in
 * index order, each keyed by the rest of its names.
 */
export function indexed(a: Attributes, prefix: string): Attributes[] {
  const out = new Map<number, Attributes>();
  const p = `${prefix}.`;
  for (const [k, v] of Object.entries(a)) {
    if (!k.startsWith(p)) continue;
    const rest = k.slice(p.length);
    const dot = rest.indexOf('.');
    const i = Number(dot < 0 ? rest : rest.slice(0, dot));
    if (!Number.isInteger(i) || i < 0 || i > 10_000) continue;
    const entry = out.get(i) ?? {};
    entry[dot < 0 ? '' : rest.slice(dot + 1)] = v;
    out.set(i, entry);
  }
  return [...out.entries()].sort((x, y) => x[0] - y[0]).map(([, v]) => v);
}

/** Arguments as the chat format keeps them: a JSON text. */
export function argumentsText(v: JsonValue | undefined): string {
  if (v === undefined || v === null) return '{}';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * Where a tool call sits in a span: the span's id and the call's path in it (side, message index, call
 * index). It names a call that the emitter recorded without an id.
 */
export function callSite(span: SpanView, ...path: (string | number)[]): string {
  return [span.spanId ?? '', ...path].join('/');
}

/**
 * A tool call in the chat shape. Without an id of its own it gets one derived from where it sits and
 * what it calls: distinct calls get distinct ids, and the same span mapped again gives the same ones.
 */
export function toolCall(
  id: string | null,
  name: string | null,
  args: JsonValue | undefined,
  site: string,
): ToolCall {
  const fn = { name: name ?? '', arguments: argumentsText(args) };
  if (id !== null && id !== '') return { id, type: 'function', function: fn };
  const digest = createHash('sha256')
    .update(`${site}\u0000${fn.name}\u0000${fn.arguments}`)
    .digest('hex')
    .slice(0, 24);
  return { id: `call_${digest}`, type: 'function', function: fn };
}

/** Types of the content parts that are text: chat's, and the Responses API's input and output text. */
export const TEXT_PART_TYPES: ReadonlySet<string> = new Set(['text', 'input_text', 'output_text']);

/** Text of a content that may be a string or a list of typed parts. */
export function textOf(v: JsonValue | undefined): string | null {
  const value = parsed(v);
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const texts = value
      .map((part) => {
        const o = asObject(part);
        if (!o) return typeof part === 'string' ? part : null;
        if (o.type === undefined || TEXT_PART_TYPES.has(String(o.type))) return str(o.text ?? o.content);
        return null;
      })
      .filter((t): t is string => t !== null);
    return texts.length > 0 ? texts.join('') : null;
  }
  return null;
}

/** A message in the chat shape, without the members that are empty. */
export function message(
  role: string,
  content: string | null,
  toolCalls: ToolCall[] = [],
  toolCallId: string | null = null,
): ChatMessage {
  const m: ChatMessage = { role, content };
  if (toolCalls.length > 0) m.tool_calls = toolCalls;
  if (toolCallId !== null) m.tool_call_id = toolCallId;
  return m;
}
