import type { MockReply, MockRequest } from '../fixtures/mock-upstream.js';
import type { Harness } from '../helpers/harness.js';

/**
 * One mock upstream playing both sides of simulated conversations, told apart by the upstream model the
 * request names: `user-up` is the simulated user, `target-up` the model under test with one tool
 * (`get_order`). The user asks three things about its order and then says the goal is met, so each
 * conversation is three user turns and four target calls (the first turn calls the tool).
 */

export const PRICES = { input_price_per_mtok: 3, output_price_per_mtok: 15 };
/** The mock's usage for every call (12 prompt, 7 completion tokens), priced. */
export const CALL_PRICE = (12 * 3 + 7 * 15) / 1_000_000;
/** Calls per conversation: four by the simulated user (the last says the goal is met), four by the target. */
export const CALLS_PER_CONVERSATION = 8;

const QUESTIONS = ['Where is my order?', 'When will it arrive?', 'Can you confirm the address?'];

const orderOf = (text: string) => /order (O\d+)/.exec(text)?.[1] ?? '?';

type Message = { role: string; content?: unknown; tool_calls?: unknown[] };
const messagesOf = (req: MockRequest): Message[] => (req.body?.messages ?? []) as Message[];
const text = (m: Message | undefined) => (typeof m?.content === 'string' ? m.content : '');

/** What a request is, for the tests' counting: `<model>:<order>:<messages>` is one call of one conversation. */
export function callSignature(req: MockRequest): string {
  const messages = messagesOf(req);
  const order =
    req.body?.model === 'user-up'
      ? orderOf(text(messages[0]))
      : orderOf(messages.map((m) => text(m)).join(' '));
  return `${req.body?.model}:${order}:${messages.length}`;
}

/** Whether the request starts a conversation: the target's first call (one user message, no answer yet). */
export function startsConversation(req: MockRequest): boolean {
  const messages = messagesOf(req);
  return req.body?.model === 'target-up' && messages.every((m) => m.role === 'system' || m.role === 'user');
}

export function simulateReply(req: MockRequest): MockReply {
  const messages = messagesOf(req);
  if (req.body?.model === 'user-up') {
    const order = orderOf(text(messages[0]));
    const said = messages.filter((m) => m.role === 'assistant').length;
    if (said >= QUESTIONS.length) return { text: '[GOAL_MET]' };
    const question = QUESTIONS[said]!;
    return { text: said === 0 ? `${question} It is order ${order}.` : question };
  }
  const last = messages[messages.length - 1];
  const order = orderOf(messages.map((m) => text(m)).join(' '));
  if (last?.role === 'tool') return { text: `Order ${order}: ${text(last)}` };
  const tools = Array.isArray(req.body?.tools) ? req.body.tools : [];
  const calledBefore = messages.some((m) => m.role === 'tool');
  if (tools.length > 0 && !calledBefore) {
    return { toolCalls: [{ name: 'get_order', arguments: { order_id: order }, id: `call_${order}` }] };
  }
  const turn = messages.filter((m) => m.role === 'user').length;
  return { text: `Answer ${turn} about order ${order}.` };
}

/** A dataset row: persona, goal, the tool and its fixture. */
export function scenario(i: number) {
  const order = `O${100 + i}`;
  return {
    input: {
      persona: 'A customer in a hurry',
      goal: `Find out where order ${order} is and when it arrives.`,
      system: 'You are a shop assistant.',
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_order',
            parameters: { type: 'object', properties: { order_id: { type: 'string' } } },
          },
        },
      ],
      tool_results: { get_order: { status: 'shipped', eta: `day ${i}` } },
    },
  };
}

/** Registers the target and the simulated user's model (same prices), a container and the scenarios. */
export async function setUpSimulation(h: Harness, baseUrl: string, rows: number): Promise<void> {
  for (const [label, upstream] of [
    ['target', 'target-up'],
    ['simuser', 'user-up'],
  ] as const) {
    const r = await h.call('POST', '/v1/models', {
      body: { label, base_url: baseUrl, upstream_model: upstream, ...PRICES },
    });
    if (r.status !== 201) throw new Error(`model ${label}: ${r.status} ${r.text}`);
  }
  const c = await h.call('POST', '/v1/containers', { body: { label: 'sim' } });
  if (c.status !== 201) throw new Error(`container: ${c.status} ${c.text}`);
  const items = Array.from({ length: rows }, (_, i) => scenario(i));
  const d = await h.call('POST', '/v1/datasets', { body: { label: 'scenarios', items } });
  if (d.status !== 201) throw new Error(`dataset: ${d.status} ${d.text}`);
}
