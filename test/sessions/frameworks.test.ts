import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, tool as agentTool, OpenAIProvider, Runner } from '@openai/agents';
import { tool as aiTool, generateText, stepCountIs } from 'ai';
import { createAgent, tool as lcTool } from 'langchain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { agentReply, time, weather } from './agent-mock.js';

/**
 * Real agent frameworks through the gateway, without a session header: each run lands as one session
 * with every call and tool call in order (conversation continuity in the log writer).
 */
let g: Gateway;
const MODEL = 'openai/gpt-4o-mini';
const City = z.object({ city: z.string() });

beforeAll(async () => {
  g = await startGateway();
  g.mock.set({ reply: agentReply });
});
afterAll(async () => {
  await g?.close();
});

async function container(label: string): Promise<Record<string, string>> {
  const res = await g.h.call('POST', '/v1/containers', { body: { label } });
  expect(res.status).toBe(201);
  return { 'x-evalgate-container': label };
}

/** The one session of the container, checked: three calls, weather then time, results in order. */
async function expectOneSession(label: string, city: string): Promise<any> {
  const list = await g.h.call('GET', `/v1/sessions?container=${label}`);
  expect(list.status).toBe(200);
  expect(list.body.data.map((s: any) => s.turn_count)).toEqual([3]);
  const detail = await g.h.call('GET', `/v1/sessions/${list.body.data[0].id}`);
  expect(detail.body.tool_calls.map((c: any) => [c.name, c.arguments, c.result])).toEqual([
    ['get_weather', { city }, weather(city)],
    ['get_time', { city }, time(city)],
  ]);
  expect(detail.body.turns.map((t: any) => t.output.tool_calls.length)).toEqual([1, 1, 0]);
  expect(detail.body.turns[2].output.content).toBe(`In ${city} it is sunny and noon.`);
  const logs = await g.logs(label);
  expect(logs).toHaveLength(3);
  expect(new Set(logs.map((l) => l.session_id))).toEqual(new Set([list.body.data[0].id]));
  return detail.body;
}

describe('agent frameworks through the gateway land as sessions', () => {
  for (const useResponses of [true, false]) {
    it(`@openai/agents, two tools, ${useResponses ? 'Responses' : 'Chat Completions'} mode`, async () => {
      const label = useResponses ? 'agents-responses' : 'agents-chat';
      const headers = await container(label);
      const { default: OpenAI } = await import('openai');
      const client = new OpenAI({ apiKey: g.h.admin.key, baseURL: `${g.h.url}/v1`, defaultHeaders: headers });
      const provider = new OpenAIProvider({ openAIClient: client as never, useResponses });
      const runner = new Runner({ modelProvider: provider, tracingDisabled: true });
      const agent = new Agent({
        name: 'weather',
        instructions: 'Answer with the weather and the time.',
        model: MODEL,
        tools: [
          agentTool({
            name: 'get_weather',
            description: 'Weather',
            parameters: City,
            execute: ({ city }) => weather(city),
          }),
          agentTool({
            name: 'get_time',
            description: 'Time',
            parameters: City,
            execute: ({ city }) => time(city),
          }),
        ],
      });
      const result = await runner.run(agent, 'Weather in Paris?');
      expect(result.finalOutput).toBe('In Paris it is sunny and noon.');
      await expectOneSession(label, 'Paris');
    });
  }

  it('the AI SDK: generateText with tools and stopWhen', async () => {
    const headers = await container('ai-sdk');
    const openai = createOpenAI({ apiKey: g.h.admin.key, baseURL: `${g.h.url}/v1`, headers });
    const result = await generateText({
      model: openai.chat(MODEL),
      prompt: 'Weather in Lima?',
      tools: {
        get_weather: aiTool({
          description: 'Weather',
          inputSchema: City,
          execute: async ({ city }) => weather(city),
        }),
        get_time: aiTool({ description: 'Time', inputSchema: City, execute: async ({ city }) => time(city) }),
      },
      stopWhen: stepCountIs(5),
    });
    expect(result.text).toBe('In Lima it is sunny and noon.');
    await expectOneSession('ai-sdk', 'Lima');
  });

  it('continuity off: the same AI SDK run gives no session', async () => {
    const res = await g.h.call('POST', '/v1/containers', {
      body: { label: 'ai-off', session_continuity: false },
    });
    expect(res.body.session_continuity).toBe(false);
    const openai = createOpenAI({
      apiKey: g.h.admin.key,
      baseURL: `${g.h.url}/v1`,
      headers: { 'x-evalgate-container': 'ai-off' },
    });
    await generateText({
      model: openai.chat(MODEL),
      prompt: 'Weather in Lima?',
      tools: {
        get_weather: aiTool({
          description: 'Weather',
          inputSchema: City,
          execute: async ({ city }) => weather(city),
        }),
        get_time: aiTool({ description: 'Time', inputSchema: City, execute: async ({ city }) => time(city) }),
      },
      stopWhen: stepCountIs(5),
    });
    const logs = await g.logs('ai-off');
    expect(logs).toHaveLength(3);
    expect(logs.map((l) => l.session_id)).toEqual([null, null, null]);
    expect((await g.h.call('GET', '/v1/sessions?container=ai-off')).body.total).toBe(0);
  });

  it('a LangChain agent (createAgent with ChatOpenAI)', async () => {
    const headers = await container('langchain');
    const model = new ChatOpenAI({
      model: MODEL,
      apiKey: g.h.admin.key,
      configuration: { baseURL: `${g.h.url}/v1`, defaultHeaders: headers },
      maxRetries: 0,
    });
    const agent = createAgent({
      model,
      tools: [
        lcTool(async ({ city }: { city: string }) => weather(city), {
          name: 'get_weather',
          description: 'Weather',
          schema: City,
        }),
        lcTool(async ({ city }: { city: string }) => time(city), {
          name: 'get_time',
          description: 'Time',
          schema: City,
        }),
      ],
    });
    const result = await agent.invoke({ messages: [{ role: 'user', content: 'Weather in Rome?' }] });
    const last = result.messages[result.messages.length - 1];
    expect(last?.content).toBe('In Rome it is sunny and noon.');
    await expectOneSession('langchain', 'Rome');
  });

  it('two concurrent agents in one container give two sessions', async () => {
    const headers = await container('agents-two');
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({ apiKey: g.h.admin.key, baseURL: `${g.h.url}/v1`, defaultHeaders: headers });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ openAIClient: client as never, useResponses: false }),
      tracingDisabled: true,
    });
    const agent = new Agent({
      name: 'weather',
      instructions: 'Answer with the weather and the time.',
      model: MODEL,
      tools: [
        agentTool({
          name: 'get_weather',
          description: 'Weather',
          parameters: City,
          execute: ({ city }) => weather(city),
        }),
        agentTool({
          name: 'get_time',
          description: 'Time',
          parameters: City,
          execute: ({ city }) => time(city),
        }),
      ],
    });
    await Promise.all([runner.run(agent, 'Weather in Oslo?'), runner.run(agent, 'Weather in Kyiv?')]);
    const list = await g.h.call('GET', '/v1/sessions?container=agents-two');
    expect(list.body.data.map((s: any) => s.turn_count)).toEqual([3, 3]);
  });
});
