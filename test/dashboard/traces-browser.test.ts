/**
 * The dashboard's Traces page in a real browser (Chromium through playwright-core) against a real server:
 * a trace sent over OTLP by the OpenTelemetry SDK (an agent span, a model call with a tool call, a failing
 * tool span) is listed and filtered, shown as a waterfall of spans, and its model-call span opens its
 * input, output, tool calls, tokens and the score a run gave it; at 1440 px and 390 px. SQLite only;
 * skipped when /usr/bin/chromium is missing.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';
import { sdkProvider, settled } from '../traces/helpers.js';
import {
  apiCaller,
  fitsWidth,
  hasChromium,
  launchChromium,
  PHONE,
  signInWithProject,
  WIDE,
} from './browser-kit.js';
import { type DashboardSetup, ensureWebBuilt, startDashboard } from './helpers.js';

let s: DashboardSetup;
let browser: Browser;
let page: Page;
let projectUrl = '';
let key = '';
const api = apiCaller(
  () => s.h.url,
  () => key,
);
let traceId = '';

describe.skipIf(testDbKind() === 'postgres' || !hasChromium)('the Traces page in a browser', () => {
  beforeAll(async () => {
    ensureWebBuilt();
    s = await startDashboard({ EVALGATE_LOG_FLUSH_MS: '50', EVALGATE_RUN_POLL_MS: '100' });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: WIDE })).newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
  });

  it('signs in; the project receives a trace over OTLP and a run scores its model call', async () => {
    projectUrl = await signInWithProject(page, s.h.url, {
      login: 'tess',
      org: 'Tracers',
      project: 'agent-app',
    });
    key = (await s.h.key(['*'], 'agent-app')).key;
    await api('POST', '/v1/containers', { label: 'agent' });

    const provider = sdkProvider(s.h, {
      protocol: 'protobuf',
      key,
      resource: { 'evalgate.container': 'agent' },
    });
    const tracer = provider.getTracer('browser');
    await tracer.startActiveSpan('invoke_agent weather', async (agent) => {
      traceId = agent.spanContext().traceId;
      agent.setAttribute('gen_ai.operation.name', 'invoke_agent');
      const chat = tracer.startSpan('chat gpt-4o-mini', { kind: SpanKind.CLIENT });
      chat.setAttributes({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': 31,
        'gen_ai.usage.output_tokens': 9,
        'gen_ai.input.messages': JSON.stringify([
          { role: 'user', parts: [{ type: 'text', content: 'Weather in Lyon?' }] },
        ]),
        'gen_ai.output.messages': JSON.stringify([
          {
            role: 'assistant',
            parts: [
              { type: 'text', content: 'Looking it up.' },
              { type: 'tool_call', id: 'call_7', name: 'get_weather', arguments: { city: 'Lyon' } },
            ],
            finish_reason: 'tool_call',
          },
        ]),
      });
      await new Promise((r) => setTimeout(r, 20));
      chat.end();
      const tool = tracer.startSpan('execute_tool get_weather');
      tool.setAttribute('gen_ai.operation.name', 'execute_tool');
      tool.setStatus({ code: SpanStatusCode.ERROR, message: 'weather service down' });
      await new Promise((r) => setTimeout(r, 10));
      tool.end();
      agent.end();
    });
    await provider.forceFlush();
    await provider.shutdown();
    await settled(s.h);

    await api('POST', '/v1/evaluators', {
      type: 'string_check',
      name: 'mentions-lookup',
      input: '{{sample.output_text}}',
      reference: 'Looking',
      operation: 'like',
    });
    const run = await api('POST', '/v1/evaluation/runs', {
      container: 'agent',
      sample: { type: 'container', container: 'agent' },
      evaluators: ['mentions-lookup'],
    });
    await waitFor(
      async () => (await api('GET', `/v1/evaluation/runs/${run.id}`)).status === 'completed',
      30_000,
    );
  });

  it('lists the trace, filters by errors and model, and opens it as a waterfall', async () => {
    await page.goto(`${projectUrl}/traces`);
    const row = page.getByRole('link', { name: 'invoke_agent weather' });
    await row.waitFor();
    const filters = page.getByRole('form', { name: 'Filters' });
    await filters.getByLabel('Errors').selectOption('false');
    await page.getByText('No traces yet.').waitFor();
    await filters.getByLabel('Errors').selectOption('true');
    await row.waitFor();
    await filters.getByLabel('Model').fill('no-such-model');
    await page.getByText('No traces yet.').waitFor();
    await filters.getByLabel('Model').fill('gpt-4o-mini');
    await row.click();
    await page.waitForURL(new RegExp(`/traces/${traceId}$`));
    const spans = page.getByRole('list', { name: 'Spans' }).locator('li');
    await expect.poll(() => spans.count()).toBe(3);
    await expect(spans.nth(0).textContent()).resolves.toContain('invoke_agent weather');
    await page.getByText('weather service down').waitFor();
    // Children are indented under their parent.
    await expect(spans.nth(0).locator('.span-name').getAttribute('style')).resolves.toContain(
      'padding-left: 0em',
    );
    await expect(spans.nth(1).locator('.span-name').getAttribute('style')).resolves.toContain(
      'padding-left: 1.2em',
    );
  });

  it('opens a model-call span: input, output, tool calls, tokens and its score', async () => {
    await page.getByRole('button', { name: /chat gpt-4o-mini/ }).click();
    const panel = page.getByRole('region', { name: 'Model call' });
    await panel.getByText('Weather in Lyon?').waitFor();
    await panel.getByText('Tokens: 31 in / 9 out', { exact: false }).waitFor();
    await panel.getByText('get_weather', { exact: false }).first().waitFor();
    const scores = panel.locator('table tbody tr');
    await expect.poll(() => scores.count()).toBe(1);
    await expect(scores.first().textContent()).resolves.toContain('mentions-lookup');
    await expect(scores.first().textContent()).resolves.toContain('pass');
    await fitsWidth(page);
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(200);
    await fitsWidth(page);
    await page.setViewportSize(WIDE);
  });
});
