import type { MockReply, MockRequest } from '../fixtures/mock-upstream.js';

/**
 * A scripted agent model for the mock upstream: asks for `get_weather` and then `get_time` (one call
 * each, in that order, with call ids unique per conversation), then answers with text. What it has done
 * so far is read from the request's messages (tool results), so concurrent conversations stay apart.
 */
export function agentReply(req: MockRequest): MockReply {
  // Chat messages, or Responses input items (a native Responses upstream).
  const messages: any[] = Array.isArray(req.body?.messages)
    ? req.body.messages
    : Array.isArray(req.body?.input)
      ? req.body.input
      : [{ role: 'user', content: String(req.body?.input ?? '') }];
  const results = messages.filter((m) => m?.role === 'tool' || m?.type === 'function_call_output').length;
  const city = /in (\w+)/.exec(firstUserText(messages))?.[1] ?? 'Oslo';
  const tag = `${city.toLowerCase()}_${messages.length}`;
  if (results === 0)
    return { toolCalls: [{ name: 'get_weather', arguments: { city }, id: `call_w_${tag}` }] };
  if (results === 1) return { toolCalls: [{ name: 'get_time', arguments: { city }, id: `call_t_${tag}` }] };
  return { text: `In ${city} it is sunny and noon.` };
}

function firstUserText(messages: any[]): string {
  const first = messages.find((m) => m?.role === 'user');
  if (!first) return '';
  if (typeof first.content === 'string') return first.content;
  if (Array.isArray(first.content)) return first.content.map((p: any) => p?.text ?? '').join('');
  return '';
}

export const weather = (city: string) => `Sunny in ${city}`;
export const time = (city: string) => `12:00 in ${city}`;
