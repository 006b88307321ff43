import { isObject, type JsonObject } from '../../../shared/json.js';

/*
 * `POST /v1/messages/count_tokens` for a model whose upstream does not count them (anything but an
 * Anthropic model): an estimate. The text of the system prompt, of every message's text blocks, tool
 * calls (their input as JSON) and tool results, and of the tool definitions (as JSON) is counted with the
 * o200k_base tokenizer (the `gpt-tokenizer` package, OpenAI's current encoding), plus 3 tokens per
 * message and 3 for the reply's start, as OpenAI counts chat messages. Images and documents are not
 * counted. Text is counted in slices of at most 256 characters, cut at a space where one is near (byte
 * pair encoding takes time quadratic in the length of a run without spaces). Other models' tokenizers differ: the figure is an estimate, within a few percent for English
 * text.
 */

/** Tokens of the framing around each message, and around the reply. */
const PER_MESSAGE = 3;
const PER_REPLY = 3;

type Counter = (text: string) => number;
let counter: Promise<Counter> | null = null;

/** The tokenizer, loaded on first use (its tables take a moment to load). */
function tokenizer(): Promise<Counter> {
  counter ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (text: string) => m.countTokens(text));
  return counter;
}

/** Characters per slice of text counted at once. */
const SLICE = 256;

/** Tokens of a text, counted slice by slice. */
function countSliced(count: Counter, text: string): number {
  if (text.length <= SLICE) return count(text);
  let tokens = 0;
  for (let at = 0; at < text.length; ) {
    let end = Math.min(at + SLICE, text.length);
    if (end < text.length) {
      const space = text.slice(at, end).lastIndexOf(' ');
      if (space > SLICE / 2) end = at + space;
    }
    tokens += count(text.slice(at, end));
    at = end;
  }
  return tokens;
}

/** The text of a content value (a string, or blocks) that the tokenizer counts. */
function textsOf(content: unknown, out: string[]): void {
  if (typeof content === 'string') {
    out.push(content);
    return;
  }
  if (!Array.isArray(content)) return;
  for (const block of content) {
    if (!isObject(block)) continue;
    if (typeof block.text === 'string') out.push(block.text);
    if (typeof block.thinking === 'string') out.push(block.thinking);
    if (block.type === 'tool_use') out.push(String(block.name ?? ''), JSON.stringify(block.input ?? {}));
    if (block.type === 'tool_result') textsOf(block.content, out);
  }
}

/** The estimated input tokens of a Messages request (see the method above). */
export async function estimateInputTokens(body: JsonObject): Promise<number> {
  const count = await tokenizer();
  const texts: string[] = [];
  textsOf(body.system, texts);
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const message of messages) {
    if (!isObject(message)) continue;
    texts.push(String(message.role ?? ''));
    textsOf(message.content, texts);
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) texts.push(JSON.stringify(body.tools));
  let tokens = PER_REPLY + PER_MESSAGE * messages.length;
  for (const text of texts) if (text !== '') tokens += countSliced(count, text);
  return tokens;
}
