// Database-independent: a browser walk-through of the Review page; the review store runs on both databases in test/review (the other browser tests are SQLite-only too).
/**
 * The dashboard's Review page and Agreement view in a real browser (Chromium through playwright-core)
 * against a real server: a judge run over 200 samples (a mock judge on loopback), a rule sending the
 * failures and a seeded 10 % share to a queue, two project members signed in through the loopback OpenID
 * provider in two browser contexts scoring with the keyboard; no item reviewed twice, a skipped item never
 * offered again to who skipped it, an abandoned claim expiring and returning to the other reviewer, the
 * Agreement view showing the API's figures, both widths; a user outside the project gets not-found.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { waitFor } from '../helpers/wait.js';
import {
  apiCaller,
  fitsBothWidths,
  hasChromium,
  launchChromium,
  signInAt,
  signInWithProject,
  WIDE,
} from './browser-kit.js';
import { type DashboardSetup, ensureWebBuilt, startDashboard } from './helpers.js';

const N = 200;
/** The mock judge's grade of output `a<i>`: 1 (a failure) at every 10th, else 2..5 in turn. */
const judgeScore = (i: number) => (i % 10 === 0 ? 1 : (i % 4) + 2);
/** The people's grade: the judge's, one higher at every third position (5 stays 5). */
const humanScore = (i: number) => (i % 3 === 0 ? Math.min(5, judgeScore(i) + 1) : judgeScore(i));
const LONG = 60_000;

let s: DashboardSetup;
let mock: MockUpstream;
let browser: Browser;
let key = '';
let projectUrl = '';
let projectId = '';
let queueId = '';
const api = apiCaller(
  () => s.h.url,
  () => key,
);

interface Reviewer {
  ctx: BrowserContext;
  page: Page;
  userId: string;
  seen: string[];
}
let alice: Reviewer;
let bob: Reviewer;

