/**
 * The dashboard's Sessions page in a real browser (Chromium through playwright-core) against a real
 * server: an agent's tool loop sent through the gateway with the official OpenAI client (two tools, three
 * calls) is listed as one session and filtered, and opens as a chat transcript with its tool calls
 * folded (arguments and results inside), tokens, cost and latency per turn and the score a run gave a
 * turn; at 1440 px and 390 px. A user outside the project gets 404 from the session routes. SQLite only;
 * skipped when /usr/bin/chromium is missing.
 */
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';
import { agentReply, time, weather } from '../sessions/agent-mock.js';
import {
  apiCaller,
  fitsBothWidths,
  hasChromium,
  launchChromium,
  signInWithProject,
  WIDE,
} from './browser-kit.js';
import { type DashboardSetup, dashboardCall, ensureWebBuilt, signIn, startDashboard } from './helpers.js';

let s: DashboardSetup;
let mock: MockUpstream;
let browser: Browser;
let page: Page;
let projectUrl = '';
let key = '';
const api = apiCaller(
  () => s.h.url,
  () => key,
);
let sessionId = '';

const tools: OpenAI.ChatCompletionTool[] = ['get_weather', 'get_time'].map((name) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: { city: { type: 'string' } } } },
}));

/** An agent's tool loop through the gateway: calls until the model answers with text. */
async function toolLoop(client: OpenAI, question: string): Promise<string> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: question }];
  for (let i = 0; i < 5; i++) {
    const res = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, tools });
    const message = res.choices[0]!.message;
    messages.push(message);
    if (!message.tool_calls?.length) return message.content ?? '';
    for (const call of message.tool_calls) {
      if (call.type !== 'function') continue;
      const { city } = JSON.parse(call.function.arguments) as { city: string };
      const content = call.function.name === 'get_weather' ? weather(city) : time(city);
      messages.push({ role: 'tool', tool_call_id: call.id, content });
    }
  }
  throw new Error('the loop did not end');
}

