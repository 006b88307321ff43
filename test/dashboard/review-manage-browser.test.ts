// Database-independent: a browser walk-through of managing review on the Review page; the review store runs on both databases in test/review (the other browser tests are SQLite-only too).
/**
 * Managing human review from the dashboard in a real browser (Chromium through playwright-core) against a
 * real server, a mock judge on loopback: creating a queue (rubric, comment, reviewers, claim time), adding
 * a run's failures, a seeded share of a run and chosen task logs with the API's semantics, downloading the
 * human scores as the API exports them, correcting one's own review, and two judge prompts compared side
 * by side over a run of the reviewed items; at both widths. A member cannot correct another's review; a
 * user outside the project, and another project's queue, get not-found on every route.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Browser, Page } from 'playwright-core';
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

const N = 20;
/** The first judge's grade of output `a<i>`: 1 (a failure) at every 5th, else 2..5 in turn. */
const judgeScore = (i: number) => (i % 5 === 0 ? 1 : (i % 4) + 2);
const LONG = 60_000;

let s: DashboardSetup;
let mock: MockUpstream;
let browser: Browser;
let key = '';
let projectUrl = '';
let projectId = '';
let runId = '';
let queueId = '';
let alice: Page;
let bob: Page;
let carol: Page;
const api = apiCaller(
  () => s.h.url,
  () => key,
);

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
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {}
      return { status: res.status, body: parsed };
    },
    [method, path, body] as const,
  );
}

async function member(login: string, provider: 'Provider A' | 'Provider B'): Promise<Page> {
  const ctx = await browser.newContext({ viewport: WIDE });
  const page = await ctx.newPage();
  await page.goto(`${s.h.url}/signin`);
  await signInAt(page, provider, login);
  return page;
}

