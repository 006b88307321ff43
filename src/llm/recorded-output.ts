import { chatAnswer } from '../shared/chat-answer.js';

/**
 * A task log's output from a chat completion: the first choice's text; when the answer calls tools, a
 * JSON object of the text (null when none) and the calls (id, name, arguments as sent), so that a judge
 * sees what the model asked for.
 */
export function recordedOutput(completion: unknown): string {
  const { text, toolCalls } = chatAnswer(completion);
  if (toolCalls.length === 0) return text;
  return JSON.stringify({ content: text === '' ? null : text, tool_calls: toolCalls });
}
