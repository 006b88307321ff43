import { Agent, tool as agentTool, OpenAIProvider, Runner } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { MockReply, MockRequest } from '../fixtures/mock-upstream.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { waitFor } from '../helpers/wait.js';

/**
 * An `@openai/agents` run with a handoff, through the gateway, on the Responses API and on chat
 * completions: a triage agent looks the order up and hands off to a refunds agent (another system
 * prompt), which issues the refund and answers. The run is one session by continuity (or by its
 * header), each turn adds only what is new, the handoff is marked, and `tool_call_match` scores it.
 */
let g: Gateway;
const MODEL = 'openai/gpt-4o-mini';
const TRIAGE = 'You triage customer requests.';
const REFUNDS = 'You issue refunds.';
const Order = z.object({ order: z.string() });
const judgePrompts: string[] = [];
const found = (order: string) => `Order ${order}: paid, 30 EUR`;
const refunded = (order: string) => `Refund of order ${order} issued`;

/** Chat messages or Responses input items, as the upstream got them. */
function itemsOf(req: MockRequest): any[] {
  if (Array.isArray(req.body?.messages)) return req.body.messages;
  if (Array.isArray(req.body?.input)) return req.body.input;
  return [{ role: 'user', content: String(req.body?.input ?? '') }];
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: any) => p?.text ?? '').join('');
  return '';
}

/**
 * The scripted model: the agent is told by its system prompt (a system message, or Responses
 * `instructions`), what it has done by the number of tool results so far; call ids are unique per order.
 */
function reply(req: MockRequest): MockReply {
  if (req.body?.response_format || req.body?.tool_choice === 'required') {
    judgePrompts.push(JSON.stringify(req.body.messages));
    return { json: { score: 1, reasoning: 'refunded' } };
  }
  const items = itemsOf(req);
  const system =
    String(req.body?.instructions ?? '') +
    items
      .filter((m) => m?.role === 'system' || m?.role === 'developer')
      .map((m) => textOf(m.content))
      .join('');
  const results = items.filter((m) => m?.role === 'tool' || m?.type === 'function_call_output').length;
  const user = items.find((m) => m?.role === 'user');
  const order = /order (\w+)/.exec(textOf(user?.content))?.[1] ?? 'X0';
  const id = (what: string) => `call_${what}_${order.toLowerCase()}`;
  if (system.includes(TRIAGE)) {
    if (results === 0)
      return { toolCalls: [{ name: 'lookup_order', arguments: { order }, id: id('lookup') }] };
    return { toolCalls: [{ name: 'transfer_to_refunds', arguments: {}, id: id('transfer') }] };
  }
  if (results === 2) return { toolCalls: [{ name: 'issue_refund', arguments: { order }, id: id('refund') }] };
  return { text: `Order ${order} is refunded.` };
}

beforeAll(async () => {
  g = await startGateway();
  g.mock.set({ reply });
});
afterAll(async () => {
  await g?.close();
});

function agents() {
  const refunds = new Agent({
    name: 'refunds',
    instructions: REFUNDS,
    model: MODEL,
    tools: [
      agentTool({
        name: 'issue_refund',
        description: 'Refund an order',
        parameters: Order,
        execute: ({ order }) => refunded(order),
      }),
    ],
  });
  return new Agent({
    name: 'triage',
    instructions: TRIAGE,
    model: MODEL,
    tools: [
      agentTool({
        name: 'lookup_order',
        description: 'Find an order',
        parameters: Order,
        execute: ({ order }) => found(order),
      }),
    ],
    handoffs: [refunds],
  });
}

