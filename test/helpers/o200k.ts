import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

/**
 * The o200k token count of a chat request's messages, with the chat format's 3 tokens a message and 3
 * more: what an upstream bills as prompt tokens (the mock upstreams of the budget tests bill it).
 */
export function promptTokens(body: any): number {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  let tokens = 3;
  for (const m of messages) {
    const content =
      typeof m?.content === 'string'
        ? m.content
        : Array.isArray(m?.content)
          ? m.content.map((p: any) => p?.text ?? '').join('')
          : '';
    tokens += countTokens(content) + 3;
  }
  return tokens;
}
