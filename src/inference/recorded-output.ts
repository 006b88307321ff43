import { isObject } from '../shared/json.js';
import { completionText } from './providers/openai-compatible.js';

/**
 * A task log's output from a chat completion: the first choice's text; when the answer calls tools, a
 * JSON object of the text (null when none) and the calls (id, name, arguments as sent), so that a judge
 * sees what the model asked for.
 */
export function recordedOutput(completion: unknown): string {
  const text = completionText(completion);
  if (!isObject(completion) || !Array.isArray(completion.choices)) return text;
  const first: unknown = completion.choices[0];
  if (!isObject(first) || !isObject(first.message) || !Array.isArray(first.message.tool_calls)) return text;
  const calls = first.message.tool_calls.flatMap((call: unknown) => {
    if (!isObject(call) || !isObject(call.function)) return [];
    return [
      { id: call.id ?? null, name: call.function.name ?? '', arguments: call.function.arguments ?? '' },
    ];
  });
  if (calls.length === 0) return text;
  return JSON.stringify({ content: text === '' ? null : text, tool_calls: calls });
}
