/**
 * The dashboard's Playground in a real browser (Chromium through playwright-core) against a real server
 * and the mock upstream: a call recorded from a stored prompt is opened from its container's page, its
 * prompt edited, run against two models side by side (streamed) with a judge's scores on each answer,
 * saved as the prompt's next version, and an answer added to a dataset; at 1440 px and at 390 px (the
 * columns stacked); a prompt version opened from the page's picker. The API then shows the version,
 * the dataset item, the playground's task logs and the project's spend. SQLite only; skipped when /usr/bin/chromium is missing.
 */

import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
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
let mock: MockUpstream;
let browser: Browser;
let page: Page;
let projectUrl = '';
let key = '';
const IMAGES = path.resolve('docs/images');
/** docs/images/playground-WIDTH.png, when screenshots were asked for (EVALGATE_SCREENSHOTS=1). */
async function shot(p: Page, width: number) {
  if (process.env.EVALGATE_SCREENSHOTS === '1') {
    await p.screenshot({ path: path.join(IMAGES, `playground-${width}.png`), fullPage: true });
  }
}
const api = apiCaller(
  () => s.h.url,
  () => key,
);

/** The two answer columns' boxes, in order. */
async function columns(p: Page) {
  const boxes = [];
  for (const name of ['openai/gpt-4o-mini', 'openai/gpt-4o']) {
    const box = await p.getByRole('region', { name: `Answer of ${name}`, exact: true }).boundingBox();
    if (!box) throw new Error(`no column for ${name}`);
    boxes.push(box);
  }
  return boxes as [NonNullable<(typeof boxes)[0]>, NonNullable<(typeof boxes)[0]>];
}

/** Runs the edited request and waits for both answers and their judge scores. */
async function runBoth(p: Page) {
  await p.getByRole('button', { name: 'Run', exact: true }).click();
  for (const model of ['gpt-4o-mini', 'gpt-4o']) {
    const column = p.getByRole('region', { name: `Answer of openai/${model}`, exact: true });
    await column.getByText(`Hello from ${model}:`).waitFor();
    await column.getByRole('list', { name: 'Evaluator scores' }).getByText('clear enough').waitFor();
    await column.getByText(/tokens · \d+ ms · \$/).waitFor();
  }
}