async function runAgents(
  label: string,
  order: string,
  useResponses: boolean,
  session?: string,
  stream = false,
) {
  const headers: Record<string, string> = { 'x-evalgate-container': label };
  if (session) headers['x-evalgate-session'] = session;
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({ apiKey: g.h.admin.key, baseURL: `${g.h.url}/v1`, defaultHeaders: headers });
  const runner = new Runner({
    modelProvider: new OpenAIProvider({ openAIClient: client as never, useResponses }),
    tracingDisabled: true,
  });
  const input = `Refund order ${order}, please.`;
  const result = stream
    ? await runner.run(agents(), input, { stream: true }).then(async (r) => {
        await r.completed;
        return r;
      })
    : await runner.run(agents(), input);
  expect(result.finalOutput).toBe(`Order ${order} is refunded.`);
  expect(result.lastAgent?.name).toBe('refunds');
}

/** As the grader's extra rounds its figures. */
const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** The messages a turn added, as [role, content or tool call names]. */
const added = (turn: any) =>
  turn.input.map((m: any) =>
    m.role === 'assistant' ? [m.role, (m.tool_calls ?? []).map((c: any) => c.name)] : [m.role, m.content],
  );

async function runToEnd(body: Record<string, unknown>) {
  const created = await g.h.call('POST', '/v1/evaluation/runs', { body });
  expect(created.status, created.text).toBe(201);
  const id = created.body.id as string;
  await waitFor(
    async () =>
      ['completed', 'error', 'cancelled'].includes(
        (await g.h.call('GET', `/v1/evaluation/runs/${id}`)).body.status,
      ),
    90_000,
  );
  const run = (await g.h.call('GET', `/v1/evaluation/runs/${id}`)).body;
  const samples = (await g.h.call('GET', `/v1/evaluation/runs/${id}/samples?limit=100`)).body.data;
  return { run, samples: samples as any[] };
}

