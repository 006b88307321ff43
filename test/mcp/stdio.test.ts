// Database-independent: the stdio relay of the MCP endpoint (its tools run on both databases in test/mcp/http.test.ts).
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliArgs } from '../helpers/cli-bundle.js';
import { answer, makeWorld, refusal, TOOL_NAMES, type World } from './world.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

let w: World;

/** `evalgate mcp` started as an agent starts it: a child process speaking MCP on its stdio. */
async function stdioClient(baseUrl: string, key: string): Promise<Client> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith('EVALGATE_')) env[name] = value;
  }
  const client = new Client({ name: 'evalgate-stdio-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [...cliArgs(), 'mcp'],
      cwd: ROOT,
      env: { ...env, EVALGATE_BASE_URL: baseUrl, EVALGATE_API_KEY: key },
      stderr: 'pipe',
    }),
  );
  return client;
}

beforeAll(async () => {
  w = await makeWorld();
}, 120_000);
afterAll(async () => {
  await w?.close();
});

describe('evalgate mcp (stdio)', { timeout: 60_000 }, () => {
  it('relays every tool to the server, with the key it was given', async () => {
    const client = await stdioClient(w.h.url, w.h.admin.key);
    try {
      expect(client.getServerVersion()?.name).toBe('evalgate');
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
      for (const tool of tools) expect(tool.inputSchema.type, tool.name).toBe('object');

      const logs = await answer(client, 'search_task_logs', { container: 'support', limit: 10 });
      expect(logs).toMatchObject({ total: w.logCount, next_cursor: expect.any(String) });
      const next = await answer(client, 'search_task_logs', {
        container: 'support',
        limit: 10,
        cursor: logs.next_cursor,
      });
      expect(next.logs[0].seq).toBe(11);
      expect((await answer(client, 'get_trace', { trace_id: w.traceId })).spans.length).toBeGreaterThan(0);
      expect((await answer(client, 'get_session', { session: w.sessionId })).id).toBe(w.sessionId);
      expect((await answer(client, 'list_runs', {})).total).toBe(3);
      expect((await answer(client, 'get_run', { run_id: w.runA })).status).toBe('completed');
      expect((await answer(client, 'list_run_samples', { run_id: w.runA })).total).toBe(3);
      expect((await answer(client, 'compare_runs', { run_id: w.runB, baseline: w.runA })).baseline_id).toBe(
        w.runA,
      );
      expect((await answer(client, 'list_evaluators', {})).total).toBe(1);
      expect((await answer(client, 'list_evaluator_templates', {})).total).toBeGreaterThan(0);
      expect((await answer(client, 'get_agreement', { evaluator: 'exact' })).object).toBe(
        'evaluator.agreement',
      );

      const wrong = await refusal(client, 'get_run', { run_id: 42 });
      expect(wrong.text).toMatch(/Invalid arguments for tool get_run/);
      const resources = await client.listResources();
      expect(resources.resources.map((r) => r.uri)).toContain('evalgate://docs/mcp');
    } finally {
      await client.close();
    }
  });

  it("refuses what the key may not do, and never shows another project's objects", async () => {
    const readOnly = await w.h.key(['evaluation:read']);
    const client = await stdioClient(w.h.url, readOnly.key);
    try {
      const refused = await refusal(client, 'search_task_logs', { container: 'support' });
      expect(refused.text).toMatch(/^403 permission_denied: .*'logs:read'/);
    } finally {
      await client.close();
    }
    const other = await stdioClient(w.h.url, w.other.key);
    try {
      expect((await refusal(other, 'get_run', { run_id: w.runA })).error?.code).toBe('not_found');
      const logs = await answer(other, 'search_task_logs', { container: 'support' });
      expect(logs.logs.map((l: { id: string }) => l.id).sort()).toEqual([...w.otherLogIds].sort());
    } finally {
      await other.close();
    }
  });

  it('answers each request with an error saying why when the server cannot be reached or refuses the key', async () => {
    await expect(stdioClient('http://127.0.0.1:9', w.h.admin.key)).rejects.toThrow(/did not answer/);
    await expect(stdioClient(w.h.url, 'eg_not-a-real-key')).rejects.toThrow(/401|invalid_api_key|Invalid/i);
  });
});
