import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerStubModel } from '../helpers/harness.js';
import { type DashboardSetup, dashboardCall, signIn, startDashboard } from './helpers.js';

/**
 * What the dashboard's endpoints add for the pages (both databases): a container's task logs newest
 * first (a page counted from the latest call), the monitors with their container's label, and one
 * monitor with each evaluator's state and why it scored nothing; bad input is a 422 naming the field,
 * another organization's user gets 404.
 */
describe('dashboard task logs and monitor details', () => {
  let s: DashboardSetup;
  let owner: Awaited<ReturnType<typeof signIn>>;
  let projectId = '';
  let key = '';

  beforeAll(async () => {
    s = await startDashboard();
    owner = await signIn(s.h, 'a', 'lena');
    const org = await dashboardCall(s.h, owner, 'POST', '/orgs', { name: 'lena-org' });
    expect(org.status).toBe(201);
    const project = await dashboardCall(s.h, owner, 'POST', `/orgs/${org.body.id}/projects`, {
      name: 'lena-project',
    });
    expect(project.status).toBe(201);
    projectId = project.body.id;
    key = (await s.h.key(['*'], 'lena-project')).key;
    await registerStubModel(s.h, 'judge', key);
    const call = (path: string, body: unknown) =>
      s.h.call('POST', path, { key, body }).then((r) => expect(r.status, JSON.stringify(r.body)).toBe(201));
    await call('/v1/containers', { label: 'shop' });
    await call('/v1/evaluators', { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' });
    const logs = Array.from({ length: 25 }, (_, i) => ({
      model: 'judge',
      input: [{ role: 'user', content: `question ${i + 1}` }],
      output: `answer ${i + 1}`,
    }));
    await call('/v1/containers/shop/logs', logs);
  }, 60_000);

  afterAll(async () => {
    await s?.close();
  });

  it('lists task logs newest first, page by page, and in recorded order on request', async () => {
    const base = `/projects/${projectId}/containers/shop/logs`;
    const first = await dashboardCall(s.h, owner, 'GET', `${base}?limit=10`);
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(25);
    expect(first.body.data.map((l: { seq: number }) => l.seq)).toEqual([
      25, 24, 23, 22, 21, 20, 19, 18, 17, 16,
    ]);
    expect(first.body.data[0].output).toBe('answer 25');
    const last = await dashboardCall(s.h, owner, 'GET', `${base}?limit=10&offset=20`);
    expect(last.body.data.map((l: { seq: number }) => l.seq)).toEqual([5, 4, 3, 2, 1]);
    const beyond = await dashboardCall(s.h, owner, 'GET', `${base}?limit=10&offset=30`);
    expect(beyond.body).toEqual({ object: 'list', data: [], total: 25 });
    const oldest = await dashboardCall(s.h, owner, 'GET', `${base}?limit=3&order=oldest`);
    expect(oldest.body.data.map((l: { seq: number }) => l.seq)).toEqual([1, 2, 3]);
    const ranged = await dashboardCall(s.h, owner, 'GET', `${base}?range=2:4&order=oldest`);
    expect(ranged.body.data.map((l: { seq: number }) => l.seq)).toEqual([3, 4]);
  });

  it('answers bad log queries with 422 naming the field, and a stranger with 404', async () => {
    const base = `/projects/${projectId}/containers/shop/logs`;
    const badOrder = await dashboardCall(s.h, owner, 'GET', `${base}?order=random`);
    expect(badOrder.status).toBe(422);
    expect(badOrder.body.detail[0].loc).toEqual(['query', 'order']);
    const rangeNewest = await dashboardCall(s.h, owner, 'GET', `${base}?range=0:5`);
    expect(rangeNewest.status).toBe(422);
    expect(rangeNewest.body.detail[0].loc).toEqual(['query', 'range']);
    expect(
      (await dashboardCall(s.h, owner, 'GET', `/projects/${projectId}/containers/nope/logs`)).status,
    ).toBe(404);
    const stranger = await signIn(s.h, 'b', 'otto');
    expect((await dashboardCall(s.h, stranger, 'GET', base)).status).toBe(404);
  });

  it("shows monitors with their container's label, and why an evaluator scored nothing", async () => {
    const base = `/projects/${projectId}/monitors`;
    const created = await dashboardCall(s.h, owner, 'POST', base, {
      name: 'watch',
      container: 'shop',
      evaluators: ['j'],
    });
    expect(created.status).toBe(201);
    const list = await dashboardCall(s.h, owner, 'GET', base);
    expect(list.body.data[0]).toMatchObject({ name: 'watch', container_label: 'shop' });
    const shop = await s.h.call('GET', '/v1/containers/shop', { key });
    expect(list.body.data[0].container).toBe((shop.body as { id: string }).id);

    const detail = await dashboardCall(s.h, owner, 'GET', `${base}/watch`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({
      name: 'watch',
      container_label: 'shop',
      alert: null,
      alert_state: null,
    });
    expect(detail.body.evaluator_states).toEqual([
      {
        evaluator: created.body.evaluators[0],
        name: 'j',
        type: 'judge',
        num_scored: 0,
        num_errors: 0,
        num_missing: 0,
        why: expect.stringMatching(/^No call selected yet/),
      },
    ]);
    await dashboardCall(s.h, owner, 'PATCH', `${base}/watch`, { enabled: false });
    const paused = await dashboardCall(s.h, owner, 'GET', `${base}/watch`);
    expect(paused.body.evaluator_states[0].why).toBe('Paused before any call was selected.');
    const stranger = await signIn(s.h, 'b', 'ines');
    expect((await dashboardCall(s.h, stranger, 'GET', `${base}/watch`)).status).toBe(404);
    expect((await dashboardCall(s.h, owner, 'GET', `${base}/mon_missing`)).status).toBe(404);
  });
});