describe('an @openai/agents run with a handoff is one session', () => {
  for (const useResponses of [true, false]) {
    const api = useResponses ? 'responses' : 'chat';
    it(`${api}: one session per run, new messages per turn, the handoff marked, tool_call_match scores it`, async () => {
      const label = `handoff-${api}`;
      expect((await g.h.call('POST', '/v1/containers', { body: { label } })).status).toBe(201);
      // Two runs at once (two orders), and one named by its header, streamed.
      await Promise.all([runAgents(label, 'A1', useResponses), runAgents(label, 'B2', useResponses)]);
      await runAgents(label, 'C3', useResponses, `case-${api}`, true);
      const logs = await g.logs(label);
      expect(logs).toHaveLength(12);
      expect(new Set(logs.map((l) => l.metadata.route))).toEqual(
        new Set([useResponses ? 'responses' : 'chat']),
      );
      const list = await g.h.call('GET', `/v1/sessions?container=${label}`);
      expect(list.body.data.map((s: any) => s.turn_count)).toEqual([4, 4, 4]);
      expect(new Set(logs.map((l) => l.session_id))).toEqual(new Set(list.body.data.map((s: any) => s.id)));

      const byOrder = new Map<string, any>();
      for (const s of list.body.data) {
        const detail = (await g.h.call('GET', `/v1/sessions/${s.id}`)).body;
        const user = detail.turns[0].input.find((m: any) => m.role === 'user');
        const order = /order (\w+)/.exec(user?.content ?? '')?.[1] ?? '';
        byOrder.set(order, detail);
      }
      expect([...byOrder.keys()].sort()).toEqual(['A1', 'B2', 'C3']);
      expect(list.body.data.find((s: any) => s.key === `case-${api}`)?.id).toBe(byOrder.get('C3').id);

      for (const [order, detail] of byOrder) {
        const lower = order.toLowerCase();
        expect(detail.tool_calls.map((c: any) => [c.id, c.name, c.arguments, c.result, c.turn])).toEqual([
          [`call_lookup_${lower}`, 'lookup_order', { order }, found(order), 0],
          [`call_transfer_${lower}`, 'transfer_to_refunds', {}, expect.stringContaining('refunds'), 1],
          [`call_refund_${lower}`, 'issue_refund', { order }, refunded(order), 2],
        ]);
        // Each turn adds only what is new: the handoff's turn the new system prompt and the transfer's result.
        expect(detail.turns.map(added)).toEqual([
          [
            ['system', TRIAGE],
            ['user', `Refund order ${order}, please.`],
          ],
          [['tool', found(order)]],
          [
            ['system', REFUNDS],
            ['tool', expect.stringContaining('refunds')],
          ],
          [['tool', refunded(order)]],
        ]);
        expect(detail.turns.map((t: any) => t.handoff)).toEqual([
          null,
          null,
          {
            from: null,
            to: 'refunds',
            tool_call_id: `call_transfer_${lower}`,
            tool: 'transfer_to_refunds',
          },
          null,
        ]);
        expect(detail.turns[3].output.content).toBe(`Order ${order} is refunded.`);
      }

      // tool_call_match on the sessions: A1 expects its three calls in order (pass), B2 a refund
      // without the lookup (exact fails), each row naming its session by id.
      const ds = await g.h.call('POST', '/v1/datasets', {
        body: {
          label: `expected-${api}`,
          items: [
            {
              input: 'A1',
              expected_tool_calls: [
                { name: 'lookup_order', arguments: { order: 'A1' } },
                { name: 'transfer_to_refunds', arguments: {} },
                { name: 'issue_refund', arguments: { order: 'A1' } },
              ],
              metadata: { session_id: byOrder.get('A1').id },
            },
            {
              input: 'B2',
              expected_tool_calls: [{ name: 'issue_refund', arguments: { order: 'B2' } }],
              metadata: { session_id: byOrder.get('B2').id },
            },
            {
              input: 'C3',
              expected_tool_calls: [
                { name: 'lookup_order', arguments: { order: 'C3' } },
                { name: 'issue_refund', arguments: { order: 'C3' } },
              ],
              metadata: { session_key: `case-${api}` },
            },
          ],
        },
      });
      expect(ds.status, ds.text).toBe(201);
      const ev = await g.h.call('POST', '/v1/evaluators', {
        body: { type: 'tool_call_match', name: `tcm-${api}`, match_mode: 'exact' },
      });
      expect(ev.status, ev.text).toBe(201);
      const judge = await g.h.call('POST', '/v1/evaluators', {
        body: { type: 'judge', name: `goal-${api}`, model: MODEL, prompt: 'Refunded?\n{{conversation}}' },
      });
      expect(judge.status, judge.text).toBe(201);
      judgePrompts.length = 0;
      const { run, samples } = await runToEnd({
        container: label,
        evaluators: [ev.body.id, judge.body.id],
        sample: { type: 'sessions', container: label },
        ground_truth: { type: 'dataset', dataset: `expected-${api}` },
      });
      expect(run.status, JSON.stringify(run.error)).toBe('completed');
      expect(samples).toHaveLength(6);
      // The judge reads each conversation once: every message once, the handoff's new prompt in its place.
      expect(judgePrompts).toHaveLength(3);
      for (const order of ['A1', 'B2', 'C3']) {
        const prompt = judgePrompts.find((p) => p.includes(`user: Refund order ${order}, please.`))!;
        expect(prompt.split(`user: Refund order ${order}, please.`)).toHaveLength(2);
        expect(prompt.split(`tool result: ${found(order)}`)).toHaveLength(2);
        expect(prompt).toContain(`system: ${REFUNDS}\\ntool result: {\\"assistant\\":\\"refunds\\"}`);
      }
      const verdicts = samples
        .filter((s) => s.evaluator_id === ev.body.id)
        .map((s) => [s.extra.expected, s.extra.actual, s.extra.precision, s.extra.recall, s.passed])
        .sort((a, b) => b[0] - a[0]);
      expect(verdicts).toEqual([
        [3, 3, 1, 1, true],
        [2, 3, round(2 / 3), 1, false],
        [1, 3, round(1 / 3), 1, false],
      ]);
    });
  }
});
