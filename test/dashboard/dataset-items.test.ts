import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardSetup, dashboardCall, signIn, startDashboard } from './helpers.js';

/**
 * "Add to dataset" through the dashboard's endpoint (both databases): a member makes an item of a task
 * log as a new version, recorded as theirs; a user of another organization gets 404; bad input a 422.
 */
describe('dashboard: add to dataset', () => {
  let s: DashboardSetup;
  let owner: Awaited<ReturnType<typeof signIn>>;
  let stranger: Awaited<ReturnType<typeof signIn>>;
  let projectId = '';
  let key = '';
  let logId = '';

  beforeAll(async () => {
    s = await startDashboard();
    owner = await signIn(s.h, 'a', 'mira');
    stranger = await signIn(s.h, 'a', 'otto');
    const org = await dashboardCall(s.h, owner, 'POST', '/orgs', { name: 'mira-org' });
    const project = await dashboardCall(s.h, owner, 'POST', `/orgs/${org.body.id}/projects`, {
      name: 'mira-p',
    });
    projectId = project.body.id;
    key = (await s.h.key(['*'], 'mira-p')).key;
    await s.h.call('POST', '/v1/containers', { key, body: { label: 'shop' } });
    await s.h.call('POST', '/v1/containers/shop/logs', {
      key,
      body: [{ model: 'm', input: [{ role: 'user', content: 'refund?' }], output: 'no' }],
    });
    await s.h.services.logWriter.flush();
    logId = (await s.h.call('GET', '/v1/containers/shop/logs', { key })).body.data[0].id;
    await s.h.call('POST', '/v1/datasets', { key, body: { label: 'cases', items: [{ input: 'a' }] } });
  }, 60_000);

  afterAll(async () => {
    await s?.close();
  });

  it('adds a task log as a new version, by the member', async () => {
    const path = `/projects/${projectId}/datasets/cases/items`;
    const res = await dashboardCall(s.h, owner, 'POST', path, {
      from: { task_log_id: logId },
      expected: 'yes, within 30 days',
      splits: ['support'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ version: 2, item_count: 2 });
    expect(res.body.items[0]).toMatchObject({
      data: { output: 'no', expected: 'yes, within 30 days' },
      splits: ['support'],
      origin: { kind: 'task_log', id: logId },
    });
    const versions = await s.h.call('GET', '/v1/datasets/cases/versions', { key });
    expect(versions.body.data[0].created_by).toBe(`user:${owner.user.id}`);
  });

  it('answers 404 to a stranger and to unknown objects, 422 to bad input', async () => {
    const path = `/projects/${projectId}/datasets/cases/items`;
    expect((await dashboardCall(s.h, stranger, 'POST', path, { from: { task_log_id: logId } })).status).toBe(
      404,
    );
    expect(
      (await dashboardCall(s.h, owner, 'POST', path, { from: { task_log_id: 'log_nope' } })).status,
    ).toBe(404);
    expect((await dashboardCall(s.h, owner, 'POST', path, { from: { task_log_id: 3 } })).status).toBe(422);
    const other = `/projects/${projectId}/datasets/nope/items`;
    expect((await dashboardCall(s.h, owner, 'POST', other, { input: 'x' })).status).toBe(404);
  });
});
