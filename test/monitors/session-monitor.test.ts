import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectionPoint } from '../../src/monitors/selection.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Must-show 4: a session monitor scores each session once it has been idle for `idle_seconds`, exactly
 * once, sampled by session id; the server restarted between sessions (a new process on the same
 * database) neither skips nor repeats one; a session active again after it was scored is not scored again.
 */
describe(`session monitors (${testDbKind()})`, () => {
  let db: FreshDatabase;
  let h: Harness;
  let mock: MockUpstream;
  /** The conversation each judge call was given. */
  const judged: string[] = [];
  let all = { id: '', run_id: '' };
  let half = { id: '', run_id: '' };
  const ids = new Map<string, string>();

  const env = {
    EVALGATE_RUN_POLL_MS: '100',
    EVALGATE_LOG_FLUSH_MS: '50',
    // The sweep that finds idle sessions runs with the monitors' catch-up pass.
    EVALGATE_RUN_RECONCILE_MS: '200',
  };

  beforeAll(async () => {
    mock = await startMockUpstream({
      record: false,
      reply: (req) => {
        if (req.body.model === 'j') {
          judged.push(JSON.stringify(req.body.messages));
          return { json: { score: 1, reasoning: 'on topic' } };
        }
        const last = (req.body.messages as { content: string }[]).at(-1)?.content ?? '';
        return `answer to ${last}`;
      },
    });
    db = await freshDatabase();
    h = await startHarness({ database: db, env });
    for (const [label, upstream] of [
      ['gen', 'g'],
      ['judge', 'j'],
    ]) {
      await h.call('POST', '/v1/models', {
        body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
      });
    }
    await h.call('POST', '/v1/containers', { body: { label: 'c' } });
    for (const body of [
      {
        type: 'judge',
        name: 'relevant',
        model: 'judge',
        prompt: 'Is this conversation on topic?\n{{conversation}}',
      },
      { type: 'trajectory_length', name: 'two-turns', length_of: 'turns', min_length: 2, max_length: 2 },
    ]) {
      const ev = await h.call('POST', '/v1/evaluators', { body });
      expect(ev.status, ev.text).toBe(201);
      ids.set(body.name, ev.body.id);
    }
    const create = async (name: string, rate: number) => {
      const m = await h.call('POST', '/v1/monitors', {
        body: {
          name,
          container: 'c',
          evaluators: ['relevant', 'two-turns'],
          unit: 'session',
          idle_seconds: 1,
          sampling_rate: rate,
        },
      });
      expect(m.status, m.text).toBe(201);
      expect(m.body).toMatchObject({ unit: 'session', idle_seconds: 1 });
      return { id: m.body.id as string, run_id: m.body.run_id as string };
    };
    all = await create('sessions', 1);
    half = await create('half', 0.5);
  }, 90_000);

  afterAll(async () => {
    await h?.close();
    await mock?.close();
    await db?.drop();
  });

  /** A conversation of two calls under one session header. */
  async function converse(session: string): Promise<void> {
    const client = new OpenAI({
      apiKey: h.admin.key,
      baseURL: `${h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'c', 'X-Evalgate-Session': session },
      maxRetries: 0,
    });
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: `hello from ${session}` },
    ];
    const first = await client.chat.completions.create({ model: 'gen', messages });
    messages.push(first.choices[0]!.message, { role: 'user', content: `and then ${session}?` });
    await client.chat.completions.create({ model: 'gen', messages });
  }

  const selections = (monitorId: string) =>
    h.services.db
      .selectFrom('monitor_selections')
      .select(['position', 'log_id'])
      .where('monitor_id', '=', monitorId)
      .orderBy('position')
      .execute();
  const samples = (runId: string) =>
    h.services.db
      .selectFrom('run_samples')
      .select(['position', 'evaluator_id', 'status', 'score', 'passed'])
      .where('run_id', '=', runId)
      .execute();
  const sessionIds = async () => {
    await h.services.logWriter.flush();
    const res = await h.call('GET', '/v1/sessions?container=c&limit=100');
    expect(res.status).toBe(200);
    return new Map<string, string>(
      res.body.data.map((s: { id: string; key: string | null }) => [s.key ?? '', s.id]),
    );
  };

  it('scores each idle session exactly once, across a restart, sampled by session id', async () => {
    for (const s of ['s1', 's2', 's3']) await converse(s);
    // Idle for a second, then swept: three sessions, two evaluators each.
    const firstIds = [...(await sessionIds()).values()];
    const firstHalf = firstIds.filter((id) => selectionPoint(half.id, id) < 0.5).length;
    await waitFor(
      async () =>
        (await samples(all.run_id)).length === 6 && (await samples(half.run_id)).length === 2 * firstHalf,
      30_000,
    );
    expect(judged).toHaveLength(3 + firstHalf);

    // s4 and s5 start, and the process stops before they are idle; s1 speaks again after it was scored.
    for (const s of ['s4', 's5']) await converse(s);
    await converse('s1');
    await h.services.logWriter.flush();
    await h.close();
    h = await startHarness({ database: db, env });
    await waitFor(async () => (await samples(all.run_id)).length === 10, 30_000);
    // A few more sweeps: nothing else is selected.
    await new Promise((r) => setTimeout(r, 1_500));

    const byKey = await sessionIds();
    expect(byKey.size).toBe(5);
    const chosen = await selections(all.id);
    expect(chosen.map((c) => c.position)).toEqual([0, 1, 2, 3, 4]);
    expect(new Set(chosen.map((c) => c.log_id))).toEqual(new Set(byKey.values()));
    const rows = await samples(all.run_id);
    expect(rows).toHaveLength(10);
    for (const p of [0, 1, 2, 3, 4]) {
      const at = rows.filter((r) => r.position === p);
      expect(at.map((r) => r.evaluator_id).sort()).toEqual(
        [ids.get('relevant'), ids.get('two-turns')].sort(),
      );
      expect(at.every((r) => r.status === 'scored')).toBe(true);
    }
    // Two turns each when scored (s1's third call came after: it was not scored again).
    expect(
      rows.filter((r) => r.evaluator_id === ids.get('two-turns')).every((r) => Number(r.passed) === 1),
    ).toBe(true);

    // The half-rate monitor chose exactly the sessions whose point is under its rate, each once.
    const expectedHalf = [...byKey.values()].filter((id) => selectionPoint(half.id, id) < 0.5).sort();
    const halfChosen = await selections(half.id);
    expect(halfChosen.map((c) => c.log_id).sort()).toEqual(expectedHalf);
    expect(await samples(half.run_id)).toHaveLength(expectedHalf.length * 2);

    // The judge saw each chosen session's conversation for each monitor that chose it: exactly once for
    // the sessions scored before the restart (counted above); a chunk cut short by the stop is asked
    // again by the next process (its score is still stored once, as checked above).
    for (const [key, id] of byKey) {
      const times = judged.filter((p) => p.includes(`hello from ${key}`)).length;
      const choosers = 1 + (expectedHalf.includes(id) ? 1 : 0);
      expect(times, key).toBeGreaterThanOrEqual(choosers);
      expect(times, key).toBeLessThanOrEqual(choosers * 2);
    }
    const monitor = await h.call('GET', `/v1/monitors/${all.id}`);
    expect(monitor.body).toMatchObject({ unit: 'session', selected: 5 });
  }, 120_000);

  it('refuses what a session monitor cannot do', async () => {
    const bad = async (body: Record<string, unknown>) => {
      const res = await h.call('POST', '/v1/monitors', {
        body: { name: 'x', container: 'c', evaluators: ['relevant'], ...body },
      });
      expect(res.status, JSON.stringify(body)).toBe(422);
      return res.body.detail.map((d: { loc: string[] }) => d.loc.join('.'));
    };
    expect(await bad({ unit: 'session', filter: { models: ['gen'] } })).toContain('body.filter');
    expect(await bad({ unit: 'session', backfill: { since: '2020-01-01T00:00:00Z' } })).toContain(
      'body.backfill',
    );
    expect(await bad({ idle_seconds: 5 })).toContain('body.idle_seconds');
    expect(await bad({ unit: 'session', idle_seconds: 0 })).toContain('body.idle_seconds');
    expect(await bad({ unit: 'turn' })).toContain('body.unit');
    const other = await h.key(['*'], 'elsewhere');
    expect((await h.call('GET', `/v1/monitors/${all.id}`, { key: other.key })).status).toBe(404);
  });
});