/** The API's raw text of a path (the export's bytes). */
async function apiText(path: string): Promise<string> {
  const res = await fetch(`${s.h.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  return res.text();
}

describe.skipIf(!hasChromium)('managing review on the Review page in a browser', () => {
  beforeAll(async () => {
    ensureWebBuilt();
    mock = await startMockUpstream({
      reply: (req) => {
        const messages = (req.body?.messages ?? []) as { content: string }[];
        const text = String(messages.at(-1)?.content ?? '');
        const i = Number(/\ba(\d+)\b/.exec(text)?.[1] ?? -1);
        // The revised prompt (it says "strictly") grades one lower than the first, never below 1.
        const score = text.includes('strictly') ? Math.max(1, judgeScore(i) - 1) : judgeScore(i);
        return { json: { score, reasoning: `graded a${i}` } };
      },
    });
    s = await startDashboard({ EVALGATE_RUN_POLL_MS: '100' });
    browser = await launchChromium();
    const ctx = await browser.newContext({ viewport: WIDE });
    alice = await ctx.newPage();
    projectUrl = await signInWithProject(alice, s.h.url, {
      login: 'alice',
      org: 'Curators',
      project: 'cur-app',
    });
    projectId = projectUrl.split('/').at(-1) ?? '';
    const org = (await dash(alice, 'GET', `/projects/${projectId}`)).body.organization_id;
    const invite = await dash(alice, 'POST', `/orgs/${org}/invitations`, {
      email: 'bob@example.com',
      role: 'member',
    });
    expect(invite.status, JSON.stringify(invite.body)).toBe(201);
    bob = await member('bob', 'Provider A');
    expect((await dash(bob, 'POST', `/invitations/${invite.body.id}/accept`)).status).toBe(200);
    carol = await member('carol', 'Provider B');

    key = (await s.h.key(['*'], 'cur-app')).key;
    await api('POST', '/v1/models', {
      label: 'judge-model',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'j',
    });
    await api('POST', '/v1/containers', { label: 'c' });
    const items = Array.from({ length: N }, (_, i) => ({ input: `q${i}`, output: ` a${i}` }));
    await api('POST', '/v1/datasets', { label: 'twenty', items });
    for (const [name, prompt] of [
      ['grade', 'Grade the answer from 1 to 5.\n\nOutput:\n{{output}}'],
      ['grade-v2', 'Grade the answer strictly from 1 to 5.\n\nOutput:\n{{output}}'],
    ]) {
      await api('POST', '/v1/evaluators', {
        type: 'judge',
        name,
        model: 'judge-model',
        prompt,
        pass_threshold: 2,
        scale: { type: 'ordinal', min: 1, max: 5 },
      });
    }
    const run = await api('POST', '/v1/evaluation/runs', {
      container: 'c',
      name: 'first-grades',
      evaluators: ['grade'],
      sample: { type: 'dataset', dataset: 'twenty', range: `0:${N}` },
    });
    runId = run.id;
    await waitFor(
      async () => (await api('GET', `/v1/evaluation/runs/${runId}`)).status === 'completed',
      300_000,
    );
    await api('POST', '/v1/containers/c/logs', [
      { model: 'm', input: [{ role: 'user', content: 'log one' }], output: 'one' },
      { model: 'm', input: [{ role: 'user', content: 'log two' }], output: 'two' },
    ]);
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await mock?.close();
  });

  it('creates a queue from the Review page: rubric, comment, reviewers per item, claim time', async () => {
    await alice.goto(`${projectUrl}/review`);
    await alice.getByRole('button', { name: 'New queue' }).click();
    const dialog = alice.getByRole('dialog');
    await dialog.getByLabel('Queue name').fill('triage');
    await dialog.getByRole('checkbox', { name: 'grade', exact: true }).check();
    await dialog.getByRole('checkbox', { name: 'Ask for a comment' }).check();
    await dialog.getByLabel('Reviewers per item').fill('1');
    await dialog.getByLabel('Claim time in minutes').fill('10');
    await fitsBothWidths(alice);
    await dialog.getByRole('button', { name: 'Create queue' }).click();
    await alice.waitForURL(/\/review\/aq_[^/]+$/, { timeout: LONG });
    queueId = alice.url().split('/').at(-1) ?? '';
    const queue = await api('GET', `/v1/annotation-queues/${queueId}`);
    expect(queue).toMatchObject({
      name: 'triage',
      reviewers_per_item: 1,
      claim_seconds: 600,
      rubric: { comment: true, evaluators: [{ name: 'grade' }] },
      counts: { total: 0 },
    });
    // A second queue of the same name is refused with the API's message, shown in the dialog.
    await alice.goto(`${projectUrl}/review`);
    await alice.getByRole('link', { name: 'triage' }).waitFor({ timeout: LONG });
    await alice.getByRole('button', { name: 'New queue' }).click();
    await alice.getByRole('dialog').getByLabel('Queue name').fill('triage');
    await alice.getByRole('dialog').getByRole('checkbox', { name: 'grade', exact: true }).check();
    await alice.getByRole('dialog').getByRole('button', { name: 'Create queue' }).click();
    await alice.getByRole('dialog').getByRole('alert').waitFor({ timeout: LONG });
    expect((await api('GET', '/v1/annotation-queues')).data).toHaveLength(1);
  }, 300_000);

  it("adds a run's failures, a seeded share and chosen task logs, as the API's rules choose them", async () => {
    // What the API's rules choose, in a queue of its own: the same rules must give the same positions.
    const twin = await api('POST', '/v1/annotation-queues', { name: 'twin', evaluators: ['grade'] });
    const failed = await api('POST', `/v1/annotation-queues/${twin.id}/items`, {
      rules: [{ run: runId, failed: true }],
    });
    const share = await api('POST', `/v1/annotation-queues/${twin.id}/items`, {
      rules: [{ run: runId, share: 0.5, seed: 3 }],
    });
    expect(failed.added).toBe(N / 5);

    await alice.goto(`${projectUrl}/review/${queueId}`);
    const form = alice.getByRole('region', { name: 'Add items' });
    await form.getByLabel('What to add').selectOption('failed');
    await form.getByLabel('Run').selectOption(runId);
    await form.getByRole('button', { name: 'Add to the queue' }).click();
    await form
      .getByTestId('items-added')
      .getByText(`${N / 5} added, 0 already queued`)
      .waitFor({ timeout: LONG });

    await form.getByLabel('What to add').selectOption('share');
    await form.getByLabel('Run').selectOption(runId);
    await form.getByLabel('Share in percent').fill('50');
    await form.getByLabel('Seed').fill('3');
    await form.getByRole('button', { name: 'Add to the queue' }).click();
    await form
      .getByTestId('items-added')
      .getByText(`${share.added} added, ${share.already_queued} already queued`)
      .waitFor({ timeout: LONG });

    const logs = (await api('GET', '/v1/containers/c/logs')).data.map((l: { id: string }) => l.id);
    expect(logs).toHaveLength(2);
    await form.getByLabel('What to add').selectOption('task_logs');
    await form.getByLabel('Task log ids').fill(`${logs[0]},\n${logs[1]}`);
    await form.getByRole('button', { name: 'Add to the queue' }).click();
    await form.getByTestId('items-added').getByText('2 added, 0 already queued').waitFor({ timeout: LONG });
    await fitsBothWidths(alice);

    // The queue holds exactly the twin's positions, plus the two logs.
    const refs = async (q: string, kind: string) =>
      (await api('GET', `/v1/annotation-queues/${q}/items?limit=100`)).data
        .filter((i: { kind: string }) => i.kind === kind)
        .map((i: { ref: string }) => i.ref)
        .sort();
    expect(await refs(queueId, 'run_sample')).toEqual(await refs(twin.id, 'run_sample'));
    expect(await refs(queueId, 'task_log')).toEqual([...logs].sort());
    await api('DELETE', `/v1/annotation-queues/${twin.id}`);
  }, 300_000);

  it('downloads the human scores as the API exports them, and corrects one of my reviews', async () => {
    // Alice reviews every run position (the judge's grade, one higher where the judge failed); Bob has none.
    for (;;) {
      const claim = await dash(alice, 'POST', `/projects/${projectId}/review/queues/${queueId}/claim`);
      const view = claim.body.item;
      if (!view) break;
      const id = view.item.id;
      const i = Number(/q(\d+)/.exec(JSON.stringify(view.content.input))?.[1] ?? -1);
      if (i < 0) {
        expect(
          (await dash(alice, 'POST', `/projects/${projectId}/review/queues/${queueId}/items/${id}/skip`))
            .status,
        ).toBe(200);
        continue;
      }
      const score = judgeScore(i) === 1 ? 2 : judgeScore(i);
      const r = await dash(
        alice,
        'POST',
        `/projects/${projectId}/review/queues/${queueId}/items/${id}/review`,
        {
          scores: [{ evaluator: 'grade', score }],
          comment: `seen ${i}`,
        },
      );
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    await alice.goto(`${projectUrl}/review/${queueId}`);
    for (const [format, name] of [
      ['jsonl', 'JSON lines'],
      ['csv', 'CSV'],
    ] as const) {
      const [download] = await Promise.all([
        alice.waitForEvent('download', { timeout: LONG }),
        alice.getByRole('navigation', { name: 'Export' }).getByRole('link', { name }).click(),
      ]);
      expect(download.suggestedFilename()).toBe(`${queueId}-scores.${format}`);
      const text = fs.readFileSync((await download.path()) ?? '', 'utf8');
      expect(text).toBe(await apiText(`/v1/annotation-queues/${queueId}/scores?format=${format}`));
      expect(text.trim().split('\n').length).toBeGreaterThan(N / 5);
    }

    // Correct the review of a failure: 2 becomes 1, the old one kept as history.
    const mine = (await api('GET', `/v1/annotation-queues/${queueId}/reviews?limit=100`)).data;
    const target = mine.find((r: { comment: string }) => r.comment === 'seen 5');
    expect(target).toBeDefined();
    const row = alice.getByTestId(`my-review-${target.item_id}`);
    await row.getByTestId('answer').getByText('2').waitFor({ timeout: LONG });
    await row.getByRole('button', { name: 'Correct' }).click();
    await row.getByLabel('New answer').fill('1');
    await row.getByLabel('Comment').fill('a failure after all');
    await fitsBothWidths(alice);
    await row.getByRole('button', { name: 'Save correction' }).click();
    await row.getByTestId('answer').getByText('1').waitFor({ timeout: LONG });
    const chain = (
      await api('GET', `/v1/annotation-queues/${queueId}/reviews?item=${target.item_id}&history=true`)
    ).data;
    expect(chain).toHaveLength(2);
    const old = chain.find((r: { id: string }) => r.id === target.id);
    const fresh = chain.find((r: { id: string }) => r.id !== target.id);
    expect(old.superseded_by).toBe(fresh.id);
    expect(fresh).toMatchObject({ score: 1, comment: 'a failure after all', reviewer: target.reviewer });
    // An answer off the scale is refused with the API's message, nothing changed.
    await row.getByRole('button', { name: 'Correct' }).click();
    await row.getByLabel('New answer').fill('9');
    await row.getByRole('button', { name: 'Save correction' }).click();
    await row
      .getByRole('alert')
      .getByText(/outside the scale/)
      .waitFor({ timeout: LONG });
    expect(
      (await api('GET', `/v1/annotation-queues/${queueId}/reviews?item=${target.item_id}&history=true`)).data,
    ).toHaveLength(2);
  }, 300_000);

  it('compares two judge prompts side by side over a run of the reviewed items', async () => {
    // A dataset of its own per attempt: a retry does not meet the first attempt's.
    const dataset = `reviewed-${randomUUID().slice(0, 8)}`;
    await api('POST', `/v1/annotation-queues/${queueId}/export`, { label: dataset, evaluator: 'grade' });
    const run = await api('POST', '/v1/evaluation/runs', {
      container: 'c',
      name: 'both-prompts',
      evaluators: ['grade', 'grade-v2'],
      sample: { type: 'dataset', dataset },
      ground_truth: { type: 'dataset', dataset },
    });
    await waitFor(
      async () => (await api('GET', `/v1/evaluation/runs/${run.id}`)).status === 'completed',
      300_000,
    );
    const figures = await api('GET', `/v1/evaluators/grade/agreement?run=${run.id}&compare=grade-v2`);
    expect(figures.n).toBeGreaterThan(0);
    expect(figures.compare.n).toBe(figures.n);

    await alice.goto(`${projectUrl}/review/${queueId}/agreement`);
    await alice.getByRole('link', { name: 'Compare judge prompts' }).click();
    const form = alice.getByRole('region', { name: 'Compare prompt versions' });
    await form.getByLabel('Compared with').selectOption({ label: 'grade-v2' });
    await form.getByLabel('Human answers from').selectOption(run.id);
    await form.getByRole('button', { name: 'Compare' }).click();
    const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(3));
    for (const [side, f] of [
      ['compare-main', figures],
      ['compare-other', figures.compare],
    ] as const) {
      const box = alice.getByTestId(side);
      await box.getByRole('heading', { name: f.evaluator.name, exact: true }).waitFor({ timeout: LONG });
      const g = f.groups[0];
      await box.getByTestId('figure-n').getByText(String(g.n)).waitFor({ timeout: LONG });
      await expect(box.getByTestId('figure-mae').textContent()).resolves.toContain(fmt(g.mae));
      await expect(box.locator('h4 code').first().textContent()).resolves.toBe(g.prompt_hash ?? 'unknown');
    }
    // The revised prompt grades one lower: its MAE against the people differs from the first's.
    expect(figures.groups[0].mae).not.toBe(figures.compare.groups[0].mae);
    await fitsBothWidths(alice);
  }, 600_000);

  it("refuses a member another's review, and is not found for outsiders and other projects' queues", async () => {
    const base = `/projects/${projectId}/review/queues`;
    const review = (await api('GET', `/v1/annotation-queues/${queueId}/reviews?limit=1`)).data[0];
    const correct = `${base}/${queueId}/reviews/${review.id}/correct`;
    // Bob is a member: he sees the queue, lists his own (no) reviews, but cannot correct Alice's.
    expect((await dash(bob, 'GET', `${base}/${queueId}/my-reviews`)).body.data).toEqual([]);
    const refused = await dash(bob, 'POST', correct, { score: 3 });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    const before = await api(
      'GET',
      `/v1/annotation-queues/${queueId}/reviews?item=${review.item_id}&history=true`,
    );

    const routes = [
      ['POST', base, { name: 'theirs', evaluators: ['grade'] }],
      ['POST', `${base}/${queueId}/items`, { rules: [{ run: runId, failed: true }] }],
      ['GET', `${base}/${queueId}/scores?format=csv`, undefined],
      ['GET', `${base}/${queueId}/my-reviews`, undefined],
      ['POST', correct, { score: 3 }],
    ] as const;
    for (const [method, path, body] of routes) {
      expect((await dash(carol, method, path, body)).status, `${method} ${path}`).toBe(404);
    }
    // Carol's own project: Alice's queue asked for there (where Carol is a member) is not found.
    const org = await dash(carol, 'POST', '/orgs', { name: 'Carols' });
    const other = await dash(carol, 'POST', `/orgs/${org.body.id}/projects`, { name: 'carol-app' });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    const theirs = `/projects/${other.body.id}/review/queues/${queueId}`;
    for (const [method, path, body] of [
      ['POST', `${theirs}/items`, { task_logs: [] }],
      ['GET', `${theirs}/scores`, undefined],
      ['GET', `${theirs}/my-reviews`, undefined],
      ['POST', `${theirs}/reviews/${review.id}/correct`, { score: 3 }],
    ] as const) {
      expect((await dash(carol, method, path, body)).status, `${method} ${path}`).toBe(404);
    }
    // Nothing changed: no queue in Alice's project made by Carol, no correction.
    expect((await api('GET', '/v1/annotation-queues')).data.map((q: { name: string }) => q.name)).toEqual([
      'triage',
    ]);
    expect(
      await api('GET', `/v1/annotation-queues/${queueId}/reviews?item=${review.item_id}&history=true`),
    ).toEqual(before);
  }, 300_000);

  it('a reviewer member claims, scores and corrects on the Review page, and is refused everything else', async () => {
    const org = (await dash(alice, 'GET', `/projects/${projectId}`)).body.organization_id;
    await alice.goto(`${s.h.url}/orgs/${org}`);
    await alice.getByLabel('E-mail').fill('dave@example.com');
    await alice.getByLabel('Role').selectOption('reviewer');
    await alice.getByRole('button', { name: 'Invite' }).click();
    await alice.getByText('dave@example.com').waitFor({ timeout: LONG });
    const dave = await member('dave', 'Provider A');
    const invitation = (await dash(dave, 'GET', '/orgs')).body.invitations[0];
    expect(invitation.role).toBe('reviewer');
    expect((await dash(dave, 'POST', `/invitations/${invitation.id}/accept`)).status).toBe(200);

    // The project opens on Review, the only section offered; the queue has no New queue, Add items or Export.
    await dave.goto(projectUrl);
    const nav = dave.getByRole('navigation', { name: 'Project' });
    await nav.getByRole('link', { name: 'Review' }).waitFor({ timeout: LONG });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Review']);
    await dave.getByRole('link', { name: 'triage' }).click();
    await dave.getByTestId('item-id').waitFor({ timeout: LONG });
    expect(await dave.getByRole('button', { name: 'New queue' }).count()).toBe(0);
    expect(await dave.getByRole('region', { name: 'Add items' }).count()).toBe(0);
    expect(await dave.getByRole('navigation', { name: 'Export' }).count()).toBe(0);
    // One of the two task logs Alice skipped: Dave scores it with a key, then corrects his review.
    const item = (await dave.getByTestId('item-id').textContent()) ?? '';
    await dave.keyboard.press('3');
    await dave.getByTestId('item-state').getByText('Reviewed').waitFor({ timeout: LONG });
    await fitsBothWidths(dave);
    const base = `/projects/${projectId}/review/queues/${queueId}`;
    const mine = (await dash(dave, 'GET', `${base}/my-reviews`)).body.data;
    expect(mine).toMatchObject([{ item_id: item, score: 3 }]);
    const fixed = await dash(dave, 'POST', `${base}/reviews/${mine[0].id}/correct`, { score: 4 });
    expect(fixed.status, JSON.stringify(fixed.body)).toBe(201);

    // Anything but reviewing is refused: the queue's management, the project's other parts, a new project.
    for (const [method, path, body] of [
      ['POST', `/projects/${projectId}/review/queues`, { name: 'daves', evaluators: ['grade'] }],
      ['POST', `${base}/items`, { rules: [{ run: runId, failed: true }] }],
      ['GET', `${base}/scores`, undefined],
      ['GET', `/projects/${projectId}/review/evaluators/grade/agreement`, undefined],
      ['GET', `/projects/${projectId}/runs`, undefined],
      ['GET', `/projects/${projectId}/evaluators`, undefined],
      ['POST', `/projects/${projectId}/keys`, { name: 'mine', permissions: ['*'] }],
      ['POST', `/orgs/${org}/projects`, { name: 'daves-app' }],
    ] as const) {
      const r = await dash(dave, method, path, body);
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(403);
    }
    await dave.goto(`${projectUrl}/runs`);
    await dave
      .getByRole('alert')
      .getByText(/only review/)
      .waitFor({ timeout: LONG });
    expect((await api('GET', '/v1/annotation-queues')).data).toHaveLength(1);
  }, 300_000);
});
