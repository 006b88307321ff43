import { chatAnswer } from '../../shared/chat-answer.js';

/**
 * The `sample` namespace of grader templates, derived from what a model produced: a text (graders/run's
 * `model_sample`, a dataset's output), a chat message (`content`, `tool_calls`) or a whole chat
 * completion (`choices[0].message`).
 */
export interface SampleNamespace {
  output_text: string;
  /** The output parsed as JSON when it is a JSON object or array, else null. */
  output_json: unknown;
  output_tools: unknown[];
  [field: string]: unknown;
}

function jsonOf(text: string): unknown {
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return null;
  try {
    return JSON.parse(t);
  } catch {
    return null;
  }
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) =>
        p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string'
          ? (p as { text: string }).text
          : '',
      )
      .join('');
  }
  return content === null || content === undefined ? '' : JSON.stringify(content);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A Responses API object's output as chat-style text and tool calls. */
function responsesOutput(output: unknown[]): { text: string; tools: unknown[] } {
  let text = '';
  const tools: unknown[] = [];
  for (const part of output) {
    if (!isObject(part)) continue;
    if (part.type === 'message') text += textOf(part.content);
    else if (part.type === 'function_call') {
      tools.push({
        id: part.call_id ?? part.id ?? '',
        type: 'function',
        function: { name: part.name ?? '', arguments: part.arguments ?? '' },
      });
    }
  }
  return { text, tools };
}

/**
 * The namespace of an eval row's `sample`: `output_text` / `output_json` / `output_tools` given
 * directly, or derived from a chat completion, a chat message or a Responses object. The object's own
 * fields stay reachable (`sample.choices[0].finish_reason`, `sample.usage`).
 */
export function sampleNamespace(output: unknown): SampleNamespace {
  if (typeof output === 'string')
    return { output_text: output, output_json: jsonOf(output), output_tools: [] };
  if (isObject(output) && ('output_text' in output || 'output_json' in output || 'output_tools' in output)) {
    const text =
      typeof output.output_text === 'string'
        ? output.output_text
        : output.output_json !== undefined
          ? JSON.stringify(output.output_json)
          : '';
    return {
      ...output,
      output_text: text,
      output_json: output.output_json !== undefined ? output.output_json : jsonOf(text),
      output_tools: Array.isArray(output.output_tools) ? output.output_tools : [],
    };
  }
  if (isObject(output) && Array.isArray(output.output)) {
    const { text, tools } = responsesOutput(output.output);
    return { ...output, output_text: text, output_json: jsonOf(text), output_tools: tools };
  }
  let message: unknown = output;
  if (isObject(output) && Array.isArray(output.choices)) message = chatAnswer(output).message;
  if (isObject(message) && ('content' in message || 'tool_calls' in message)) {
    const text = textOf(message.content);
    return {
      ...(message === output ? {} : (output as Record<string, unknown>)),
      output_text: text,
      output_json: jsonOf(text),
      output_tools: Array.isArray(message.tool_calls) ? message.tool_calls : [],
    };
  }
  const text = output === null || output === undefined ? '' : JSON.stringify(output);
  return {
    output_text: text,
    output_json: isObject(output) || Array.isArray(output) ? output : null,
    output_tools: [],
  };
}