describe.skipIf(testDbKind() === 'postgres' || !hasChromium)('the Playground in a browser', () => {
  beforeAll(async () => {
    ensureWebBuilt();
    mock = await startMockUpstream({
      reply: (req) =>
        req.lastUserText.startsWith('Rate the answer')
          ? { json: { score: 0.75, reasoning: 'clear enough' } }
          : {
              text: `Hello from ${req.body.model}: ${req.lastUserText}`,
              promptTokens: 20,
              completionTokens: 10,
            },
    });
    s = await startDashboard({
      OPENAI_API_KEY: 'sk-operator',
      OPENAI_BASE_URL: mock.baseUrl,
      EVALGATE_LOG_FLUSH_MS: '20',
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: WIDE })).newPage();
    page.setDefaultTimeout(10_000);
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await mock?.close();
  });

  it('signs in; the project has a prompt, a judge, a dataset and a call recorded from the prompt', async () => {
    projectUrl = await signInWithProject(page, s.h.url, {
      login: 'pat',
      org: 'Players',
      project: 'support-bot',
    });
    key = (await s.h.key(['*'], 'support-bot')).key;
    await api('POST', '/v1/evaluators', {
      type: 'judge',
      name: 'helpful',
      model: 'openai/gpt-4o-mini',
      prompt: 'Rate the answer for helpfulness: {{output}}',
    });
    await api('POST', '/v1/prompts', {
      name: 'support',
      messages: [
        { role: 'system', content: 'You answer for Acme.' },
        { role: 'user', content: 'Where is order {{order}}?' },
      ],
      model: 'openai/gpt-4o-mini',
    });
    await api('POST', '/v1/datasets', { label: 'cases', items: [{ input: 'seed' }] });
    await api('PUT', '/v1/projects/current/budget', { limit_usd: 50, period: 'month' });
    await api('POST', '/v1/chat/completions', { prompt: { name: 'support', variables: { order: '42' } } });
    await s.h.app.services.logWriter.flush();
    const recorded = await api('GET', '/v1/containers/default/logs');
    expect(recorded.data).toHaveLength(1);
    expect(recorded.data[0].prompt_version).toBe(1);
  });

  it('opens the recorded call from its container, edits the prompt, runs two models side by side', async () => {
    await page.goto(`${projectUrl}/containers/default`);
    await page.getByRole('link', { name: 'Open in playground' }).first().click();
    await page.waitForURL(/\/playground\?task_log=log_/);
    await page.getByText(/Opened from task log/).waitFor();
    await page.getByText('(prompt support v1)').waitFor();
    const system = page.getByLabel('Message 1', { exact: true });
    await expect.poll(() => system.inputValue()).toBe('You answer for Acme.');
    await system.fill('You answer for Acme, kindly and briefly.');
    await expect.poll(() => page.getByLabel('Model 1').inputValue()).toBe('openai/gpt-4o-mini');
    await page.getByRole('button', { name: 'Add model' }).click();
    await page.getByLabel('Model 2').fill('openai/gpt-4o');
    await page.getByLabel('helpful').check();
    await runBoth(page);
    // Side by side at 1440 px: one row, two columns.
    const [a, b] = await columns(page);
    expect(Math.abs(a.y - b.y)).toBeLessThan(2);
    expect(b.x).toBeGreaterThan(a.x + a.width - 1);
    await fitsWidth(page);
    await shot(page, WIDE.width);
    const sent = mock.requests.filter((r) => !r.lastUserText.startsWith('Rate')).at(-1)!.body;
    expect(sent.messages[0].content).toBe('You answer for Acme, kindly and briefly.');
  });

  it('saves the edit as the prompt’s next version and adds an answer to a dataset', async () => {
    const save = page.getByRole('form', { name: 'Save as new version' });
    await expect.poll(() => save.getByLabel('Prompt name').inputValue()).toBe('support');
    await save.getByLabel('Commit message').fill('kinder, from the playground');
    await save.getByRole('button', { name: 'Save as new version' }).click();
    await save.getByText('Saved as support version 2.').waitFor();

    const column = page.getByRole('region', { name: 'Answer of openai/gpt-4o', exact: true });
    await column.getByRole('button', { name: 'Add to dataset' }).click();
    await page
      .getByRole('dialog')
      .getByLabel('Dataset')
      .selectOption({ label: 'cases (version 1, 1 items)' });
    await page
      .getByRole('dialog')
      .getByLabel(/Expected answer/)
      .fill('Order 42 ships tomorrow.');
    await page.getByRole('button', { name: 'Add as a new version' }).click();
    await page.getByText(/^Added: .+ is now version 2 \(2 items\)\.$/).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
  });

  it('at 390 px the columns stack and nothing is wider than the screen', async () => {
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(100);
    await runBoth(page);
    const [a, b] = await columns(page);
    expect(b.y).toBeGreaterThanOrEqual(a.y + a.height - 1);
    expect(Math.abs(a.x - b.x)).toBeLessThan(2);
    await fitsWidth(page);
    await shot(page, PHONE.width);
    await page.setViewportSize(WIDE);
  });

  it('the Playground is in the nav; the API shows the version, the dataset item, the task logs and the spend', async () => {
    await page.goto(`${projectUrl}/runs`);
    await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Playground' }).click();
    await page.getByRole('heading', { name: 'Playground' }).waitFor();
    // A prompt version opens as its template, each variable to fill.
    await page.getByLabel('Open a prompt', { exact: true }).selectOption('support');
    await page.waitForURL(/\/playground\?prompt=support$/);
    await page.getByLabel('Prompt version').selectOption('1');
    await page.waitForURL(/\/playground\?prompt=support&version=1$/);
    await expect
      .poll(() => page.getByLabel('Message 1', { exact: true }).inputValue())
      .toBe('You answer for Acme.');
    await page.getByLabel(/^order/).waitFor();

    const v2 = await api('GET', '/v1/prompts/support?version=2');
    expect(v2.version.messages[0].content).toBe('You answer for Acme, kindly and briefly.');
    expect(v2.version.commit_message).toBe('kinder, from the playground');
    expect(v2.version.author).toMatch(/^user:/);

    const logs = (await api('GET', '/v1/containers/playground/logs?limit=100')).data as any[];
    expect(logs).toHaveLength(4);
    expect(new Set(logs.map((l) => l.model))).toEqual(new Set(['openai/gpt-4o-mini', 'openai/gpt-4o']));
    for (const l of logs) {
      expect(l.metadata.route).toBe('playground');
      expect(l.cost).toBeGreaterThan(0);
      expect(l.prompt_id).toBe(v2.id);
    }
    const items = (await api('GET', '/v1/datasets/cases/items?limit=100')).data as any[];
    const added = items.find((i) => i.data.expected === 'Order 42 ships tomorrow.');
    expect(added).toBeTruthy();
    expect(added.origin).toMatchObject({ kind: 'task_log' });
    expect(logs.map((l) => l.id)).toContain(added.origin.id);
    const budget = await api('GET', '/v1/projects/current/budget');
    const spent = logs.reduce((n, l) => n + l.cost, 0);
    expect(budget.spend.used_usd).toBeGreaterThanOrEqual(spent - 1e-9);
  });
});
