import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * `POST /v1/sessions/{id}/end`: an ended session is scored by a session monitor at its next sweep, long
 * before its idle time; one left open is not; a call after the end opens the session again and it is not
 * scored twice. Bad input: an unknown session or another project's key gets 404, a key without
 * `inference:write` 403.
 */
describe(`ending a session (${testDbKind()})`, () => {
  let h: Harness;
  let mock: MockUpstream;
  let monitor = { id: '', run_id: '' };

  beforeAll(async () => {
    mock = await startMockUpstream({
      record: false,
      reply: (req) => `answer to ${(req.body.messages as { content: string }[]).at(-1)?.content ?? ''}`,
    });
    h = await startHarness({
      env: { EVALGATE_RUN_POLL_MS: '100', EVALGATE_LOG_FLUSH_MS: '50', EVALGATE_RUN_RECONCILE_MS: '200' },
    });
    await h.call('POST', '/v1/models', {
      body: { label: 'gen', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'g' },
    });
    await h.call('POST', '/v1/containers', { body: { label: 'ends' } });
    const ev = await h.call('POST', '/v1/evaluators', {
      body: { type: 'trajectory_length', name: 'turns', length_of: 'turns', min_length: 1, max_length: 5 },
    });
    expect(ev.status, ev.text).toBe(201);
    // An hour of idleness: only an explicit end gets a session scored within this test.
    const m = await h.call('POST', '/v1/monitors', {
      body: { name: 'ended', container: 'ends', evaluators: ['turns'], unit: 'session', idle_seconds: 3600 },
    });
    expect(m.status, m.text).toBe(201);
    monitor = { id: m.body.id, run_id: m.body.run_id };
  }, 90_000);

  afterAll(async () => {
    await h?.close();
    await mock?.close();
  });

  /** One call under a session header; answers the session's id. */
  async function call(session: string, text: string): Promise<string> {
    const client = new OpenAI({
      apiKey: h.admin.key,
      baseURL: `${h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'ends', 'X-Evalgate-Session': session },
      maxRetries: 0,
    });
    await client.chat.completions.create({ model: 'gen', messages: [{ role: 'user', content: text }] });
    await h.services.logWriter.flush();
    const list = await h.call('GET', '/v1/sessions?container=ends&limit=100');
    return list.body.data.find((s: { key: string }) => s.key === session).id;
  }
  const positions = async () =>
    (
      await h.services.db
        .selectFrom('monitor_selections')
        .select('log_id')
        .where('monitor_id', '=', monitor.id)
        .execute()
    ).map((r) => r.log_id);

  it('scores an ended session at the next sweep, not one left open, and only once', async () => {
    // Keys of this attempt's own (a retried test starts new sessions).
    const tag = Math.random().toString(36).slice(2, 8);
    const done = await call(`done-${tag}`, 'first');
    await call(`done-${tag}`, 'second');
    const open = await call(`open-${tag}`, 'hello');

    const ended = await h.call('POST', `/v1/sessions/${done}/end`);
    expect(ended.status, ended.text).toBe(200);
    expect(ended.body).toMatchObject({ object: 'session', id: done, turn_count: 2 });
    expect(Date.parse(ended.body.ended_at)).toBeGreaterThan(Date.now() - 60_000);
    // Ending again keeps the first end.
    expect((await h.call('POST', `/v1/sessions/${done}/end`)).body.ended_at).toBe(ended.body.ended_at);
    expect((await h.call('GET', `/v1/sessions/${open}`)).body.ended_at).toBeNull();

    // Selected at a sweep, then scored by the monitor's run: one row, from the ended session only.
    const scoredRows = () =>
      h.services.db
        .selectFrom('run_samples')
        .select(['item_id', 'status', 'passed'])
        .where('run_id', '=', monitor.run_id)
        .where('item_id', 'in', [done, open])
        .execute();
    await waitFor(async () => (await scoredRows()).length === 1, 15_000, 'the ended session scored');
    const rows = await scoredRows();
    expect(rows.map((r) => [r.item_id, r.status, Number(r.passed)])).toEqual([[done, 'scored', 1]]);
    expect((await positions()).filter((id) => id === done || id === open)).toEqual([done]);

    // A call after the end opens the session again; the monitor that scored it does not score it again.
    expect(await call(`done-${tag}`, 'third')).toBe(done);
    const reopened = await h.call('GET', `/v1/sessions/${done}`);
    expect(reopened.body).toMatchObject({ ended_at: null, turn_count: 3 });
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await positions()).filter((id) => id === done || id === open)).toEqual([done]);
    expect(await scoredRows()).toHaveLength(1);
  }, 60_000);

  it('answers 404 for an unknown session and another project’s key, 403 without inference:write', async () => {
    const id = await call('mine', 'hi');
    expect((await h.call('POST', '/v1/sessions/sess_missing/end')).status).toBe(404);
    const other = await h.key(['*'], 'elsewhere');
    const foreign = await h.call('POST', `/v1/sessions/${id}/end`, { key: other.key });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ code: 'not_found', details: { resource: 'session' } });
    const reader = await h.key(['logs:read']);
    const refused = await h.call('POST', `/v1/sessions/${id}/end`, { key: reader.key });
    expect(refused.status).toBe(403);
    expect((await h.call('GET', `/v1/sessions/${id}`)).body.ended_at).toBeNull();
  });
});
