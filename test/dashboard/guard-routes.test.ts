import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerStubModel } from '../helpers/harness.js';
import { type DashboardSetup, dashboardCall, signIn, startDashboard } from './helpers.js';

/**
 * The dashboard's guard endpoints over plain HTTP (both databases): a member of the project's
 * organization creates, lists, reads, changes and deletes a policy and reads the verdicts' summary;
 * bad input is a 422 naming the field; no session is a 401; an API key is refused; another
 * organization's user gets 404.
 */
describe('dashboard guard routes', () => {
  let s: DashboardSetup;
  let owner: Awaited<ReturnType<typeof signIn>>;
  let projectId = '';
  let base = '';

  beforeAll(async () => {
    s = await startDashboard();
    owner = await signIn(s.h, 'a', 'gina');
    const org = await dashboardCall(s.h, owner, 'POST', '/orgs', { name: 'gina-org' });
    expect(org.status).toBe(201);
    const project = await dashboardCall(s.h, owner, 'POST', `/orgs/${org.body.id}/projects`, {
      name: 'gina-project',
    });
    expect(project.status).toBe(201);
    projectId = project.body.id;
    base = `/projects/${projectId}/guards`;
    const key = (await s.h.key(['*'], 'gina-project')).key;
    await registerStubModel(s.h, 'judge', key);
    const ev = await s.h.call('POST', '/v1/evaluators', {
      key,
      body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
    });
    expect(ev.status, ev.text).toBe(201);
  }, 60_000);

  afterAll(async () => {
    await s?.close();
  });

  it('creates, lists, reads, changes and deletes a policy for a member', async () => {
    const created = await dashboardCall(s.h, owner, 'POST', base, {
      name: 'front',
      applies_to: { models: ['gpt-4o-mini'] },
      checks: [
        { name: 'no-secrets', guard: { type: 'secrets' } },
        { name: 'judge', guard: { type: 'evaluator', evaluator: 'j' }, stage: 'output', action: 'flag' },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.checks[1]).toMatchObject({ timeout_ms: 30000, streaming: 'hold' });
    const list = await dashboardCall(s.h, owner, 'GET', base);
    expect(list.body.data.map((p: { name: string }) => p.name)).toEqual(['front']);
    const changed = await dashboardCall(s.h, owner, 'PATCH', `${base}/front`, { enabled: false });
    expect(changed.status).toBe(200);
    expect((await dashboardCall(s.h, owner, 'GET', `${base}/${created.body.id}`)).body.enabled).toBe(false);
    const summary = await dashboardCall(s.h, owner, 'GET', `${base}/verdicts/summary?examples=1`);
    expect(summary.status).toBe(200);
    expect(summary.body).toMatchObject({ object: 'guard_verdict_summary', guards: [] });
    expect((await dashboardCall(s.h, owner, 'DELETE', `${base}/front`)).body.deleted).toBe(true);
    expect((await dashboardCall(s.h, owner, 'GET', `${base}/front`)).status).toBe(404);
    // What the dashboard changed, the API sees.
    expect(
      (await s.h.call('GET', '/v1/guards', { key: (await s.h.key(['*'], 'gina-project')).key })).body.total,
    ).toBe(0);
  });

  it('answers bad input with 422 naming the field, never a 500', async () => {
    const bad = await dashboardCall(s.h, owner, 'POST', base, {
      name: 'x',
      checks: [{ name: 'r', guard: { type: 'regex', pattern: '(a)\\1' } }],
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'checks', 0, 'guard', 'pattern']);
    const unknown = await dashboardCall(s.h, owner, 'POST', base, {
      name: 'x',
      checks: [{ name: 'e', guard: { type: 'evaluator', evaluator: 'nope' } }],
    });
    expect(unknown.status).toBe(422);
    const now = new Date().toISOString();
    const window = await dashboardCall(
      s.h,
      owner,
      'GET',
      `${base}/verdicts/summary?since=${now}&until=${now}`,
    );
    expect(window.status).toBe(422);
    expect((await dashboardCall(s.h, owner, 'PATCH', `${base}/nothing`, { enabled: true })).status).toBe(404);
  });

  it('refuses no session, an API key, and another organization', async () => {
    expect(
      (
        await dashboardCall(s.h, owner, 'POST', base, {
          name: 'kept',
          checks: [{ name: 'p', guard: { type: 'pii' } }],
        })
      ).status,
    ).toBe(201);
    const anonymous = await fetch(`${s.h.url}/dashboard/api${base}`);
    expect(anonymous.status).toBe(401);
    const withKey = await fetch(`${s.h.url}/dashboard/api${base}`, {
      headers: { authorization: `Bearer ${s.h.admin.key}` },
    });
    expect(withKey.status).toBe(401);
    const stranger = await signIn(s.h, 'b', 'oscar');
    for (const [method, path, body] of [
      ['GET', base, undefined],
      ['POST', base, { name: 'y', checks: [{ name: 'p', guard: { type: 'pii' } }] }],
      ['GET', `${base}/kept`, undefined],
      ['PATCH', `${base}/kept`, { enabled: false }],
      ['DELETE', `${base}/kept`, undefined],
      ['GET', `${base}/verdicts/summary`, undefined],
    ] as const) {
      const r = await dashboardCall(s.h, stranger, method, path, body);
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    expect((await dashboardCall(s.h, owner, 'GET', `${base}/kept`)).body.enabled).toBe(true);
  });
});
