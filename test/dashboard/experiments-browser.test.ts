/**
 * An experiment's run page in a real browser (Chromium through playwright-core) against a real server:
 * two prompt versions × two models over a pinned dataset version, its results per prompt version × model,
 * and the Compare tab comparing the versions on each model (and the models on each version) with their
 * intervals; at 1440 px and 390 px. SQLite only; skipped when /usr/bin/chromium is missing.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';
import {
  apiCaller,
  fitsBothWidths,
  hasChromium,
  launchChromium,
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

const between = (text: string, tag: string) => new RegExp(`${tag}<<([\\s\\S]*?)>>`).exec(text)?.[1] ?? '';

/** Careful answers (version 1) score higher than sloppy ones (version 2); the judge's scores vary by item. */
function reply(req: MockRequest) {
  const model: string = req.body.model;
  if (model !== 'judge-model') {
    const system = String(req.body.messages?.[0]?.content ?? '');
    return `${system.includes('carefully') ? 'good' : 'bad'}|${model}|${req.lastUserText}`;
  }
  const out = between(req.lastUserText, 'OUT');
  const n = Number(/q(\d+)/.exec(out)?.[1] ?? 0);
  const score = out.startsWith('good') ? 0.7 + 0.05 * (n % 3) : 0.2 + 0.05 * (n % 2);
  return { json: { score, reasoning: `judged ${out}` } };
}

describe.skipIf(testDbKind() === 'postgres' || !hasChromium)('an experiment on the run page', () => {
  beforeAll(async () => {
    ensureWebBuilt();
    mock = await startMockUpstream({ reply });
    s = await startDashboard({ EVALGATE_RUN_POLL_MS: '100' });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: WIDE })).newPage();
    page.setDefaultTimeout(45_000);
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await mock?.close();
  }, 60_000);

  it('shows each prompt version × model and compares the versions with their intervals', {
    timeout: 240_000,
  }, async () => {
    projectUrl = await signInWithProject(page, s.h.url, { login: 'pat', org: 'Prompts', project: 'qa-bot' });
    key = (await s.h.key(['*'], 'qa-bot')).key;
    for (const [label, upstream] of [
      ['judge', 'judge-model'],
      ['gen-a', 'gen-a'],
      ['gen-b', 'gen-b'],
    ]) {
      await api('POST', '/v1/models', {
        label,
        provider: 'openai-compatible',
        base_url: mock.baseUrl,
        upstream_model: upstream,
      });
    }
    await api('POST', '/v1/containers', { label: 'exp' });
    const items = Array.from({ length: 6 }, (_, i) => ({ input: { question: `q${i + 1}` } }));
    await api('POST', '/v1/datasets', { label: 'qa', items });
    await api('POST', '/v1/evaluators', {
      type: 'judge',
      name: 'quality',
      model: 'judge',
      prompt: 'Rate OUT<<{{output}}>>',
      pass_threshold: 0.5,
    });
    const user = { role: 'user', content: 'Q: {{question}}' };
    await api('POST', '/v1/prompts', {
      name: 'qa',
      messages: [{ role: 'system', content: 'Answer carefully.' }, user],
      model: 'gen-a',
    });
    await api('POST', '/v1/prompts/qa/versions', {
      messages: [{ role: 'system', content: 'Answer sloppily.' }, user],
      labels: ['staging'],
    });
    const run = await api('POST', '/v1/evaluation/runs', {
      container: 'exp',
      name: 'careful vs sloppy',
      evaluators: ['quality'],
      sample: {
        type: 'generate',
        prompts: [
          { name: 'qa', version: 1 },
          { name: 'qa', label: 'staging' },
        ],
        models: ['gen-a', 'gen-b'],
      },
      ground_truth: { type: 'dataset', dataset: 'qa', version: 1 },
    });
    await waitFor(
      async () => (await api('GET', `/v1/evaluation/runs/${run.id}`)).status === 'completed',
      30_000,
    );

    await page.goto(`${projectUrl}/runs/${run.id}`);
    await page.getByText('gen-b · qa@2').first().waitFor();
    const body = (await page.locator('main').textContent()) ?? '';
    for (const launch of ['gen-a · qa@1', 'gen-b · qa@1', 'gen-a · qa@2']) expect(body).toContain(launch);
    expect(body).toContain('qa@2 (staging)');
    await fitsBothWidths(page);

    await page.getByRole('tab', { name: 'Compare' }).click();
    // An experiment opens on its own prompt versions, compared on each model.
    await page.locator('.compare-summary').waitFor();
    await expect(page.locator('.compare-summary').textContent()).resolves.toMatch(
      /2 comparison\(s\): 0 better, 2 worse, 0 inconclusive; 12 matched positions/,
    );
    const rows = await page.locator('.compare table tbody tr').allTextContents();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain('gen-a · qa@2 vs gen-a · qa@1');
    expect(rows[0]).toContain('worse');
    expect(rows[0]).toMatch(/-0\.\d+ … -0\.\d+/);
    await fitsBothWidths(page);

    await page.getByLabel('Baseline run', { exact: true }).selectOption('by:model');
    await page.getByText(/2 comparison\(s\): 0 better, 0 worse, 2 inconclusive/).waitFor();
    const byModel = await page.locator('.compare table tbody tr').allTextContents();
    expect(byModel[0]).toContain('gen-b · qa@1 vs gen-a · qa@1');
  });
});
