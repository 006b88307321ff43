import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerStubModel } from '../helpers/harness.js';
import { type DashboardSetup, dashboardCall, signIn, startDashboard } from './helpers.js';

/**
 * The dashboard's monitor endpoints over plain HTTP (both databases): a member of the project's
 * organization creates, lists, reads, pauses and reads results and samples; bad input is a 422 naming
 * the field; no session is a 401; an API key is refused; another organization's user gets 404.
 */
describe('dashboard monitor routes', () => {
  let s: DashboardSetup;
  let owner: Awaited<ReturnType<typeof signIn>>;
  let projectId = '';

  beforeAll(async () => {
    s = await startDashboard();
    owner = await signIn(s.h, 'a', 'maya');
    const org = await dashboardCall(s.h, owner, 'POST', '/orgs', { name: 'maya-org' });
    expect(org.status).toBe(201);
    const project = await dashboardCall(s.h, owner, 'POST', `/orgs/${org.body.id}/projects`, {
      name: 'maya-project',
    });
    expect(project.status).toBe(201);
    projectId = project.body.id;
    const key = (await s.h.key(['*'], 'maya-project')).key;
    await registerStubModel(s.h, 'judge', key);
    const call = (path: string, body: unknown) =>
      s.h.call('POST', path, { key, body }).then((r) => expect(r.status, JSON.stringify(r.body)).toBe(201));
    await call('/v1/containers', { label: 'c' });
    await call('/v1/evaluators', { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' });
  }, 60_000);

  afterAll(async () => {
    await s?.close();
  });

  it('creates, lists, pauses and reads a monitor for a member', async () => {
    const base = `/projects/${projectId}/monitors`;
    const created = await dashboardCall(s.h, owner, 'POST', base, {
      name: 'live',
      container: 'c',
      evaluators: ['j'],
      sampling_rate: 0.5,
      filter: { routes: ['chat'] },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'live', sampling_rate: 0.5, enabled: true });
    const list = await dashboardCall(s.h, owner, 'GET', base);
    expect(list.body.data.map((m: { name: string }) => m.name)).toEqual(['live']);
    const paused = await dashboardCall(s.h, owner, 'PATCH', `${base}/live`, { enabled: false });
    expect(paused.status).toBe(200);
    expect(paused.body.enabled).toBe(false);
    expect((await dashboardCall(s.h, owner, 'GET', `${base}/${created.body.id}`)).body.enabled).toBe(false);
    const results = await dashboardCall(s.h, owner, 'GET', `${base}/live/results?bucket=minute`);
    expect(results.status).toBe(200);
    expect(results.body).toMatchObject({ object: 'monitor.results', bucket: 'minute', buckets: [] });
    const samples = await dashboardCall(s.h, owner, 'GET', `${base}/live/samples?failed=true&evaluator=j`);
    expect(samples.status).toBe(200);
    expect(samples.body.total).toBe(0);
  });

  it('answers bad input with 422 naming the field, never a 500', async () => {
    const base = `/projects/${projectId}/monitors`;
    const bad = await dashboardCall(s.h, owner, 'POST', base, {
      name: 'x',
      container: 'c',
      evaluators: ['j'],
      sampling_rate: 2,
      filter: { routes: ['fax'] },
    });
    expect(bad.status).toBe(422);
    const locs = bad.body.detail.map((d: { loc: string[] }) => d.loc.slice(0, 3).join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.sampling_rate', 'body.filter.routes']));
    const noContainer = await dashboardCall(s.h, owner, 'POST', base, {
      name: 'x',
      container: 'nope',
      evaluators: ['j'],
    });
    expect(noContainer.status).toBe(404);
    expect((await dashboardCall(s.h, owner, 'GET', `${base}/live/results?bucket=week`)).status).toBe(422);
    const wrongEvaluator = await dashboardCall(s.h, owner, 'GET', `${base}/live/samples?evaluator=nope`);
    expect(wrongEvaluator.status).toBe(422);
    expect(wrongEvaluator.body.detail[0].loc).toEqual(['query', 'evaluator']);
    expect((await dashboardCall(s.h, owner, 'PATCH', `${base}/live`, { container: 'c' })).status).toBe(422);
    expect((await dashboardCall(s.h, owner, 'GET', `${base}/mon_nothing`)).status).toBe(404);
  });

  it('refuses no session, an API key, and another organization', async () => {
    const base = `/projects/${projectId}/monitors`;
    const anonymous = await fetch(`${s.h.url}/dashboard/api${base}`);
    expect(anonymous.status).toBe(401);
    const withKey = await fetch(`${s.h.url}/dashboard/api${base}`, {
      headers: { authorization: `Bearer ${s.h.admin.key}` },
    });
    expect(withKey.status).toBe(401);
    const stranger = await signIn(s.h, 'b', 'otto');
    for (const [method, path, body] of [
      ['GET', base, undefined],
      ['POST', base, { name: 'y', container: 'c', evaluators: ['j'] }],
      ['GET', `${base}/live`, undefined],
      ['PATCH', `${base}/live`, { enabled: true }],
      ['GET', `${base}/live/results`, undefined],
      ['GET', `${base}/live/samples`, undefined],
    ] as const) {
      const r = await dashboardCall(s.h, stranger, method, path, body);
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    // Still paused: the stranger's PATCH changed nothing.
    expect((await dashboardCall(s.h, owner, 'GET', `${base}/live`)).body.enabled).toBe(false);
  });
});
