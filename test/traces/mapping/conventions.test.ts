import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { contentWithLogEvents } from '../../../src/traces/logs-events.js';
import { type ModelCallFacts, type SpanView, spanFacts } from '../../../src/traces/mapping/index.js';
import { CONVENTIONS, conventionOf } from '../../../src/traces/mapping/registry.js';
import { completionOf } from '../../../src/traces/task-log.js';
import type { RecordedSpan } from '../../fixtures/spans/record.js';

/**
 * The span mapping per convention, from spans recorded from the real emitters against a mock OpenAI
 * server (test/fixtures/spans/record.ts writes the fixtures): which convention maps the span, and what it
 * reads (models, usage, messages, tool calls). No server, no database.
 */
const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/spans');

function recorded(emitter: string): RecordedSpan[] {
  return (JSON.parse(fs.readFileSync(path.join(dir, `${emitter}.json`), 'utf8')) as { spans: RecordedSpan[] })
    .spans;
}

function span(emitter: string, name: string, nth = 0): RecordedSpan {
  const found = recorded(emitter).filter((s) => s.name === name)[nth];
  if (!found) throw new Error(`${emitter} has no span ${name} #${nth}`);
  return found;
}

function call(s: SpanView): ModelCallFacts {
  const c = spanFacts(s).call;
  if (!c) throw new Error(`${s.name} is no model call`);
  return c;
}

/** A span without the attributes whose names match. */
function without(s: RecordedSpan, drop: RegExp): RecordedSpan {
  return {
    ...s,
    attributes: Object.fromEntries(Object.entries(s.attributes).filter(([k]) => !drop.test(k))),
  };
}

