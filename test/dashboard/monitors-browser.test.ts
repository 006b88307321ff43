/**
 * The dashboard's Monitors page in a real browser (Chromium through playwright-core) against a real
 * server: a monitor created from the page, calls sent through the gateway with the official SDK, the
 * page's charts and failing samples appearing as they are scored, and the monitor paused from the page;
 * at 1440 px and 390 px. Then a monitor with an alert set in the form: it fires (a real webhook receiver
 * gets it), the page shows it firing with the container's label, and says why a code evaluator scored
 * nothing; the container's task logs newest first, as messages. The monitor page's screenshot
 * (docs/images/monitor-alert-1440.png) is written on request (`npm run screenshots`). SQLite only;
 * skipped when /usr/bin/chromium is missing.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';
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
const api = apiCaller(
  () => s.h.url,
  () => key,
);

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
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: WIDE })).newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await mock?.close();
  });

  it('signs in, and the project has models, a container and a judge', async () => {
    projectUrl = await signInWithProject(page, s.h.url, {
      login: 'mona',
      org: 'Watchers',
      project: 'live-bot',
    });
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
      await fitsWidth(page);
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
    await fitsWidth(page);
  }, 120_000);

  it('fires an alert set in the form, shows it with the container label, and says why code scored nothing', async () => {
    // A webhook receiver: the alert's deliveries.
    const hooks: { type: string }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        hooks.push(JSON.parse(body));
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    // The README's exact-match code evaluator: it needs a ground truth, which a live call has not.
    await api('POST', '/v1/evaluators', {
      type: 'code',
      name: 'exact-code',
      source:
        'def evaluate(sample, ground_truth, baseline):\n' +
        '    return sample["output"].strip() == ground_truth["expected"].strip()\n',
    });
    try {
      await page.setViewportSize(WIDE);
      await page.goto(`${projectUrl}/monitors`);
      await page.getByRole('button', { name: 'New monitor' }).click();
      const form = page.getByRole('form', { name: 'New monitor' });
      await form.getByLabel('Name').fill('alerting');
      await form.getByLabel('Container').selectOption('support');
      await form.getByLabel('helpful').check();
      await form.getByLabel('exact-code').check();
      await form.getByLabel('Alert by webhook when a figure drops').check();
      await form.getByLabel('Alert evaluator').selectOption({ label: 'helpful' });
      await form.getByLabel('Metric').selectOption('pass_rate');
      await form.getByLabel('Below').fill('0.9');
      await form.getByLabel('Minimum samples').fill('5');
      await form.getByLabel('Webhook URL').fill(hookUrl);
      await form.getByRole('button', { name: 'Create monitor' }).click();
      // The signing secret is shown once, then the monitor opens.
      const secret = page.getByTestId('alert-secret');
      await secret.waitFor();
      await expect(secret.locator('code').textContent()).resolves.toMatch(/^[0-9a-f]{64}$/);
      await secret.getByRole('link', { name: 'Open the monitor' }).click();
      await page.waitForURL(/\/monitors\/mon_[^/]+$/);
      const monitorId = page.url().split('/').at(-1) ?? '';
      const created = await api('GET', `/v1/monitors/${monitorId}`);
      expect(created.alert).toMatchObject({
        metric: 'pass_rate',
        below: 0.9,
        min_samples: 5,
        webhook_url: hookUrl,
      });
      expect(created.alert_state).toBeNull();
      await expect(page.getByTestId('alert-state').textContent()).resolves.toBe('alert pending');
      // Before any call: nothing selected yet, said for each evaluator.
      await page.getByTestId('evaluator-why').filter({ hasText: 'No call selected yet' }).first().waitFor();

      const client = new OpenAI({
        apiKey: key,
        baseURL: `${s.h.url}/v1`,
        defaultHeaders: { 'X-Evalgate-Container': 'support' },
        maxRetries: 0,
      });
      for (let i = 0; i < 12; i++) {
        await client.chat.completions.create({
          model: 'gen',
          messages: [{ role: 'user', content: `alert ${i}` }],
        });
      }
      await waitFor(
        async () => (await api('GET', `/v1/monitors/${monitorId}`)).alert_state === 'firing',
        30_000,
        'the alert firing',
      );
      await waitFor(async () => hooks.some((h) => h.type === 'monitor.alert.firing'), 10_000, 'the webhook');
      // The code evaluator's positions are missing (it raised on ground_truth=None), not scored.
      const codeSamples = await api(
        'GET',
        `/v1/monitors/${monitorId}/samples?evaluator=exact-code&limit=100`,
      );
      expect(codeSamples.total).toBeGreaterThan(0);
      expect(new Set(codeSamples.data.map((x: { status: string }) => x.status))).toEqual(
        new Set(['missing']),
      );

      // The page: the alert firing, the rule, the container by its label, and why exact-code scored nothing.
      await page.getByTestId('alert-state').filter({ hasText: 'alert firing' }).waitFor({ timeout: 20_000 });
      await expect(page.getByTestId('monitor-container').textContent()).resolves.toBe('support');
      await expect(page.getByTestId('monitor-alert').textContent()).resolves.toBe(
        'pass rate of helpful below 0.9 over 1 h (≥ 5 samples)',
      );
      const why = page.getByTestId('evaluator-why').filter({ hasText: 'exact-code' });
      await why.filter({ hasText: 'ground_truth=None' }).waitFor({ timeout: 20_000 });
      await expect(why.textContent()).resolves.toMatch(
        /exact-code: nothing scored\. \d+ selected calls? gave/,
      );
      await expect(page.getByTestId('evaluator-why').filter({ hasText: 'helpful' }).count()).resolves.toBe(0);
      if (process.env.EVALGATE_SCREENSHOTS === '1') {
        await page.screenshot({ path: path.resolve('docs/images/monitor-alert-1440.png'), fullPage: true });
      }
      await page.setViewportSize(PHONE);
      await page.waitForTimeout(200);
      await fitsWidth(page);
      await page.setViewportSize(WIDE);

      // The list: the alert's state and the container's label beside the monitor.
      await page.goto(`${projectUrl}/monitors`);
      const row = page.getByRole('row', { name: /alerting/ });
      await row.waitFor();
      await expect(row.textContent()).resolves.toMatch(/alert firing.*support/);

      // The container's task logs: newest first, each input as its messages (no raw JSON).
      await page.goto(`${projectUrl}/containers/support`);
      const first = page.locator('table.task-logs tbody tr').first();
      await first.waitFor();
      const total = (await api('GET', '/v1/containers/support/logs?limit=1')).total;
      await expect(first.getAttribute('data-seq')).resolves.toBe(String(total));
      const seqs = (await page
        .locator('table.task-logs tbody tr')
        .evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-seq'))))) as number[];
      expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
      await expect(first.locator('.message .role').first().textContent()).resolves.toBe('user');
      await expect(first.locator('.message .message-text').first().textContent()).resolves.toBe('alert 11');
      await expect(first.textContent()).resolves.not.toContain('"role"');
    } finally {
      receiver.close();
    }
  }, 120_000);
});
