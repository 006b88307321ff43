import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness, type TestKey } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/** What the MCP tests read through the tools, made through the REST API of a real server. */
export interface World {
  h: Harness;
  mock: MockUpstream;
  /** The 30 imported task logs of container `support`: even ones answer right, odd ones wrong. */
  logCount: number;
  evaluatorId: string;
  /** A run of `exact` over the task logs of `support`, and two over the dataset `qa`. */
  logRun: string;
  runA: string;
  runB: string;
  traceId: string;
  sessionId: string;
  /** A key of another project, which has a container `support` of its own. */
  other: TestKey;
  otherLogIds: string[];
  close(): Promise<void>;
}

const TERMINAL = ['completed', 'error', 'cancelled'];

async function ok<T = any>(
  h: Harness,
  method: string,
  path: string,
  body?: unknown,
  key?: string,
): Promise<T> {
  const res = await h.call<T>(method, path, { body, ...(key ? { key } : {}) });
  expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
  return res.body;
}

async function runToEnd(h: Harness, body: unknown): Promise<string> {
  const run = await ok<{ id: string }>(h, 'POST', '/v1/evaluation/runs', body);
  await waitFor(
    async () => TERMINAL.includes((await h.call('GET', `/v1/evaluation/runs/${run.id}`)).body.status),
    60_000,
    `run ${run.id} to end`,
  );
  const done = await h.call('GET', `/v1/evaluation/runs/${run.id}`);
  expect(done.body.status, JSON.stringify(done.body.error)).toBe('completed');
  return run.id;
}

export async function makeWorld(): Promise<World> {
  const mock = await startMockUpstream({ reply: () => ({ text: 'hello from the model' }) });
  const h = await startHarness();
  await ok(h, 'POST', '/v1/models', {
    label: 'judge',
    provider: 'openai-compatible',
    base_url: mock.baseUrl,
    upstream_model: 'judge',
  });
  await ok(h, 'POST', '/v1/containers', { label: 'support' });
  const start = Date.parse('2026-01-01T00:00:00Z');
  const logs = Array.from({ length: 30 }, (_, i) => ({
    model: i % 3 === 0 ? 'model-b' : 'model-a',
    input: [{ role: 'user', content: `question ${i}` }],
    output: i % 2 === 0 ? `Paris ${i}` : `Lyon ${i}`,
    metadata: { expected: `Paris ${i}` },
    created_at: new Date(start + i * 3_600_000).toISOString(),
  }));
  await ok(h, 'POST', '/v1/containers/support/logs', logs);
  const evaluator = await ok<{ id: string }>(h, 'POST', '/v1/evaluators', {
    type: 'string_check',
    name: 'exact',
    input: '{{sample.output_text}}',
    reference: '{{item.expected}}',
    operation: 'eq',
  });
  const logRun = await runToEnd(h, {
    container: 'support',
    evaluators: [evaluator.id],
    sample: { type: 'container', container: 'support' },
  });
  const items = [
    { input: '2+2', output: '4', expected: '4' },
    { input: 'capital', output: 'Paris', expected: 'Paris' },
    { input: 'x', output: 'wrong', expected: 'right' },
  ];
  await ok(h, 'POST', '/v1/datasets', { label: 'qa', items });
  const side = { type: 'dataset', dataset: 'qa' };
  const runBody = { container: 'support', evaluators: [evaluator.id], sample: side, ground_truth: side };
  const runA = await runToEnd(h, runBody);
  const runB = await runToEnd(h, runBody);

  // A gateway call in a session: its trace and its session.
  await ok(h, 'POST', '/v1/containers', { label: 'chat' });
  const call = await fetch(`${h.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${h.admin.key}`,
      'content-type': 'application/json',
      'x-evalgate-container': 'chat',
      'x-evalgate-session': 'conversation-1',
    },
    body: JSON.stringify({ model: 'judge', messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(call.status, await call.clone().text()).toBe(200);
  // Recorded off the request path: stored once the writers have flushed.
  await h.services.logWriter.flush();
  await h.services.traces.flush();
  let traceId = '';
  await waitFor(async () => {
    const traces = await h.call('GET', '/v1/traces?container=chat');
    traceId = traces.body.data?.[0]?.id ?? '';
    return traceId !== '';
  });
  let sessionId = '';
  await waitFor(async () => {
    const sessions = await h.call('GET', '/v1/sessions');
    sessionId = sessions.body.data?.[0]?.id ?? '';
    return sessionId !== '';
  });

  const other = await h.key(['*'], 'other');
  await ok(h, 'POST', '/v1/containers', { label: 'support' }, other.key);
  await ok(h, 'POST', '/v1/containers/support/logs', logs.slice(0, 3), other.key);
  const otherLogs = await h.call('GET', '/v1/containers/support/logs', { key: other.key });
  return {
    h,
    mock,
    logCount: logs.length,
    evaluatorId: evaluator.id,
    logRun,
    runA,
    runB,
    traceId,
    sessionId,
    other,
    otherLogIds: otherLogs.body.data.map((l: { id: string }) => l.id),
    async close() {
      await h.close();
      await mock.close();
    },
  };
}

/** An MCP client of the official SDK over Streamable HTTP, with the key as bearer. */
export async function httpClient(h: Harness, key: string): Promise<Client> {
  const client = new Client({ name: 'evalgate-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

/** A tool's structured answer; fails the test when the call is a tool error. */
export async function answer<T = any>(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  expect(result.isError ?? false, `${name}: ${text}`).toBe(false);
  expect(text.length).toBeGreaterThan(0);
  return result.structuredContent as T;
}

/** A tool call that must fail as a tool error: its text and structured error. */
export async function refusal(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, JSON.stringify(result)).toBe(true);
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  return {
    text,
    error: (result.structuredContent as { error?: Record<string, unknown> } | undefined)?.error,
  };
}

export const TOOL_NAMES = [
  'add_dataset_items',
  'compare_prompt_versions',
  'compare_runs',
  'create_evaluator_from_template',
  'create_prompt_version',
  'get_agreement',
  'get_prompt',
  'get_run',
  'get_session',
  'get_trace',
  'list_evaluator_templates',
  'list_evaluators',
  'list_prompts',
  'list_run_samples',
  'list_runs',
  'search_task_logs',
  'start_experiment',
  'start_run',
];
