import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type DashboardSetup, dashboardCall, signIn, startDashboard } from './helpers.js';

/**
 * The Playground page's endpoints (both databases): a member opens a task log, runs it (streamed, paid
 * by the project, recorded in `playground`) and saves a prompt version authored by them; a user of
 * another organization gets 404 for all of it; bad input a 422 before anything is called; no API key and
 * no cross-origin request is accepted.
 */
describe('dashboard: the playground', () => {
  let s: DashboardSetup;
  let mock: MockUpstream;
  let owner: Awaited<ReturnType<typeof signIn>>;
  let stranger: Awaited<ReturnType<typeof signIn>>;
  let projectId = '';
  let key = '';
  let logId = '';

  beforeAll(async () => {
    mock = await startMockUpstream({ reply: (req) => `echo ${req.lastUserText}` });
    s = await startDashboard({ OPENAI_API_KEY: 'sk-operator', OPENAI_BASE_URL: mock.baseUrl });
    owner = await signIn(s.h, 'a', 'lena');
    stranger = await signIn(s.h, 'a', 'olaf');
    const org = await dashboardCall(s.h, owner, 'POST', '/orgs', { name: 'lena-org' });
    const project = await dashboardCall(s.h, owner, 'POST', `/orgs/${org.body.id}/projects`, {
      name: 'lena-p',
    });
    projectId = project.body.id;
    key = (await s.h.key(['*'], 'lena-p')).key;
    const call = await s.h.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'refund?' }], temperature: 0 },
    });
    expect(call.status, call.text).toBe(200);
    logId = call.headers.get('x-evalgate-log-id') ?? '';
    await s.h.services.logWriter.flush();
  }, 60_000);

  afterAll(async () => {
    await s?.close();
    await mock?.close();
  });

  it('opens a task log, runs it streamed and records the call in the playground container', async () => {
    const opened = await dashboardCall(
      s.h,
      owner,
      'GET',
      `/projects/${projectId}/playground/request?task_log=${logId}`,
    );
    expect(opened.status, JSON.stringify(opened.body)).toBe(200);
    expect(opened.body).toMatchObject({
      messages: [{ role: 'user', content: 'refund?' }],
      parameters: { temperature: 0 },
    });

    const res = await owner.jar.fetch(`${s.h.url}/dashboard/api/projects/${projectId}/playground/runs`, {
      method: 'POST',
      headers: { origin: s.h.url, 'x-csrf-token': owner.csrf, 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: opened.body.messages,
        models: ['openai/gpt-4o-mini', 'openai/gpt-4o'],
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    const done = JSON.parse(/event: done\ndata: (.*)/.exec(text)?.[1] ?? 'null');
    expect(done.answers.map((a: { output: string }) => a.output)).toEqual(['echo refund?', 'echo refund?']);
    await s.h.services.logWriter.flush();
    const logs = await s.h.call('GET', '/v1/containers/playground/logs', { key });
    expect(logs.body.data.map((l: { id: string }) => l.id).sort()).toEqual(
      done.answers.map((a: { task_log_id: string }) => a.task_log_id).sort(),
    );
  });

  it('saves a prompt version authored by the member; lists the prompts', async () => {
    const path = `/projects/${projectId}/playground/versions`;
    const saved = await dashboardCall(s.h, owner, 'POST', path, {
      prompt: 'refunds',
      messages: [{ role: 'user', content: 'Refund for {{order}}?' }],
      variable_types: { order: 'number' },
      model: 'openai/gpt-4o-mini',
    });
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    expect(saved.body).toMatchObject({
      name: 'refunds',
      version: 1,
      author: `user:${owner.user.id}`,
      variables: { order: 'number' },
    });
    const list = await dashboardCall(s.h, owner, 'GET', `/projects/${projectId}/prompts`);
    expect(list.body.data.map((p: { name: string }) => p.name)).toEqual(['refunds']);
    const versions = await dashboardCall(
      s.h,
      owner,
      'GET',
      `/projects/${projectId}/prompts/refunds/versions`,
    );
    expect(versions.body.data).toHaveLength(1);
  });

  it('a stranger gets 404; bad input 422; an API key or another origin is refused', async () => {
    const base = `/projects/${projectId}/playground`;
    const body = { messages: [{ role: 'user', content: 'hi' }], models: ['openai/gpt-4o-mini'] };
    const before = mock.requests.length;
    expect((await dashboardCall(s.h, stranger, 'GET', `${base}/request?task_log=${logId}`)).status).toBe(404);
    expect((await dashboardCall(s.h, stranger, 'POST', `${base}/runs`, body)).status).toBe(404);
    expect(
      (
        await dashboardCall(s.h, stranger, 'POST', `${base}/versions`, {
          prompt: 'x',
          messages: body.messages,
        })
      ).status,
    ).toBe(404);
    expect((await dashboardCall(s.h, stranger, 'GET', `/projects/${projectId}/prompts`)).status).toBe(404);
    const five = await dashboardCall(s.h, owner, 'POST', `${base}/runs`, {
      ...body,
      models: ['a', 'b', 'c', 'd', 'e'],
    });
    expect(five.status).toBe(422);
    const unknown = await dashboardCall(s.h, owner, 'POST', `${base}/runs`, { ...body, models: ['nowhere'] });
    expect(unknown.status).toBe(422);
    const missing = await dashboardCall(s.h, owner, 'POST', `${base}/runs`, {
      ...body,
      messages: [{ role: 'user', content: 'hi {{name}}' }],
    });
    expect(missing.status).toBe(422);
    const withKey = await dashboardCall(s.h, owner, 'POST', `${base}/runs`, body, {
      authorization: `Bearer ${key}`,
    });
    expect(withKey.status).toBe(401);
    const crossOrigin = await dashboardCall(s.h, owner, 'POST', `${base}/runs`, body, {
      origin: 'https://evil.example',
    });
    expect(crossOrigin.status).toBe(403);
    expect(mock.requests.length).toBe(before);
  });
});
