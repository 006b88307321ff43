/**
 * Grader evaluators in the dashboard, in a real browser (Chromium through playwright-core) against a
 * real server: listed by their type (not as judges), opened in an editor of their own (templates,
 * metric or operation, model and messages, range, labels), edited and saved, and created from the page;
 * a JSON mistake is said in the form. The grader editor's screenshot (docs/images/grader-editor-1440.png)
 * is written on request (`npm run screenshots`). SQLite only; skipped when /usr/bin/chromium is missing.
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

const IMAGES = path.resolve('docs/images');

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

const rowOf = (name: string) =>
  page.locator('tbody tr').filter({ has: page.getByRole('link', { name, exact: true }) });

describe.skipIf(testDbKind() === 'postgres' || !hasChromium)('grader evaluators in the dashboard', () => {
  beforeAll(async () => {
    ensureWebBuilt();
    mock = await startMockUpstream({ record: false, reply: () => ({ json: { score: 1, reasoning: 'ok' } }) });
    s = await startDashboard();
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: WIDE })).newPage();
    projectUrl = await signInWithProject(page, s.h.url, {
      login: 'gail',
      org: 'Graders',
      project: 'grading',
    });
    key = (await s.h.key(['*'], 'grading')).key;
    await api('POST', '/v1/models', {
      label: 'grader-model',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'g',
    });
    await api('POST', '/v1/evaluators', {
      type: 'text_similarity',
      name: 'similar',
      input: '{{sample.output_text}}',
      reference: '{{item.expected}}',
      evaluation_metric: 'fuzzy_match',
      pass_threshold: 0.8,
    });
    await api('POST', '/v1/evaluators', {
      type: 'string_check',
      name: 'exact',
      input: '{{sample.output_text}}',
      reference: '{{item.expected}}',
      operation: 'eq',
    });
    await api('POST', '/v1/evaluators', {
      type: 'judge',
      name: 'helpful',
      model: 'grader-model',
      prompt: 'Rate {{output}}',
    });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await mock?.close();
  });

  it('lists graders by their type, not as judges', async () => {
    await page.goto(`${projectUrl}/evaluators`);
    await rowOf('similar').waitFor();
    await expect(rowOf('similar').getByTestId('evaluator-type').textContent()).resolves.toBe(
      'text_similarity, fuzzy_match',
    );
    await expect(rowOf('exact').getByTestId('evaluator-type').textContent()).resolves.toBe(
      'string_check, eq',
    );
    await expect(rowOf('helpful').getByTestId('evaluator-type').textContent()).resolves.toBe(
      'judge, pointwise',
    );
  });

  it('edits a text_similarity grader in its own editor and saves it', async () => {
    await page.getByRole('link', { name: 'similar', exact: true }).click();
    await page.getByRole('heading', { name: 'Edit similar' }).waitFor();
    // The grader's own fields, filled from the stored grader; no judge model or prompt.
    await page.getByLabel('Metric').waitFor();
    await expect(page.getByLabel('Type').inputValue()).resolves.toBe('text_similarity');
    await expect(page.getByLabel('Metric').inputValue()).resolves.toBe('fuzzy_match');
    await expect(page.getByLabel('Input template').inputValue()).resolves.toBe('{{sample.output_text}}');
    await expect(page.getByLabel('Reference template').inputValue()).resolves.toBe('{{item.expected}}');
    await expect(page.getByLabel('Pass threshold').inputValue()).resolves.toBe('0.8');
    await expect(page.getByLabel('Judge model').count()).resolves.toBe(0);
    await expect(page.getByLabel('Prompt').count()).resolves.toBe(0);

    await page.getByLabel('Metric').selectOption('rouge_l');
    await page.getByLabel('Pass threshold').fill('0.6');
    await page.getByLabel('Reference template').fill('{{item.answer}}');
    await page.getByLabel('Description').fill('Overlap with the reference answer');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const stored = await api('GET', '/v1/evaluators/similar');
    expect(stored).toMatchObject({
      object: 'evaluator.text_similarity',
      evaluation_metric: 'rouge_l',
      pass_threshold: 0.6,
      reference: '{{item.answer}}',
      input: '{{sample.output_text}}',
      description: 'Overlap with the reference answer',
    });
    if (process.env.EVALGATE_SCREENSHOTS === '1') {
      await page.screenshot({ path: path.join(IMAGES, 'grader-editor-1440.png'), fullPage: true });
    }
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(100);
    await fitsWidth(page);
    await page.setViewportSize(WIDE);

    // A refusal by the server is shown, naming the problem (a template that is not item/sample).
    await page.getByLabel('Input template').fill('{{output}}');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').waitFor();
    expect((await api('GET', '/v1/evaluators/similar')).input).toBe('{{sample.output_text}}');
  });

  it('edits a string_check (its operation, no pass threshold)', async () => {
    await page.goto(`${projectUrl}/evaluators`);
    await page.getByRole('link', { name: 'exact', exact: true }).click();
    await page.getByRole('heading', { name: 'Edit exact' }).waitFor();
    await page.getByLabel('Operation').waitFor();
    await expect(page.getByLabel('Operation').inputValue()).resolves.toBe('eq');
    await expect(page.getByLabel('Pass threshold').count()).resolves.toBe(0);
    await page.getByLabel('Operation').selectOption('ilike');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    expect(await api('GET', '/v1/evaluators/exact')).toMatchObject({
      object: 'evaluator.string_check',
      operation: 'ilike',
      pass_threshold: null,
    });
  });

  it('creates a score_model grader from the page, refusing messages that are not JSON', async () => {
    await page.goto(`${projectUrl}/evaluators/new`);
    await page.getByLabel('Type').selectOption('score_model');
    await page.getByLabel('Name').fill('rated');
    await page.getByLabel('Grader model').selectOption('grader-model');
    await page.getByLabel('Range max').fill('10');
    await page.getByLabel('Pass threshold').fill('7');
    await page.getByLabel('Messages (JSON)').fill('[{"role": "user", "content": "Rate');
    await page.getByRole('button', { name: 'Create evaluator' }).click();
    await page.getByRole('alert').filter({ hasText: 'Messages must be valid JSON' }).waitFor();
    await page
      .getByLabel('Messages (JSON)')
      .fill('[{"role": "user", "content": "Rate from 0 to 10: {{sample.output_text}}"}]');
    await page.getByRole('button', { name: 'Create evaluator' }).click();
    await page.getByRole('heading', { name: 'Edit rated' }).waitFor();
    await page.getByLabel('Range max').waitFor();
    const stored = await api('GET', '/v1/evaluators/rated');
    expect(stored).toMatchObject({
      object: 'evaluator.score_model',
      model: 'grader-model',
      range: [0, 10],
      pass_threshold: 7,
      input: [{ role: 'user', content: 'Rate from 0 to 10: {{sample.output_text}}' }],
    });
    await expect(page.getByLabel('Range max').inputValue()).resolves.toBe('10');
    await page.goto(`${projectUrl}/evaluators`);
    await expect(rowOf('rated').getByTestId('evaluator-type').textContent()).resolves.toBe('score_model');
    await expect(rowOf('rated').textContent()).resolves.toContain('grader-model');
  });
});
