/**
 * The size limit of a session read: GET /v1/sessions/{id} returns at most EVALGATE_SESSION_MAX_TURNS
 * turns (a longer session is read in pages with turns_offset), refuses a turns_limit over it with 422,
 * and refuses with 413 a page whose stored calls hold more than EVALGATE_SESSION_MAX_BYTES; another
 * project's key gets 404. A session run records an error for a session longer than it reads (1,000
 * turns) rather than scoring part of it. Both databases.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContainer } from '../../src/catalog/containers/resolve.js';
import { MAX_TURNS } from '../../src/sessions/service.js';
import { newId } from '../../src/shared/ids.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { waitFor } from '../helpers/wait.js';

let g: Gateway;
const MODEL = 'openai/gpt-4o-mini';

beforeAll(async () => {
  g = await startGateway({ EVALGATE_SESSION_MAX_TURNS: '2', EVALGATE_SESSION_MAX_BYTES: '4096' });
  g.mock.set({ reply: (req) => ({ text: `echo ${String(req.body?.messages?.length ?? 0)}` }) });
  const res = await g.h.call('POST', '/v1/containers', { body: { label: 'limits' } });
  expect(res.status).toBe(201);
}, 300_000);
afterAll(async () => {
  await g?.close();
}, 60_000);

async function chat(session: string, content: string): Promise<void> {
  const client = g.client({ headers: { 'x-evalgate-container': 'limits', 'x-evalgate-session': session } });
  await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }] });
}

async function sessionId(key: string): Promise<string> {
  await g.h.app.services.logWriter.flush();
  const res = await g.h.call('GET', '/v1/sessions?container=limits&limit=100');
  expect(res.status).toBe(200);
  const found = res.body.data.find((s: { key: string }) => s.key === key);
  expect(found, `session ${key}`).toBeTruthy();
  return found.id;
}

describe('the size limit of a session read', () => {
  it('pages the turns of a session longer than the limit', async () => {
    for (const q of ['one', 'two', 'three']) await chat('long', q);
    const id = await sessionId('long');
    const first = await g.h.call('GET', `/v1/sessions/${id}`);
    expect(first.status).toBe(200);
    expect(first.body.turn_count).toBe(3);
    expect(first.body.turns_offset).toBe(0);
    expect(first.body.turns.map((t: { index: number }) => t.index)).toEqual([0, 1]);
    expect(first.body.turns[0].input[0].content).toBe('one');
    const rest = await g.h.call('GET', `/v1/sessions/${id}?turns_offset=2`);
    expect(rest.status).toBe(200);
    expect(rest.body.turns_offset).toBe(2);
    expect(rest.body.turns.map((t: { index: number }) => t.index)).toEqual([2]);
    expect(rest.body.turns[0].input[0].content).toBe('three');
    const one = await g.h.call('GET', `/v1/sessions/${id}?turns_offset=1&turns_limit=1`);
    expect(one.body.turns.map((t: { input: { content: string }[] }) => t.input[0]!.content)).toEqual(['two']);
    const past = await g.h.call('GET', `/v1/sessions/${id}?turns_offset=10`);
    expect(past.status).toBe(200);
    expect(past.body.turns).toEqual([]);
  }, 120_000);

  it('refuses a turns_limit over the limit, and bad paging, with 422', async () => {
    const id = await sessionId('long');
    const over = await g.h.call('GET', `/v1/sessions/${id}?turns_limit=3`);
    expect(over.status).toBe(422);
    expect(over.body.detail[0].loc).toEqual(['query', 'turns_limit']);
    expect(over.body.detail[0].msg).toContain('turns_limit is at most 2');
    for (const q of ['turns_limit=0', 'turns_offset=-1', 'turns_limit=abc']) {
      const res = await g.h.call('GET', `/v1/sessions/${id}?${q}`);
      expect(res.status, q).toBe(422);
    }
  }, 60_000);

  it('refuses with 413 a page over the byte limit, and serves a smaller page', async () => {
    await chat('big', 'x'.repeat(3000));
    await chat('big', 'y'.repeat(3000));
    const id = await sessionId('big');
    const whole = await g.h.call('GET', `/v1/sessions/${id}`);
    expect(whole.status).toBe(413);
    expect(whole.body.error.code).toBe('payload_too_large');
    expect(whole.body.error.message).toContain('over the limit of 4096 bytes');
    expect(whole.body.error.message).toContain('turns_limit');
    const page = await g.h.call('GET', `/v1/sessions/${id}?turns_limit=1`);
    expect(page.status).toBe(200);
    expect(page.body.turns).toHaveLength(1);
    expect(page.body.turn_count).toBe(2);
  }, 120_000);

  it('answers 404 to another project’s key and for an unknown session', async () => {
    const id = await sessionId('long');
    const other = await g.h.key(['*'], 'another-project');
    const res = await g.h.call('GET', `/v1/sessions/${id}`, { key: other.key });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    const unknown = await g.h.call('GET', '/v1/sessions/sess_missing?turns_limit=1');
    expect(unknown.status).toBe(404);
  }, 60_000);

  it('gives a session run an error, not a partial score, for a session longer than it reads', async () => {
    const projectId = g.h.admin.projectId;
    const container = await loadContainer(g.h.app.services.db, projectId, 'limits');
    const start = Date.now() - 60_000;
    // Recorded by the real writer under one session key, as a long agent run's calls are.
    for (let i = 0; i <= MAX_TURNS; i++) {
      g.h.app.services.logWriter.write({
        id: newId('log'),
        projectId,
        containerId: container,
        model: MODEL,
        input: [{ role: 'user', content: `step ${i}` }],
        output: `done ${i}`,
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        latencyMs: 1,
        cost: 0,
        status: 'success',
        error: null,
        metadata: { route: 'chat' },
        createdAt: new Date(start + i).toISOString(),
        sessionKey: 'marathon',
      });
    }
    const long = await sessionId('marathon');
    expect((await g.h.call('GET', `/v1/sessions/${long}?turns_limit=1`)).body.turn_count).toBe(MAX_TURNS + 1);
    const ev = await g.h.call('POST', '/v1/evaluators', {
      body: { type: 'trajectory_length', name: 'any-length', length_of: 'turns', min_length: 1 },
    });
    expect(ev.status, ev.text).toBe(201);
    const run = await g.h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'limits',
        sample: { type: 'sessions', container: 'limits' },
        // The same sessions as ground truth (no reference); omitted, it would be the container's calls.
        ground_truth: { type: 'sessions', container: 'limits' },
        evaluators: ['any-length'],
      },
    });
    expect(run.status, run.text).toBe(201);
    await waitFor(
      async () => (await g.h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status === 'completed',
      60_000,
    );
    const samples = (await g.h.call('GET', `/v1/evaluation/runs/${run.body.id}/samples?limit=100`)).body.data;
    const marathon = samples.find((s: { item_id: string }) => s.item_id === long);
    expect(marathon).toMatchObject({ status: 'error', error: { code: 'session_too_long' } });
    expect(marathon.error.message).toContain(`${MAX_TURNS + 1} turns`);
    const others = samples.filter((s: { item_id: string }) => s.item_id !== long);
    // The file's two other sessions ('long', 'big') are scored.
    expect(others.map((s: { status: string }) => s.status)).toEqual(['scored', 'scored']);
  }, 180_000);
});
