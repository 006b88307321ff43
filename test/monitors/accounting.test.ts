import { sql } from 'kysely';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Every selected call ends scored or errored: a monitor's `selected` equals its results' `num_scored` +
 * `num_errors` (and the metrics' scored + errors) once it has caught up, whatever became of the call —
 * answered and scored, answered and the judge failed, the call itself failed (no output to score), or
 * its chunk could not store its rows however often it was tried (the database refusing them). The judge is a mock provider on loopback; the harness scores inline on both databases.
 */

describe(`monitor accounting (${testDbKind()})`, () => {
  let db: FreshDatabase;
  let h: Harness;
  let mock: MockUpstream;
  let client: OpenAI;
  let n = 0;

  beforeAll(async () => {
    mock = await startMockUpstream({
      record: false,
      reply: (req) => (req.body.model === 'j' ? { json: { score: 1, reasoning: 'fine' } } : 'an answer'),
    });
    db = await freshDatabase();
    h = await startHarness({
      database: db,
      env: { EVALGATE_RUN_POLL_MS: '100', EVALGATE_LOG_FLUSH_MS: '50', EVALGATE_UPSTREAM_RETRIES: '0' },
    });
    for (const [label, upstream] of [
      ['gen', 'g'],
      ['judge', 'j'],
    ]) {
      const r = await h.call('POST', '/v1/models', {
        body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
      });
      expect(r.status, r.text).toBe(201);
    }
    expect((await h.call('POST', '/v1/containers', { body: { label: 'acc' } })).status).toBe(201);
    const ev = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'judge',
        name: 'acc-judge',
        model: 'judge',
        prompt: 'Rate {{output}}',
        pass_threshold: 0.5,
      },
    });
    expect(ev.status, ev.text).toBe(201);
    const m = await h.call('POST', '/v1/monitors', {
      body: { name: 'every', container: 'acc', evaluators: ['acc-judge'], sampling_rate: 1 },
    });
    expect(m.status, m.text).toBe(201);
    client = new OpenAI({
      apiKey: h.admin.key,
      baseURL: `${h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'acc' },
      maxRetries: 0,
    });
  }, 90_000);

  afterAll(async () => {
    await h?.close();
    await mock?.close();
    await db?.drop();
  });

  /** One call through the gateway; whether it was answered. */
  async function call(): Promise<boolean> {
    try {
      await client.chat.completions.create({
        model: 'gen',
        messages: [{ role: 'user', content: `q ${n++}` }],
      });
      return true;
    } catch {
      return false;
    }
  }

  /** The monitor once it has selected `selected` calls and has a row for each. */
  async function caughtUp(selected: number) {
    let last: { m: any; totals: any } | null = null;
    await waitFor(
      async () => {
        const m = (await h.call('GET', '/v1/monitors/every')).body;
        const totals = (await h.call('GET', '/v1/monitors/every/results')).body.totals[0];
        last = { m, totals };
        return m.selected === selected && m.lag_seconds === 0;
      },
      30_000,
      'monitor caught up',
    );
    return last!;
  }

  async function metric(name: string): Promise<number> {
    const text = (await h.call('GET', '/metrics')).text;
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes('name="every"'));
    return line ? Number(line.split(' ').at(-1)) : 0;
  }

  it('counts calls that failed (never judged) and judge failures as errors: selected = scored + errors', async () => {
    // Three answered calls, then two that fail upstream (400, not retried): recorded without output.
    for (let i = 0; i < 3; i++) expect(await call()).toBe(true);
    mock.fail({ status: 400, times: 2, match: (r) => r.body.model === 'g' });
    for (let i = 0; i < 2; i++) expect(await call()).toBe(false);
    // One answered call whose judge call fails: an error of the scoring itself.
    mock.fail({ status: 400, times: 1, match: (r) => r.body.model === 'j' });
    expect(await call()).toBe(true);

    const { m, totals } = await caughtUp(6);
    expect(totals.num_scored).toBe(3);
    expect(totals.num_errors).toBe(3);
    expect(totals.num_scored + totals.num_errors).toBe(m.selected);
    expect(await metric('evalgate_monitor_scored_total')).toBe(3);
    expect(await metric('evalgate_monitor_errors_total')).toBe(3);

    // The failed filter lists every call that was not scored as passed: here, the three errors.
    const failed = await h.call('GET', '/v1/monitors/every/samples?failed=true');
    expect(failed.status).toBe(200);
    expect(failed.body.total).toBe(3);
    // Listed as they are: the scoring's own error, or the failed call's own error (never judged).
    expect(failed.body.data.every((s: any) => s.status === 'error')).toBe(true);
    const calls = failed.body.data.filter((s: any) => s.output === null);
    expect(calls).toHaveLength(2);
    for (const s of calls) {
      expect(s.error?.code).not.toBe('missing_data');
      expect(s.error?.message).toMatch(/^The recorded call failed/);
    }
  });

  it('gives a chunk that fails every attempt error rows: selected = scored + errors still', async () => {
    const before = (await h.call('GET', '/v1/monitors/every/results')).body.totals[0];
    const selected = (await h.call('GET', '/v1/monitors/every')).body.selected;
    // This test's own database refuses scored rows (a trigger), as a failing disk or a bad migration would.
    const refusing =
      testDbKind() === 'sqlite'
        ? [
            sql`create trigger refuse_scored before insert on run_samples when new.status = 'scored'
                begin select raise(abort, 'the store refuses scored rows'); end`,
          ]
        : [
            sql`create function refuse_scored() returns trigger as $$ begin
                if new.status = 'scored' then raise exception 'the store refuses scored rows'; end if;
                return new; end $$ language plpgsql`,
            sql`create trigger refuse_scored before insert on run_samples for each row
                execute function refuse_scored()`,
          ];
    for (const statement of refusing) await statement.execute(h.services.db);
    try {
      for (let i = 0; i < 2; i++) expect(await call()).toBe(true);
      const { m, totals } = await caughtUp(selected + 2);
      expect(totals.num_scored).toBe(before.num_scored);
      expect(totals.num_errors).toBe(before.num_errors + 2);
      expect(totals.num_scored + totals.num_errors).toBe(m.selected);
      const errors = (await h.call('GET', '/v1/monitors/every/samples?failed=true&limit=100')).body.data;
      const givenUp = errors.filter((s: any) => s.error?.code === 'chunk_failed');
      expect(givenUp).toHaveLength(2);
      for (const s of givenUp) {
        expect(s.status).toBe('error');
        expect(s.error.message).toMatch(/^Scoring failed 5 times: .*the store refuses scored rows/);
      }
    } finally {
      await sql`drop trigger refuse_scored${testDbKind() === 'sqlite' ? sql`` : sql` on run_samples`}`.execute(
        h.services.db,
      );
    }
  });
});