describe.skipIf(testDbKind() === 'postgres' || !hasChromium)('the Sessions page in a browser', () => {
  beforeAll(async () => {
    ensureWebBuilt();
    mock = await startMockUpstream();
    mock.set({ reply: agentReply });
    s = await startDashboard({
      EVALGATE_LOG_FLUSH_MS: '50',
      EVALGATE_RUN_POLL_MS: '100',
      OPENAI_API_KEY: 'sk-operator-openai',
      OPENAI_BASE_URL: mock.baseUrl,
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: WIDE })).newPage();
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await mock?.close();
  }, 60_000);

  it('signs in; an agent with two tools runs through the gateway and a run scores its calls', async () => {
    projectUrl = await signInWithProject(page, s.h.url, {
      login: 'sam',
      org: 'Agents',
      project: 'trip-planner',
    });
    key = (await s.h.key(['*'], 'trip-planner')).key;
    await api('POST', '/v1/containers', { label: 'agent' });
    const client = new OpenAI({
      baseURL: `${s.h.url}/v1`,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { 'x-evalgate-container': 'agent', 'x-evalgate-session': 'trip-42' },
    });
    expect(await toolLoop(client, 'Weather in Lyon?')).toBe('In Lyon it is sunny and noon.');
    // The writer thread stores the calls after they are answered: waited for (a loaded machine is slow).
    let list: { data: { id: string }[] } = { data: [] };
    await waitFor(async () => {
      list = await api('GET', '/v1/sessions?container=agent&min_turns=3');
      return list.data.length === 1;
    }, 120_000);
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toMatchObject({ key: 'trip-42', turn_count: 3 });
    sessionId = list.data[0]!.id;

    await api('POST', '/v1/evaluators', {
      type: 'string_check',
      name: 'answers-lyon',
      input: '{{sample.output_text}}',
      reference: 'Lyon',
      operation: 'like',
    });
    const run = await api('POST', '/v1/evaluation/runs', {
      container: 'agent',
      sample: { type: 'container', container: 'agent' },
      evaluators: ['answers-lyon'],
    });
    await waitFor(
      async () => (await api('GET', `/v1/evaluation/runs/${run.id}`)).status === 'completed',
      60_000,
    );
  }, 240_000);

  it('lists the session and filters it by container, errors, model and length', async () => {
    await api('POST', '/v1/containers', { label: 'quiet' });
    await page.goto(`${projectUrl}/sessions`);
    const row = page.getByRole('link', { name: 'trip-42' });
    await row.waitFor();
    // Its container, by label.
    await expect(
      page.locator('table tbody tr', { has: row }).locator('td').nth(1).textContent(),
    ).resolves.toBe('agent');
    const filters = page.getByRole('form', { name: 'Filters' });
    await filters.getByLabel('Container').selectOption({ label: 'quiet' });
    await page.getByText('No sessions yet.').waitFor();
    await filters.getByLabel('Container').selectOption({ label: 'agent' });
    await row.waitFor();
    await filters.getByLabel('Errors').selectOption('true');
    await page.getByText('No sessions yet.').waitFor();
    await filters.getByLabel('Errors').selectOption('false');
    await row.waitFor();
    await filters.getByLabel('Model').fill('no-such-model');
    await page.getByText('No sessions yet.').waitFor();
    await filters.getByLabel('Model').fill('openai/gpt-4o-mini');
    await row.waitFor();
    await filters.getByLabel('Min turns').fill('4');
    await page.getByText('No sessions yet.').waitFor();
    await filters.getByLabel('Min turns').fill('3');
    await filters.getByLabel('Active').selectOption('1');
    await row.waitFor();
    await expect(page.locator('table tbody tr').first().textContent()).resolves.toContain('3');
    await fitsBothWidths(page);
  }, 240_000);

  it('opens the session as a transcript: tool calls folded, tokens, cost and scores per turn', async () => {
    await page.getByRole('link', { name: 'trip-42' }).click();
    await page.waitForURL(new RegExp(`/sessions/${sessionId}$`));
    const turns = page.getByRole('list', { name: 'Transcript' }).locator(':scope > li');
    await expect.poll(() => turns.count(), { timeout: 30_000 }).toBe(3);
    await turns.nth(0).getByText('Weather in Lyon?').waitFor();
    await turns.nth(2).getByText('In Lyon it is sunny and noon.').waitFor();
    // Folded: the tool's result is inside a closed <details> until it is opened.
    const weatherCall = turns.nth(0).locator('details.tool-call');
    await expect(weatherCall.locator('summary').textContent()).resolves.toContain('get_weather');
    await expect(weatherCall.getByText('Sunny in Lyon').isVisible()).resolves.toBe(false);
    await weatherCall.locator('summary').click();
    await weatherCall.getByText('Sunny in Lyon').waitFor();
    await expect(weatherCall.textContent()).resolves.toContain('"city": "Lyon"');
    await expect(turns.nth(1).locator('details.tool-call summary').textContent()).resolves.toContain(
      'get_time',
    );
    for (let i = 0; i < 3; i++) {
      await expect(turns.nth(i).locator('.turn-meta').textContent()).resolves.toMatch(
        new RegExp(`Turn ${i + 1} · Tokens: \\d+ in / \\d+ out · \\$`),
      );
    }
    // The run scored each call: the final answer names Lyon (pass), the tool calls do not (fail).
    await expect(turns.nth(2).getByRole('list', { name: 'Scores' }).textContent()).resolves.toContain('pass');
    // Named by the evaluator's name, not its id.
    await turns
      .nth(2)
      .getByRole('list', { name: 'Scores' })
      .getByText(/^answers-lyon: /)
      .waitFor();
    expect(await turns.nth(2).getByRole('list', { name: 'Scores' }).textContent()).not.toMatch(/evl_/);
    await fitsBothWidths(page);
  }, 240_000);

  it('shows a session run’s samples each linked to its session page', async () => {
    await api('POST', '/v1/evaluators', {
      type: 'trajectory_length',
      name: 'three-turns',
      length_of: 'turns',
      min_length: 1,
      max_length: 3,
    });
    const run = await api('POST', '/v1/evaluation/runs', {
      container: 'agent',
      sample: { type: 'sessions', container: 'agent' },
      ground_truth: { type: 'sessions', container: 'agent' },
      evaluators: ['three-turns'],
    });
    await waitFor(
      async () => (await api('GET', `/v1/evaluation/runs/${run.id}`)).status === 'completed',
      60_000,
    );
    await page.goto(`${projectUrl}/runs/${run.id}?tab=samples`);
    const item = page.locator('article.sample').getByRole('link', { name: sessionId });
    await item.waitFor({ timeout: 30_000 });
    await item.click();
    await page.waitForURL(new RegExp(`/sessions/${sessionId}$`));
    await page.getByRole('list', { name: 'Transcript' }).getByText('Weather in Lyon?').waitFor();
  }, 120_000);

  it('answers 404 to a user outside the project', async () => {
    const projectId = /\/projects\/(prj_[^/]+)/.exec(projectUrl)![1]!;
    const outsider = await signIn(s.h, 'b', 'mallory');
    for (const path of [`/projects/${projectId}/sessions`, `/projects/${projectId}/sessions/${sessionId}`]) {
      const res = await dashboardCall(s.h, outsider, 'GET', path);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const page2 = await dashboardCall(s.h, outsider, 'GET', `/projects/${projectId}/sessions/sess_nope`);
    expect(page2.status).toBe(404);
  }, 240_000);

  it('marks the turn where the agent changed, which adds only the new prompt and the transfer', async () => {
    // A triage agent hands off to a refunds agent (another system prompt), which answers.
    mock.set({
      reply: (req) =>
        JSON.stringify(req.body?.messages).includes('You triage.')
          ? { toolCalls: [{ name: 'transfer_to_refunds', arguments: {}, id: 'call_transfer_7' }] }
          : 'Refund issued.',
    });
    await api('POST', '/v1/containers', { label: 'handoff' });
    const client = new OpenAI({
      baseURL: `${s.h.url}/v1`,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { 'x-evalgate-container': 'handoff' },
    });
    const user = { role: 'user' as const, content: 'Refund order 7.' };
    const first = await client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'system', content: 'You triage.' }, user],
    });
    const transfer = first.choices[0]!.message;
    await client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You issue refunds.' },
        user,
        { role: 'assistant', content: null, tool_calls: transfer.tool_calls },
        { role: 'tool', tool_call_id: 'call_transfer_7', content: '{"assistant":"refunds"}' },
      ],
    });
    mock.set({ reply: agentReply });
    let list: { data: { id: string }[] } = { data: [] };
    await waitFor(async () => {
      list = await api('GET', '/v1/sessions?container=handoff&min_turns=2');
      return list.data.length === 1;
    }, 120_000);
    await page.goto(`${projectUrl}/sessions/${list.data[0]!.id}`);
    const turns = page.getByRole('list', { name: 'Transcript' }).locator(':scope > li');
    await expect.poll(() => turns.count(), { timeout: 30_000 }).toBe(2);
    await expect(turns.nth(1).getByRole('note').textContent()).resolves.toBe(
      'Handoff to refunds by transfer_to_refunds',
    );
    await expect(turns.nth(0).getByRole('note').count()).resolves.toBe(0);
    await turns.nth(1).getByText('You issue refunds.').waitFor();
    await turns.nth(1).getByText('Refund issued.').waitFor();
    // The user's question is not repeated after the handoff.
    await expect(turns.nth(1).getByText('Refund order 7.').count()).resolves.toBe(0);
    await fitsBothWidths(page);
  }, 240_000);
});