const WEATHER_CALLS = [
  { id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
  { id: 'call_t', type: 'function', function: { name: 'get_time', arguments: '{"city":"Oslo"}' } },
];

interface Row {
  title: string;
  span: () => RecordedSpan;
  convention: string;
  operation: string;
  provider: string | null;
  requestModel: string;
  usage: { input: number | null; output: number | null };
  input: unknown[] | null;
  output: { text: string | null; toolCalls: unknown[] } | null;
}

const ROWS: Row[] = [
  {
    title: 'OpenInference, chat completion',
    span: () => span('openinference', 'OpenAI Chat Completions'),
    convention: 'openinference',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 9, output: 3 },
    input: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'two plus two' },
    ],
    output: { text: 'answer to two plus two', toolCalls: [] },
  },
  {
    title: 'OpenInference, chat completion with two tool calls',
    span: () => span('openinference', 'OpenAI Chat Completions', 1),
    convention: 'openinference',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 20, output: 5 },
    input: [{ role: 'user', content: 'weather in Oslo?' }],
    output: { text: null, toolCalls: WEATHER_CALLS },
  },
  {
    title: 'OpenInference, Responses API text (output_text parts)',
    span: () => span('openinference', 'OpenAI Responses'),
    convention: 'openinference',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 9, output: 3 },
    input: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'two plus two' },
    ],
    output: { text: 'answer to two plus two', toolCalls: [] },
  },
  {
    title: 'OpenInference, Responses API: input_text parts, one output item per function call',
    span: () => span('openinference', 'OpenAI Responses', 1),
    convention: 'openinference',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 20, output: 5 },
    input: [{ role: 'user', content: 'weather in Oslo?' }],
    output: { text: null, toolCalls: WEATHER_CALLS },
  },
  {
    title: 'LangChain ChatOpenAI through OpenInference, the tool results turn',
    span: () => span('langchain-openinference', 'OpenAI Chat Completions', 1),
    convention: 'openinference',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 30, output: 6 },
    input: [
      { role: 'user', content: 'weather in Oslo?' },
      { role: 'assistant', content: '', tool_calls: WEATHER_CALLS },
      { role: 'tool', content: 'sunny in Oslo', tool_call_id: 'call_w' },
      { role: 'tool', content: 'noon in Oslo', tool_call_id: 'call_t' },
    ],
    output: { text: 'It is sunny in Oslo.', toolCalls: [] },
  },
  {
    title: '@openai/agents (Responses) through OpenInference, the answer turn',
    span: () => span('openai-agents-openinference', 'OpenAI Responses', 1),
    convention: 'openinference',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 30, output: 6 },
    input: [
      { role: 'system', content: 'Answer with the weather and the time.' },
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [WEATHER_CALLS[0]] },
      { role: 'assistant', content: null, tool_calls: [WEATHER_CALLS[1]] },
      { role: 'tool', content: 'sunny', tool_call_id: 'call_w' },
      { role: 'tool', content: 'noon', tool_call_id: 'call_t' },
    ],
    output: { text: 'It is sunny in Oslo.', toolCalls: [] },
  },
  {
    title: 'AI SDK 7 with @ai-sdk/otel, the tool-call step (GenAI conventions)',
    span: () => span('ai-sdk-otel', 'chat gpt-4o-mini'),
    convention: 'genai',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 20, output: 5 },
    input: [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Weather in Oslo?' },
    ],
    output: { text: null, toolCalls: WEATHER_CALLS },
  },
  {
    title: 'AI SDK 7 with @ai-sdk/otel, the answer step with the tool results',
    span: () => span('ai-sdk-otel', 'chat gpt-4o-mini', 1),
    convention: 'genai',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 30, output: 6 },
    input: [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: WEATHER_CALLS },
      { role: 'tool', content: 'sunny in Oslo', tool_call_id: 'call_w' },
      { role: 'tool', content: 'noon in Oslo', tool_call_id: 'call_t' },
    ],
    output: { text: 'It is sunny in Oslo.', toolCalls: [] },
  },
  {
    title: 'AI SDK doGenerate, the tool-call step',
    span: () => span('ai-sdk', 'ai.generateText.doGenerate'),
    convention: 'ai-sdk',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 20, output: 5 },
    input: [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Weather in Oslo?' },
    ],
    output: { text: null, toolCalls: WEATHER_CALLS },
  },
  {
    title: 'AI SDK doGenerate, the answer step with the tool results',
    span: () => span('ai-sdk', 'ai.generateText.doGenerate', 1),
    convention: 'ai-sdk',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 30, output: 6 },
    input: [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: WEATHER_CALLS },
      { role: 'tool', content: 'sunny in Oslo', tool_call_id: 'call_w' },
      { role: 'tool', content: 'noon in Oslo', tool_call_id: 'call_t' },
    ],
    output: { text: 'It is sunny in Oslo.', toolCalls: [] },
  },
  {
    title: 'OpenLLMetry (GenAI ≥ 1.37 attributes), chat',
    span: () => span('openllmetry', 'chat gpt-4o-mini'),
    convention: 'genai',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 9, output: 3 },
    input: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'two plus two' },
    ],
    output: { text: 'answer to two plus two', toolCalls: [] },
  },
  {
    title: 'OpenLLMetry (GenAI ≥ 1.37 attributes), tool calls',
    span: () => span('openllmetry', 'chat gpt-4o-mini', 1),
    convention: 'genai',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 20, output: 5 },
    input: [{ role: 'user', content: 'weather in Oslo?' }],
    output: { text: null, toolCalls: WEATHER_CALLS },
  },
  {
    title: '@opentelemetry/instrumentation-openai: the span alone has no content',
    span: () => span('otel-openai', 'chat gpt-4o-mini'),
    convention: 'genai',
    operation: 'chat',
    provider: 'openai',
    requestModel: 'gpt-4o-mini',
    usage: { input: 9, output: 3 },
    input: null,
    output: null,
  },
];

describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')(
  'the convention registry on recorded spans',
  () => {
    it('lists the conventions by ascending priority, the GenAI fallback last', () => {
      const priorities = CONVENTIONS.map((c) => c.priority);
      expect(priorities).toEqual([...priorities].sort((x, y) => x - y));
      expect(CONVENTIONS.map((c) => c.name)).toEqual(['openinference', 'ai-sdk', 'openllmetry', 'genai']);
    });

    it.each(ROWS)('$title', (row) => {
      const s = row.span();
      const facts = spanFacts(s);
      expect(conventionOf(s).name).toBe(row.convention);
      expect(facts.operation).toBe(row.operation);
      expect(facts.call).toMatchObject({
        convention: row.convention,
        provider: row.provider,
        requestModel: row.requestModel,
        responseModel: 'gpt-4o-mini',
        usage: row.usage,
      });
      expect(facts.call?.content.input).toEqual(row.input);
      expect(facts.call?.content.output).toEqual(row.output);
    });

    it('the AI SDK outer span and tool spans are no model calls', () => {
      expect(spanFacts(span('ai-sdk', 'ai.generateText')).call).toBeNull();
      expect(spanFacts(span('ai-sdk', 'ai.toolCall')).call).toBeNull();
      // AI SDK 7: the agent's span (with the run's summed usage), its steps and tool executions.
      for (const name of ['invoke_agent gpt-4o-mini', 'step 1', 'execute_tool get_weather'])
        expect(spanFacts(span('ai-sdk-otel', name)).call, name).toBeNull();
      expect(spanFacts(span('ai-sdk-otel', 'execute_tool get_weather')).operation).toBe('execute_tool');
    });

    it('GenAI ≤ 1.36 events: instrumentation-openai messages sent as log records join the span', () => {
      for (const [nth, output] of [
        [0, { text: 'answer to two plus two', toolCalls: [] }],
        [1, { text: null, toolCalls: WEATHER_CALLS }],
      ] as const) {
        const s = span('otel-openai', 'chat gpt-4o-mini', nth);
        const content = contentWithLogEvents(s, s.logEvents);
        expect(content?.output).toEqual(output);
        expect(content?.input?.at(-1)).toMatchObject({ role: 'user' });
        // The same messages as span events (the ≤ 1.36 span-event form) read the same.
        expect(call({ ...s, events: s.logEvents }).content).toEqual(content);
      }
    });

    it('OpenLLMetry flat attributes (releases before the GenAI ≥ 1.37 form)', () => {
      const s: SpanView = {
        spanId: '00f067aa0ba902b7',
        name: 'openai.chat',
        attributes: {
          'llm.request.type': 'chat',
          'gen_ai.system': 'OpenAI',
          'gen_ai.request.model': 'gpt-4o-mini',
          'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
          'gen_ai.prompt.0.role': 'user',
          'gen_ai.prompt.0.content': 'weather in Oslo?',
          'gen_ai.completion.0.role': 'assistant',
          'gen_ai.completion.0.tool_calls.0.id': 'call_w',
          'gen_ai.completion.0.tool_calls.0.name': 'get_weather',
          'gen_ai.completion.0.tool_calls.0.arguments': '{"city":"Oslo"}',
          'llm.usage.prompt_tokens': 20,
          'llm.usage.completion_tokens': 5,
        },
        events: [],
      };
      expect(call(s)).toEqual({
        convention: 'openllmetry',
        provider: 'OpenAI',
        requestModel: 'gpt-4o-mini',
        responseModel: 'gpt-4o-mini-2024-07-18',
        usage: { input: 20, output: 5 },
        content: {
          input: [{ role: 'user', content: 'weather in Oslo?' }],
          output: { text: null, toolCalls: [WEATHER_CALLS[0]] },
        },
      });
    });
  },
);

describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('mapping fidelity', () => {
  it('tool calls recorded without an id get distinct ids, the same on every mapping of the span', () => {
    // The agents' second turn has each earlier call in a message of its own: before, both were call_0.
    const s = without(span('openai-agents-openinference', 'OpenAI Responses', 1), /tool_call\.id$/);
    const ids = (c: ModelCallFacts) =>
      (c.content.input ?? []).flatMap((m) => (m.tool_calls ?? []).map((t) => t.id));
    const first = ids(call(s));
    expect(first).toHaveLength(2);
    expect(new Set(first).size).toBe(2);
    for (const id of first) expect(id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(ids(call(s))).toEqual(first);
    expect(ids(call(structuredClone(s)))).toEqual(first);
    // Another span's calls are other calls.
    const other = ids(call({ ...s, spanId: 'a'.repeat(16) }));
    expect(other.some((id) => first.includes(id))).toBe(false);
    // Two calls in one message keep distinct ids too.
    const chat = without(span('openinference', 'OpenAI Chat Completions', 1), /tool_call\.id$/);
    const out = call(chat).content.output?.toolCalls.map((t) => t.id) ?? [];
    expect(new Set(out).size).toBe(2);
  });

  it('reads the OpenInference Responses output_text parts', () => {
    const out = call(span('openinference', 'OpenAI Responses')).content.output;
    expect(out?.text).toBe('answer to two plus two');
  });

  it('usage the emitter did not record is unknown, not 0, and the task log leaves it out', () => {
    const s = without(span('otel-openai', 'chat gpt-4o-mini'), /usage/);
    const c = call(s);
    expect(c.usage).toEqual({ input: null, output: null });
    expect(completionOf({ spanId: s.spanId, startedAt: new Date().toISOString() }, c).usage).toBeNull();
    const half = call(without(span('openinference', 'OpenAI Chat Completions'), /token_count\.completion$/));
    expect(half.usage).toEqual({ input: 9, output: null });
    expect(completionOf({ spanId: 'x', startedAt: new Date().toISOString() }, half).usage).toEqual({
      prompt_tokens: 9,
    });
  });
});
