/**
 * The dashboard's Monitors page in a real browser (Chromium through playwright-core) against a real
 * server: a monitor created from the page, calls sent through the gateway with the official SDK, the
 * page's charts and failing samples appearing as they are scored, and the monitor paused from the page;
 * at 1440 px and 390 px. SQLite only; skipped when /usr/bin/chromium is missing.
 */
import fs from 'node:fs';
import OpenAI from 'openai';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';
import { type DashboardSetup, ensureWebBuilt, startDashboard } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = fs.existsSync(CHROMIUM);
const WIDE = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };

let s: DashboardSetup;
let mock: MockUpstream;
let browser: Browser;
let page: Page;
let projectUrl = '';
let key = '';

async function fitsWidth(): Promise<void> {
  const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
  const wide = await page.evaluate<string[]>(
    `[...document.querySelectorAll('body *')]
      .filter((e) => !e.closest('table') && e.getBoundingClientRect().right > window.innerWidth + 0.5)
      .slice(0, 5).map((e) => e.tagName + '.' + e.className)`,
  );
  expect(overflow, `wider than the screen: ${wide.join(', ')}`).toBeLessThanOrEqual(0);
}

async function api(method: string, url: string, body?: unknown) {
  const res = await fetch(`${s.h.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json: any = await res.json();
  expect(res.status, JSON.stringify(json)).toBeLessThan(300);
  return json;
}

describe.skipIf(testDbKind() === 'postgres' || !hasChromium)('the Monitors page in a browser', () => {
  beforeAll(async () => {
    ensureWebBuilt();
    // The judge passes odd-numbered answers and fails even ones, with its reasoning.
    mock = await startMockUpstream({
      record: false,
      reply: (req) => {
        if (req.body.model === 'j') {
          const n = Number(/ans (\d+)/.exec(req.lastUserText)?.[1] ?? 0);
          return {
            json: { score: n % 2 === 1 ? 1 : 0.2, reasoning: `answer ${n} is ${n % 2 ? 'odd' : 'even'}` },
          };
        }
        return `ans ${req.lastUserText.replace(/\D/g, '')}`;
      },
    });
    s = await startDashboard({ EVALGATE_LOG_FLUSH_MS: '50', EVALGATE_RUN_POLL_MS: '100' });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
    page = await (await browser.newContext({ viewport: WIDE })).newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await mock?.close();
  });

  it('signs in, and the project has models, a container and a judge', async () => {
    await page.goto(`${s.h.url}/`);
    await page.waitForURL(`${s.h.url}/signin`);
    await page.getByRole('link', { name: 'Sign in with Provider A' }).click();
    await page.getByLabel('Login').fill('mona');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();
    await page.getByLabel('Name').fill('Watchers');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.getByRole('heading', { name: /^Watchers/ }).waitFor();
    await page.getByLabel('Project name').fill('live-bot');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.waitForURL(/\/projects\/prj_[^/]+\/settings$/);
    projectUrl = page.url().replace(/\/settings$/, '');
    // A key of the same project (project names are unique on the server).
    key = (await s.h.key(['*'], 'live-bot')).key;
    for (const [label, upstream] of [
      ['gen', 'g'],
      ['judge', 'j'],
    ]) {
      await api('POST', '/v1/models', {
        label,
        provider: 'openai-compatible',
        base_url: mock.baseUrl,
        upstream_model: upstream,
      });
    }
    await api('POST', '/v1/containers', { label: 'support' });
    await api('POST', '/v1/evaluators', {
      type: 'judge',
      name: 'helpful',
      model: 'judge',
      prompt: 'Rate {{output}}',
      pass_threshold: 0.5,
    });
  });

  it('creates a monitor from the page, shows its charts and failing samples as calls come, and pauses it', async () => {
    await page.goto(`${projectUrl}/monitors`);
    await page.getByText('No monitors yet.').waitFor();
    await page.getByRole('button', { name: 'New monitor' }).click();
    const form = page.getByRole('form', { name: 'New monitor' });
    await form.getByLabel('Name').fill('helpful-live');
    await form.getByLabel('Container').selectOption('support');
    await form.getByLabel('Sampling rate').fill('0.5');
    await form.getByLabel('helpful').check();
    await form.getByLabel('chat').check();
    // A bad filter is refused in the form, naming the problem.
    await form.getByLabel('Metadata (key=value, one a line)').fill('no equals sign');
    await form.getByRole('button', { name: 'Create monitor' }).click();
    await form.getByRole('alert').filter({ hasText: 'not key=value' }).waitFor();
    await form.getByLabel('Metadata (key=value, one a line)').fill('');
    await form.getByRole('button', { name: 'Create monitor' }).click();
    await page.waitForURL(/\/monitors\/mon_[^/]+$/);
    const monitorId = page.url().split('/').at(-1) ?? '';
    await page.getByRole('heading', { name: /helpful-live/ }).waitFor();
    await page.getByText('Nothing scored yet.').waitFor();
    const created = await api('GET', `/v1/monitors/${monitorId}`);
    expect(created).toMatchObject({ sampling_rate: 0.5, filter: { routes: ['chat'] }, enabled: true });

    // Traffic through the gateway, with the official SDK.
    const client = new OpenAI({
      apiKey: key,
      baseURL: `${s.h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'support' },
      maxRetries: 0,
    });
    const ids: string[] = [];
    for (let i = 0; i < 60; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, j) => {
          const { response } = await client.chat.completions
            .create({ model: 'gen', messages: [{ role: 'user', content: `question ${i + j}` }] })
            .withResponse();
          ids.push(response.headers.get('x-evalgate-log-id') ?? '');
        }),
      );
    }
    await waitFor(
      async () => {
        const m = await api('GET', `/v1/monitors/${monitorId}`);
        return m.selected > 0 && m.lag_seconds === 0;
      },
      30_000,
      'the selected calls scored',
    );
    const m = await api('GET', `/v1/monitors/${monitorId}`);
    const failed = await api('GET', `/v1/monitors/${monitorId}/samples?failed=true&limit=100`);
    expect(failed.total).toBeGreaterThan(0);

    // The page catches up by itself: the charts, the totals and the failing samples.
    await page.getByTestId('monitor-charts').locator('canvas').first().waitFor({ timeout: 20_000 });
    await expect(page.getByTestId('monitor-charts').locator('canvas').count()).resolves.toBe(2);
    await page
      .getByTestId('monitor-selected')
      .filter({ hasText: String(m.selected) })
      .waitFor();
    const table = page.getByTestId('failing-samples');
    await table.waitFor({ timeout: 20_000 });
    const shownIds = await table.locator('tbody tr td:first-child code').allTextContents();
    expect(shownIds.length).toBe(Math.min(10, failed.total));
    for (const id of shownIds) expect(ids).toContain(id);
    const text = (await table.textContent()) ?? '';
    expect(text).toMatch(/answer \d*[02468] is even/);
    expect(text).toContain('question');
    expect(text).not.toMatch(/is odd/);

    for (const size of [PHONE, WIDE]) {
      await page.setViewportSize(size);
      await page.waitForTimeout(200);
      await fitsWidth();
    }

    // Pause from the page: stored, shown, and the next calls are not selected.
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByTestId('monitor-state').filter({ hasText: 'paused' }).waitFor();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    expect((await api('GET', `/v1/monitors/${monitorId}`)).enabled).toBe(false);
    for (let i = 0; i < 10; i++) {
      await client.chat.completions.create({
        model: 'gen',
        messages: [{ role: 'user', content: `late ${i}` }],
      });
    }
    await waitFor(
      async () => (await api('GET', '/v1/containers/support/logs?limit=1')).total === 70,
      20_000,
      'the late calls recorded',
    );
    await new Promise((r) => setTimeout(r, 500));
    expect((await api('GET', `/v1/monitors/${monitorId}`)).selected).toBe(m.selected);

    // The list shows it paused, at both widths.
    await page.goto(`${projectUrl}/monitors`);
    const row = page.getByRole('row', { name: /helpful-live/ });
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain('paused');
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(200);
    await fitsWidth();
  }, 120_000);
});