/** A dashboard call from inside the page (its session cookie, its CSRF token): status and body. */
async function dash(
  page: Page,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  return page.evaluate(
    async ([m, p, b]) => {
      const me = (await (await fetch('/dashboard/api/me')).json()) as { csrf_token: string };
      const res = await fetch(`/dashboard/api${p}`, {
        method: m,
        headers: {
          'x-csrf-token': me.csrf_token,
          ...(b === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: b === undefined ? undefined : JSON.stringify(b),
      });
      return { status: res.status, body: await res.json().catch(() => null) };
    },
    [method, path, body] as const,
  );
}

const itemId = (page: Page) => page.getByTestId('item-id').textContent({ timeout: LONG });
/** The position of the sample the shown item is (its input is `q<i>`). */
async function positionShown(page: Page): Promise<number> {
  const text = await page.getByRole('definition').first().textContent({ timeout: LONG });
  const m = /q(\d+)/.exec(text ?? '');
  expect(m, `input of the item: ${text}`).not.toBeNull();
  return Number(m?.[1]);
}

/** Scores the shown item with the number key of the person's grade; answers the item's id. */
async function scoreShown(r: Reviewer): Promise<string> {
  const id = (await itemId(r.page)) ?? '';
  expect(r.seen, `${id} offered twice to the same person`).not.toContain(id);
  r.seen.push(id);
  const judge = r.page.getByRole('region', { name: 'Judge' });
  await judge.getByText('Hidden until you have scored this item.').waitFor({ timeout: LONG });
  const i = await positionShown(r.page);
  await r.page.keyboard.press(String(humanScore(i)));
  await r.page.getByTestId('item-state').getByText('Reviewed').waitFor({ timeout: LONG });
  await judge.getByText(`graded a${i}`).waitFor({ timeout: LONG });
  // The reviewer's own answer stays marked after scoring: one button pressed, not greyed out like the rest.
  const chosen = r.page.getByRole('region', { name: 'Rubric' }).locator('button[aria-pressed="true"]');
  expect(await chosen.count()).toBe(1);
  expect(await chosen.textContent()).toContain(String(humanScore(i)));
  type Styles = { getComputedStyle(e: unknown): { opacity: string } };
  // Runs in the page: only the function's own text travels there.
  const opacity = await chosen.evaluate((b) => (globalThis as unknown as Styles).getComputedStyle(b).opacity);
  expect(opacity).toBe('1');
  // Focus stays on the item (the pressed button is disabled once scored, which would drop it to the page).
  await waitFor(
    async () => (await r.page.evaluate(`document.activeElement?.dataset?.testid ?? null`)) === 'current-item',
    LONG,
  );
  return id;
}

const FINISHED = 'Nothing left for you to review in this queue.';
/**
 * What the page shows, read in one step: the shown item's id (null when none) and whether it says nothing
 * is left. (Two locator reads could straddle a render: the item gone after "finished" was read as false.)
 */
function pageState(page: Page): Promise<{ id: string | null; finished: boolean }> {
  return page.evaluate(`({
    id: document.querySelector('[data-testid="item-id"]')?.textContent ?? null,
    finished: [...document.querySelectorAll('[role="status"]')].some((e) => e.textContent === ${JSON.stringify(FINISHED)}),
  })`);
}

/** Waits until the page shows an item other than `before`, or says nothing is left. */
async function movedFrom(page: Page, before: string): Promise<string | null> {
  let state = await pageState(page);
  await waitFor(async () => {
    state = await pageState(page);
    return state.finished || (state.id !== null && state.id !== before);
  }, LONG);
  return state.finished ? null : state.id;
}

/** j: the next item (a new claim); answers its id, or null when nothing is left. */
async function next(r: Reviewer, before: string): Promise<string | null> {
  await r.page.keyboard.press('j');
  return movedFrom(r.page, before);
}

async function member(login: string, provider: 'Provider A' | 'Provider B'): Promise<Reviewer> {
  const ctx = await browser.newContext({ viewport: WIDE });
  const page = await ctx.newPage();
  await page.goto(`${s.h.url}/signin`);
  await signInAt(page, provider, login);
  const me = await dash(page, 'GET', '/me');
  return { ctx, page, userId: me.body.user.id, seen: [] };
}

describe.skipIf(!hasChromium)('the Review page in a browser', () => {
  beforeAll(async () => {
    ensureWebBuilt();
    mock = await startMockUpstream({
      reply: (req) => {
        const messages = (req.body?.messages ?? []) as { content: string }[];
        const i = Number(/\ba(\d+)\b/.exec(String(messages.at(-1)?.content ?? ''))?.[1] ?? -1);
        return { json: { score: judgeScore(i), reasoning: `graded a${i}` } };
      },
    });
    s = await startDashboard({ EVALGATE_RUN_POLL_MS: '100' });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await mock?.close();
  });

  it('runs a judge over 200 samples and queues its failures and a 10 % share; a second member joins', async () => {
    const ctx = await browser.newContext({ viewport: WIDE });
    const page = await ctx.newPage();
    projectUrl = await signInWithProject(page, s.h.url, {
      login: 'alice',
      org: 'Reviewers',
      project: 'rev-app',
    });
    projectId = projectUrl.split('/').at(-1) ?? '';
    alice = { ctx, page, userId: (await dash(page, 'GET', '/me')).body.user.id, seen: [] };
    const org = (await dash(page, 'GET', `/projects/${projectId}`)).body.organization_id;
    const invite = await dash(page, 'POST', `/orgs/${org}/invitations`, {
      email: 'bob@example.com',
      role: 'member',
    });
    expect(invite.status, JSON.stringify(invite.body)).toBe(201);
    bob = await member('bob', 'Provider A');
    expect((await dash(bob.page, 'POST', `/invitations/${invite.body.id}/accept`)).status).toBe(200);

    key = (await s.h.key(['*'], 'rev-app')).key;
    await api('POST', '/v1/models', {
      label: 'judge-model',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'j',
    });
    await api('POST', '/v1/containers', { label: 'c' });
    const items = Array.from({ length: N }, (_, i) => ({ input: `q${i}`, output: ` a${i}` }));
    await api('POST', '/v1/datasets', { label: 'two-hundred', items });
    await api('POST', '/v1/evaluators', {
      type: 'judge',
      name: 'grade',
      model: 'judge-model',
      prompt: 'Grade the answer from 1 to 5.\n\nOutput:\n{{output}}',
      pass_threshold: 2,
      scale: { type: 'ordinal', min: 1, max: 5 },
    });
    const run = await api('POST', '/v1/evaluation/runs', {
      container: 'c',
      evaluators: ['grade'],
      sample: { type: 'dataset', dataset: 'two-hundred', range: `0:${N}` },
    });
    await waitFor(
      async () => (await api('GET', `/v1/evaluation/runs/${run.id}`)).status === 'completed',
      300_000,
    );
    const queue = await api('POST', '/v1/annotation-queues', {
      name: 'grades',
      evaluators: ['grade'],
      comment: true,
      claim_seconds: 1800,
    });
    queueId = queue.id;
    // The judge fails every 10th output: exactly 20 positions, none errored.
    const failed = await api('POST', `/v1/annotation-queues/${queueId}/items`, {
      rules: [{ run: run.id, failed: true }],
    });
    expect(failed).toMatchObject({ added: N / 10, already_queued: 0 });
    // A 10 % share drawn by hash (the run's id is random): about 20 positions, those already queued
    // among them counted apart. Bounds 4 standard deviations out.
    const share = await api('POST', `/v1/annotation-queues/${queueId}/items`, {
      rules: [{ run: run.id, share: 0.1, seed: 7 }],
    });
    const drawn = share.added + share.already_queued;
    expect(drawn).toBeGreaterThanOrEqual(4);
    expect(drawn).toBeLessThanOrEqual(37);
    expect(share.already_queued).toBeLessThanOrEqual(Math.min(drawn, N / 10));
    expect(share.added).toBeGreaterThan(0);
  }, 600_000);

  it('two members score with the keyboard; skips, j / k, an abandoned claim returning, a flag', async () => {
    const url = `${projectUrl}/review/${queueId}`;
    await alice.page.goto(url);
    await bob.page.goto(url);
    // Each holds a different item; the judge is hidden until they score.
    const a1 = await scoreShown(alice);
    const b1 = await scoreShown(bob);
    expect(a1).not.toBe(b1);
    // Progress per reviewer, by name.
    await alice.page.reload();
    const reviewers = alice.page.getByRole('table', { name: 'Reviewers' });
    await reviewers.getByText('alice').waitFor({ timeout: LONG });
    await reviewers.getByText('bob').waitFor({ timeout: LONG });
    await fitsBothWidths(alice.page);

    // After the reload Alice's page claims a fresh item; s skips it, and it goes to Bob, never back to her.
    const skipped = (await itemId(alice.page)) ?? '';
    alice.seen.push(skipped);
    await alice.page.keyboard.press('s');
    expect(await movedFrom(alice.page, skipped)).not.toBeNull();
    expect(await next(bob, b1)).toBe(skipped);
    const b2 = await scoreShown(bob);
    const a2 = await scoreShown(alice);
    // j claims the next; k shows the previous (reviewed, judge shown); j comes back to the held one.
    const a3 = (await next(alice, a2)) ?? '';
    await alice.page.keyboard.press('k');
    await alice.page.getByTestId('item-id').getByText(a2).waitFor({ timeout: LONG });
    await alice.page.getByTestId('item-state').getByText('Reviewed').waitFor({ timeout: LONG });
    await alice.page.keyboard.press('j');
    await alice.page.getByTestId('item-id').getByText(a3).waitFor({ timeout: LONG });
    await scoreShown(alice);

    // Bob claims one with a 3 s claim and walks away: it is not Alice's until the claim expires.
    await api('PATCH', `/v1/annotation-queues/${queueId}`, { claim_seconds: 3 });
    const abandoned = (await next(bob, b2)) ?? '';
    bob.seen.push(abandoned);
    await api('PATCH', `/v1/annotation-queues/${queueId}`, { claim_seconds: 1800 });
    await bob.page.goto(`${projectUrl}/review`);
    const held = await dash(
      alice.page,
      'POST',
      `/projects/${projectId}/review/queues/${queueId}/items/${abandoned}/review`,
      { scores: [{ evaluator: 'grade', score: 3 }] },
    );
    expect(held.status).toBe(409);
    // Opened by its address, the item Bob holds takes no key press from Alice: nothing is sent (no 409).
    const aside = await alice.ctx.newPage();
    const posted: string[] = [];
    aside.on('request', (req) => {
      if (req.method() === 'POST') posted.push(req.url());
    });
    await aside.goto(`${projectUrl}/review/${queueId}/item/${abandoned}`);
    await aside.getByTestId('item-id').getByText(abandoned).waitFor({ timeout: LONG });
    await aside
      .getByTestId('item-state')
      .getByText(/Not claimed/)
      .waitFor({ timeout: LONG });
    await aside.keyboard.press('3');
    await aside.keyboard.press('x');
    await new Promise((r) => setTimeout(r, 500));
    expect(posted).toEqual([]);
    expect(await aside.locator('.error').count()).toBe(0);
    expect(await aside.getByLabel('Reason').count()).toBe(0);
    // A keyboard user's first Tab reaches the skip link, which moves past the top bar.
    await aside.keyboard.press('Tab');
    const skipLink = aside.getByRole('link', { name: 'Skip to content' });
    expect(
      await skipLink.evaluate(
        (e) =>
          e === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement,
      ),
    ).toBe(true);
    await aside.keyboard.press('Enter');
    expect(await aside.evaluate(`document.activeElement?.id`)).toBe('content');
    await aside.close();
    await new Promise((r) => setTimeout(r, 3500));
    expect(await next(alice, a3)).toBe(abandoned);

    // Bad input on the page's routes: a score outside the scale is a 422 naming it.
    const bad = await dash(
      alice.page,
      'POST',
      `/projects/${projectId}/review/queues/${queueId}/items/${abandoned}/review`,
      {
        scores: [{ evaluator: 'grade', score: 9 }],
      },
    );
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body)).toContain('outside the scale');

    // Bob comes back and flags one item with the button.
    await bob.page.goto(`${projectUrl}/review/${queueId}`);
    const flagged = (await itemId(bob.page)) ?? '';
    bob.seen.push(flagged);
    // x opens the flag's reason, focused (the key itself is not typed into it).
    await bob.page
      .getByTestId('item-state')
      .getByText(/Claimed until/)
      .waitFor({ timeout: LONG });
    await bob.page.keyboard.press('x');
    const reason = bob.page.getByLabel('Reason');
    await reason.waitFor({ timeout: LONG });
    expect(await reason.inputValue()).toBe('');
    expect(
      await reason.evaluate(
        (e) =>
          e === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement,
      ),
    ).toBe(true);
    await reason.fill('the answer is cut off');
    await bob.page.getByRole('button', { name: 'Flag item' }).click();
    expect(await movedFrom(bob.page, flagged)).not.toBeNull();
    await fitsBothWidths(bob.page);

    // Both score until nothing is left for either.
    let a: string | null = await scoreShown(alice);
    let b: string | null = await scoreShown(bob);
    while (a !== null || b !== null) {
      if (a !== null) {
        a = await next(alice, a);
        if (a !== null) await scoreShown(alice);
      }
      if (b !== null) {
        b = await next(bob, b);
        if (b !== null) await scoreShown(bob);
      }
    }

    // No item reviewed twice (one review each, never by the same person twice); the skipped one went to Bob.
    const reviews = await api('GET', `/v1/annotation-queues/${queueId}/reviews?limit=100`);
    const q = await api('GET', `/v1/annotation-queues/${queueId}`);
    const byItem = new Map<string, string[]>();
    for (const r of reviews.data) byItem.set(r.item_id, [...(byItem.get(r.item_id) ?? []), r.reviewer]);
    expect(byItem.size).toBe(reviews.data.length);
    expect(q.counts).toMatchObject({ open: 0, flagged: 1, done: q.counts.total - 1 });
    expect(byItem.get(skipped)).toEqual([`user:${bob.userId}`]);
    expect(byItem.get(abandoned)).toEqual([`user:${alice.userId}`]);
    expect(byItem.has(flagged)).toBe(false);
    expect(new Set([...alice.seen, ...bob.seen]).size).toBe(q.counts.total);
  }, 900_000);

  it('shows the API’s agreement figures, the confusion matrix and the disagreements, at both widths', async () => {
    const figures = (await api('GET', `/v1/annotation-queues/${queueId}/agreement`)).evaluators[0];
    const g = figures.groups[0];
    expect(figures.groups).toHaveLength(1);
    const page = alice.page;
    await page.goto(`${projectUrl}/review/${queueId}/agreement`);
    await page.getByTestId('figure-n').getByText(String(g.n)).waitFor({ timeout: LONG });
    const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(3));
    for (const name of ['kappa', 'weighted_kappa', 'pearson', 'spearman', 'mae'] as const) {
      const text = await page.getByTestId(`figure-${name}`).textContent();
      expect(text, name).toContain(fmt(g[name]));
      expect(text, name).toContain(`[${fmt(g.intervals[name][0])}, ${fmt(g.intervals[name][1])}]`);
    }
    await expect(page.getByTestId('figure-percent_agreement').textContent()).resolves.toContain(
      `${(g.percent_agreement * 100).toFixed(1)}%`,
    );
    const cells = page.getByRole('table', { name: 'Confusion matrix' }).locator('tbody td');
    await expect(cells.allTextContents()).resolves.toEqual(g.confusion.matrix.flat().map(String));
    const links = page.getByRole('list', { name: 'Disagreements' }).getByRole('link');
    await expect(links.count()).resolves.toBe(g.disagreements.length);
    expect(g.disagreements.length).toBeGreaterThan(0);
    await fitsBothWidths(page);
    // A disagreement opens its item.
    await links.first().click();
    await page.getByTestId('item-id').getByText(g.disagreements[0].item_id).waitFor({ timeout: LONG });
    // Done: reviewed by Alice (her review shown) or by Bob (not hers to claim).
    await page
      .getByTestId('item-state')
      .getByText(/Reviewed|\(done\)/)
      .waitFor({ timeout: LONG });
  }, 300_000);

  it('a user outside the project gets not-found, on the page and on every review route', async () => {
    const carol = await member('carol', 'Provider B');
    await carol.page.goto(`${projectUrl}/review/${queueId}`);
    await carol.page
      .getByRole('alert')
      .getByText(/not found/i)
      .waitFor({ timeout: LONG });
    const base = `/projects/${projectId}/review`;
    for (const [method, path] of [
      ['GET', `${base}/queues`],
      ['GET', `${base}/queues/${queueId}`],
      ['POST', `${base}/queues/${queueId}/claim`],
      ['GET', `${base}/queues/${queueId}/agreement`],
      ['GET', `${base}/evaluators/grade/agreement`],
    ] as const) {
      expect((await dash(carol.page, method, path)).status, `${method} ${path}`).toBe(404);
    }
    // Carol's own project: Alice, not a member there, gets 404 on its review routes.
    const org = await dash(carol.page, 'POST', '/orgs', { name: 'Carols' });
    const other = await dash(carol.page, 'POST', `/orgs/${org.body.id}/projects`, { name: 'carol-app' });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    const theirs = `/projects/${other.body.id}/review`;
    expect((await dash(alice.page, 'GET', `${theirs}/queues`)).status).toBe(404);
    expect((await dash(alice.page, 'POST', `${theirs}/queues/${queueId}/claim`)).status).toBe(404);
    // Alice's queue asked for under Carol's project (where Carol is a member) is not found either.
    expect((await dash(carol.page, 'GET', `${theirs}/queues/${queueId}`)).status).toBe(404);
    expect((await dash(alice.page, 'GET', `${base}/queues/no-such-queue`)).status).toBe(404);
  }, 300_000);
});
