import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, httpClient, makeWorld, refusal, TOOL_NAMES, type World } from './world.js';

let w: World;
let admin: Client;

beforeAll(async () => {
  w = await makeWorld();
  admin = await httpClient(w.h, w.h.admin.key);
}, 120_000);
afterAll(async () => {
  await admin?.close();
  await w?.close();
});

describe('the MCP server over Streamable HTTP', () => {
  it('lists every tool with its input schema', async () => {
    const { tools } = await admin.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
    for (const tool of tools) {
      expect(tool.inputSchema.type, tool.name).toBe('object');
      expect(tool.description, tool.name).toMatch(/Needs '[a-z]+:(read|write)'/);
      expect(typeof tool.annotations?.readOnlyHint, tool.name).toBe('boolean');
    }
    const search = tools.find((t) => t.name === 'search_task_logs')!;
    expect(search.inputSchema.required).toEqual(['container']);
    expect(Object.keys(search.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining([
        'container',
        'model',
        'since',
        'until',
        'text',
        'evaluator',
        'passed',
        'cursor',
      ]),
    );
  });

  it('searches task logs by model, time range, text and an evaluator verdict', async () => {
    const all = await answer(admin, 'search_task_logs', { container: 'support', limit: 100 });
    expect(all.total).toBe(w.logCount);
    expect(all.logs[0]).toMatchObject({ seq: 1, model: 'model-b', output: 'Paris 0' });
    expect(all.logs[0].links.dashboard).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/projects\/.+\/containers\//);

    const byModel = await answer(admin, 'search_task_logs', { container: 'support', model: 'model-b' });
    expect(byModel.total).toBe(10);
    const inRange = await answer(admin, 'search_task_logs', {
      container: 'support',
      since: '2026-01-01T02:00:00Z',
      until: '2026-01-01T05:00:00Z',
    });
    expect(inRange.logs.map((l: { seq: number }) => l.seq)).toEqual([3, 4, 5]);
    const byText = await answer(admin, 'search_task_logs', { container: 'support', text: 'LYON 1' });
    // Lyon 1, 11, 13, 15, 17, 19: case-insensitive, in the output.
    expect(byText.logs.map((l: { output: string }) => l.output)).toEqual([
      'Lyon 1',
      'Lyon 11',
      'Lyon 13',
      'Lyon 15',
      'Lyon 17',
      'Lyon 19',
    ]);
    const wildcard = await answer(admin, 'search_task_logs', { container: 'support', text: '%' });
    expect(wildcard.total).toBe(0);
    const failed = await answer(admin, 'search_task_logs', {
      container: 'support',
      evaluator: 'exact',
      passed: false,
      limit: 100,
    });
    expect(failed.total).toBe(15);
    expect(failed.logs.every((l: { output: string }) => l.output.startsWith('Lyon'))).toBe(true);
    const passed = await answer(admin, 'search_task_logs', {
      container: 'support',
      evaluator: 'exact',
      min_score: 1,
    });
    expect(passed.total).toBe(15);
  });

  it('pages large results with a cursor', async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = await answer(admin, 'search_task_logs', {
        container: 'support',
        limit: 7,
        ...(cursor ? { cursor } : {}),
      });
      seen.push(...page.logs.map((l: { seq: number }) => l.seq));
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor !== null);
    expect(pages).toBe(5);
    expect(seen).toEqual(Array.from({ length: w.logCount }, (_, i) => i + 1));
    const bad = await refusal(admin, 'search_task_logs', { container: 'support', cursor: 'nonsense' });
    expect(bad.text).toMatch(/422 .*cursor/);
  });

  it('answers every other tool', async () => {
    const trace = await answer(admin, 'get_trace', { trace_id: w.traceId });
    expect(trace.spans.length).toBeGreaterThan(0);
    expect(trace.links.dashboard).toContain(`/traces/${w.traceId}`);

    const session = await answer(admin, 'get_session', { session: w.sessionId });
    expect(session).toMatchObject({ id: w.sessionId, turn_count: 1, next_cursor: null });

    const runs = await answer(admin, 'list_runs', { limit: 2 });
    expect(runs.total).toBe(3);
    expect(runs.runs).toHaveLength(2);
    expect(runs.next_cursor).toEqual(expect.any(String));

    const run = await answer(admin, 'get_run', { run_id: w.runA });
    expect(run).toMatchObject({ id: w.runA, status: 'completed' });
    expect(run.results.overall.avg_score).toBeCloseTo(2 / 3);
    expect(run.links.api).toMatch(new RegExp(`/v1/evaluation/runs/${w.runA}$`));

    const samples = await answer(admin, 'list_run_samples', { run_id: w.runA, passed: false });
    expect(samples.total).toBe(1);

    const comparison = await answer(admin, 'compare_runs', { run_id: w.runB, baseline: w.runA });
    expect(comparison).toMatchObject({ run_id: w.runB, baseline_id: w.runA, partial: false });
    expect(comparison.summary.comparisons).toBe(1);

    const evaluators = await answer(admin, 'list_evaluators', {});
    expect(evaluators.evaluators.map((e: { name: string }) => e.name)).toEqual(['exact']);

    const templates = await answer(admin, 'list_evaluator_templates', { limit: 100 });
    expect(templates.total).toBeGreaterThan(0);
    const template = templates.templates[0].id as string;
    const made = await answer(admin, 'create_evaluator_from_template', { template, model: 'judge' });
    expect(made.evaluator).toMatchObject({ kind: 'evaluator.judge', template, model: 'judge' });

    const agreement = await answer(admin, 'get_agreement', { evaluator: 'exact' });
    expect(agreement.object).toBe('evaluator.agreement');

    const added = await answer(admin, 'add_dataset_items', {
      dataset: 'qa',
      items: [{ input: 'new', expected: 'row' }],
    });
    expect(added.dataset).toMatchObject({ item_count: 4, version: 2, created: false });
    expect(added.dataset.added).toHaveLength(1);
    const rows = await w.h.call('GET', '/v1/datasets/qa/items');
    expect(rows.body.data).toHaveLength(4);
    const v1 = await w.h.call('GET', '/v1/datasets/qa/items?version=1');
    expect(v1.body.data).toHaveLength(3);
    // An item made from a recorded call, as the REST route makes it.
    const [log] = (await answer(admin, 'search_task_logs', { container: 'support', limit: 1 })).logs;
    const fromLog = await answer(admin, 'add_dataset_items', {
      dataset: 'qa',
      items: [{ from: { task_log_id: log.id } }],
    });
    expect(fromLog.dataset).toMatchObject({ item_count: 5, version: 3 });
    const v3 = await w.h.call('GET', '/v1/datasets/qa/items?version=3');
    const madeItem = v3.body.data.find((item: { id: string }) => item.id === fromLog.dataset.added[0]);
    expect(JSON.stringify(madeItem)).toContain(log.output);
    const created = await answer(admin, 'add_dataset_items', {
      dataset: 'fresh',
      items: [{ input: 'a' }, { input: 'b' }],
      create: true,
    });
    expect(created.dataset).toMatchObject({ item_count: 2, created: true });

    const started = await answer(admin, 'start_run', {
      run: {
        container: 'support',
        evaluators: [w.evaluatorId],
        sample: { type: 'dataset', dataset: 'qa' },
        ground_truth: { type: 'dataset', dataset: 'qa' },
      },
    });
    expect(started.run.id).toMatch(/^run/);
    expect(started.links.dashboard).toContain(`/runs/${started.run.id}`);
  });

  it('checks the key of each tool as its REST route does', async () => {
    const noLogs = await w.h.key(['evaluation:read', 'evaluators:read']);
    const client = await httpClient(w.h, noLogs.key);
    try {
      const refused = await refusal(client, 'search_task_logs', { container: 'support' });
      expect(refused.text).toMatch(/^403 permission_denied: .*'logs:read'/);
      expect(refused.error).toMatchObject({ code: 'permission_denied', status: 403 });
      expect((await refusal(client, 'get_trace', { trace_id: w.traceId })).error?.code).toBe(
        'permission_denied',
      );
      expect((await refusal(client, 'start_run', { run: {} })).error?.code).toBe('permission_denied');
      // Its own permissions still answer; the samples show task logs' content, which it may not read.
      expect((await answer(client, 'list_runs', {})).total).toBe(4);
      expect((await refusal(client, 'list_run_samples', { run_id: w.logRun })).error?.code).toBe(
        'permission_denied',
      );
    } finally {
      await client.close();
    }
  });

  it("never returns another project's objects", async () => {
    const client = await httpClient(w.h, w.other.key);
    try {
      const logs = await answer(client, 'search_task_logs', { container: 'support', limit: 100 });
      expect(logs.logs.map((l: { id: string }) => l.id).sort()).toEqual([...w.otherLogIds].sort());
      expect((await answer(client, 'list_runs', {})).total).toBe(0);
      expect((await answer(client, 'list_evaluators', {})).total).toBe(0);
      for (const [name, args] of [
        ['get_run', { run_id: w.runA }],
        ['list_run_samples', { run_id: w.runA }],
        ['compare_runs', { run_id: w.runB, baseline: w.runA }],
        ['get_trace', { trace_id: w.traceId }],
        ['get_session', { session: w.sessionId }],
        ['get_agreement', { evaluator: w.evaluatorId }],
        ['add_dataset_items', { dataset: 'qa', items: [{ input: 'x' }] }],
      ] as const) {
        const refused = await refusal(client, name, args);
        expect(refused.error?.code, name).toBe('not_found');
      }
    } finally {
      await client.close();
    }
  });

  it('reads and adds prompt versions, with the prompts permissions and within the project', async () => {
    const created = await w.h.call('POST', '/v1/prompts', {
      body: {
        name: 'greeter',
        messages: [{ role: 'system', content: 'Greet {{name}}.' }],
        variables: { name: 'string' },
        labels: ['production'],
      },
    });
    expect(created.status).toBe(201);
    const listed = await answer(admin, 'list_prompts', {});
    expect(listed.prompts.map((p: { name: string }) => p.name)).toEqual(['greeter']);
    const added = await answer(admin, 'create_prompt_version', {
      prompt: 'greeter',
      version: {
        messages: [{ role: 'system', content: 'Say hello to {{name}}.' }],
        variables: { name: 'string' },
      },
    });
    expect(added.version).toMatchObject({ version: 2 });
    const production = await answer(admin, 'get_prompt', { prompt: 'greeter', label: 'production' });
    expect(production.version).toMatchObject({ version: 1 });
    expect(production.version.messages[0].content).toBe('Greet {{name}}.');
    const latest = await answer(admin, 'get_prompt', { prompt: created.body.id });
    expect(latest.version.version).toBe(2);

    const bad = await refusal(admin, 'create_prompt_version', {
      prompt: 'greeter',
      version: { messages: 'hi' },
    });
    expect(bad.error).toMatchObject({ code: 'validation_error', status: 422 });
    const unknownLabel = await refusal(admin, 'get_prompt', { prompt: 'greeter', label: 'staging' });
    expect(unknownLabel.error?.code).toBe('not_found');

    const readOnly = await httpClient(w.h, (await w.h.key(['prompts:read'])).key);
    const other = await httpClient(w.h, w.other.key);
    try {
      expect((await answer(readOnly, 'get_prompt', { prompt: 'greeter' })).name).toBe('greeter');
      const refused = await refusal(readOnly, 'create_prompt_version', {
        prompt: 'greeter',
        version: { messages: [{ role: 'user', content: 'x' }] },
      });
      expect(refused.error?.code).toBe('permission_denied');
      expect((await refusal(other, 'get_prompt', { prompt: 'greeter' })).error?.code).toBe('not_found');
      expect((await answer(other, 'list_prompts', {})).prompts).toEqual([]);
    } finally {
      await readOnly.close();
      await other.close();
    }
  });

  it('refuses wrong argument types and bad bodies with clear tool errors', async () => {
    const wrongType = await refusal(admin, 'search_task_logs', { container: 5 });
    expect(wrongType.text).toMatch(/Invalid arguments for tool search_task_logs/);
    expect(wrongType.text).toMatch(/container/);
    const unknown = await refusal(admin, 'list_runs', { colour: 'red' });
    expect(unknown.text).toMatch(/colour/);
    const badDate = await refusal(admin, 'search_task_logs', { container: 'support', since: 'yesterday' });
    expect(badDate.text).toMatch(/since/);
    const badBody = await refusal(admin, 'start_run', { run: { evaluators: 'exact' } });
    expect(badBody.error).toMatchObject({ code: 'validation_error', status: 422 });
    expect(badBody.text).toMatch(/body\.evaluators/);
    const missing = await refusal(admin, 'search_task_logs', { container: 'nowhere' });
    expect(missing.error?.code).toBe('not_found');
    const orphan = await refusal(admin, 'search_task_logs', { container: 'support', passed: true });
    expect(orphan.text).toMatch(/evaluator/);
    // The server still answers after all of that.
    expect((await answer(admin, 'list_runs', { limit: 1 })).runs).toHaveLength(1);
  });

  it('serves the docs as resources', async () => {
    const { resources } = await admin.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris).toEqual(expect.arrayContaining(['evalgate://docs/mcp', 'evalgate://docs/runs']));
    const page = await admin.readResource({ uri: 'evalgate://docs/mcp' });
    const text = (page.contents[0] as { text: string }).text;
    expect(text).toMatch(/^# /);
    expect(text).toContain('claude mcp add');
  });

  it('answers the transport errors of HTTP in the API envelope', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const anonymous = await fetch(`${w.h.url}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify(initialize),
    });
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    const keyed = await fetch(`${w.h.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${w.h.admin.key}` },
      body: JSON.stringify(initialize),
    });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get('x-ratelimit-limit')).not.toBeNull();
    const initialized = (await keyed.json()) as { result: { serverInfo: { name: string } } };
    expect(initialized.result.serverInfo.name).toBe('evalgate');
    const get = await fetch(`${w.h.url}/mcp`, { headers: { authorization: `Bearer ${w.h.admin.key}` } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const notJson = await fetch(`${w.h.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${w.h.admin.key}` },
      body: '{"jsonrpc":',
    });
    expect(notJson.status).toBe(400);
  });
});
