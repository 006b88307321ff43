import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnprocessableEntityError } from '../../src/client/index.js';
import { guardBlockOf, guardVerdictsOf, matchesVerdicts } from '../../src/guards/recorded.js';
import { evalgateJson } from '../cli/cli-helpers.js';
import { clientOf } from '../client/helpers.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { waitFor } from '../helpers/wait.js';
import { AWS, caught } from './guard-helpers.js';

/*
 * Monitors over guard verdicts: a policy blocks secrets and flags refund requests; calls go through the
 * official OpenAI SDK to the gateway and the mock upstream; monitors select calls by the verdicts recorded
 * on their task logs and score them with code-free graders. A monitor selecting guard verdicts scores a
 * blocked call on its input, with the block as its output; a monitor that does not keeps it an error.
 */

let g: Gateway;
let openai: OpenAI;
const blocked: string[] = [];
const flagged: string[] = [];
const clean: string[] = [];

const ids = (xs: string[]) => [...xs].sort();

async function createMonitor(body: Record<string, unknown>) {
  const res = await g.h.call('POST', '/v1/monitors', { body: { container: 'guarded', ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** Every sample of a monitor once it has scored (or errored) all it selected, `selected` of them. */
async function samplesOf(ref: string, selected: number): Promise<any[]> {
  let data: any[] = [];
  await waitFor(
    async () => {
      const m = (await g.h.call('GET', `/v1/monitors/${ref}`)).body;
      if (m.selected !== selected || m.lag_seconds !== 0) return false;
      const res = await g.h.call('GET', `/v1/monitors/${ref}/samples?limit=100`);
      data = res.body.data;
      return data.length === selected * m.evaluators.length;
    },
    60_000,
    `monitor ${ref} settled`,
  );
  return data;
}

const logIdOf = (headers: Headers | undefined) => headers?.get('x-evalgate-log-id') ?? '';

beforeAll(async () => {
  g = await startGateway({ EVALGATE_RUN_POLL_MS: '100', EVALGATE_LOG_FLUSH_MS: '50' });
  const setup: [string, unknown][] = [
    ['/v1/models', { label: 'm', base_url: g.mock.baseUrl, upstream_model: 'm', api: 'chat' }],
    ['/v1/containers', { label: 'guarded' }],
    [
      '/v1/guards',
      {
        name: 'support',
        applies_to: { containers: ['guarded'] },
        checks: [
          { name: 'no-secrets', guard: { type: 'secrets' } },
          { name: 'refunds', guard: { type: 'deny_list', terms: ['refund'] }, action: 'flag' },
        ],
      },
    ],
    // Was the block right? The blocked input held a key.
    [
      '/v1/evaluators',
      {
        type: 'string_check',
        name: 'held-a-key',
        input: '{{item.input[0].content}}',
        reference: 'AKIA',
        operation: 'like',
      },
    ],
    // The guard's decision, as the output the caller was answered.
    [
      '/v1/evaluators',
      {
        type: 'string_check',
        name: 'block-named',
        input: '{{sample.output_text}}',
        reference: "Blocked by guard 'no-secrets'",
        operation: 'like',
      },
    ],
    [
      '/v1/evaluators',
      {
        type: 'string_check',
        name: 'answered',
        input: '{{sample.output_text}}',
        reference: 'Hello',
        operation: 'like',
      },
    ],
  ];
  for (const [path, body] of setup) {
    const res = await g.h.call('POST', path, { body });
    expect(res.status, res.text).toBe(201);
  }
  openai = g.client({ headers: { 'X-Evalgate-Container': 'guarded' } });
}, 60_000);

afterAll(async () => {
  await g?.close();
});

describe('the recorded verdicts, read by the guards room', () => {
  const md = {
    guards: [
      { guard: 'no-secrets', stage: 'input', verdict: 'passed', score: 1 },
      { guard: 'refunds', stage: 'input', verdict: 'flagged', score: 0 },
      { guard: 'odd', verdict: 'maybe' },
      'not a verdict',
    ],
  };

  it('lists well-formed verdicts and matches a query on one verdict at a time', () => {
    expect(guardVerdictsOf(md).map((v) => [v.guard, v.verdict])).toEqual([
      ['no-secrets', 'passed'],
      ['refunds', 'flagged'],
    ]);
    expect(guardVerdictsOf({ guards: 'x' })).toEqual([]);
    expect(matchesVerdicts(md, { verdicts: ['flagged'] })).toBe(true);
    expect(matchesVerdicts(md, { verdicts: ['flagged'], names: ['refunds'] })).toBe(true);
    // Flagged by one check, passed by another: no single verdict is both.
    expect(matchesVerdicts(md, { verdicts: ['flagged'], names: ['no-secrets'] })).toBe(false);
    expect(matchesVerdicts(md, {})).toBe(true);
    expect(matchesVerdicts({}, {})).toBe(false);
  });

  it("knows a guard's block from an upstream's own content filter", () => {
    const error = { code: 'content_filter', message: "Blocked by guard 'no-secrets' (input): found" };
    const guarded = { guards: [{ guard: 'no-secrets', stage: 'input', verdict: 'blocked', score: 0 }] };
    expect(guardBlockOf({ status: 'error', error, metadata: guarded })?.message).toBe(error.message);
    expect(guardBlockOf({ status: 'error', error, metadata: {} })).toBeNull();
    expect(
      guardBlockOf({ status: 'error', error: { code: 'upstream_error' }, metadata: guarded }),
    ).toBeNull();
    expect(guardBlockOf({ status: 'success', error: null, metadata: guarded })).toBeNull();
  });
});

describe('monitors over guard verdicts', () => {
  it('pick up exactly the calls with the verdicts asked for, and score blocked calls on their input', async () => {
    await createMonitor({
      name: 'blocked-calls',
      evaluators: ['held-a-key', 'block-named'],
      filter: { guards: { verdicts: ['blocked'] } },
    });
    await createMonitor({
      name: 'refund-flags',
      evaluators: ['answered'],
      filter: { guards: { verdicts: ['flagged'], names: ['refunds'] } },
    });
    // Any verdict of the check: every call it ran on (a blocked call stops before it).
    await createMonitor({
      name: 'refunds-ran',
      evaluators: ['answered'],
      filter: { guards: { names: ['refunds'] } },
    });
    await createMonitor({ name: 'all-calls', evaluators: ['held-a-key'] });

    for (const content of [`my key is ${AWS}`, `use ${AWS} for the upload`]) {
      const err = await caught(
        openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }] }),
      );
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.code).toBe('content_filter');
      blocked.push(logIdOf(err.headers));
    }
    const streamed = await caught(
      openai.chat.completions.create({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: `streamed ${AWS}` }],
      }),
    );
    expect(streamed).toBeInstanceOf(OpenAI.BadRequestError);
    blocked.push(logIdOf(streamed.headers));
    for (const [list, content] of [
      [flagged, 'I want a refund'],
      [flagged, 'refund my order please'],
      [clean, 'What are your hours?'],
      [clean, 'Thanks!'],
    ] as const) {
      const { data, response } = await openai.chat.completions
        .create({ model: 'm', messages: [{ role: 'user', content }] })
        .withResponse();
      expect(data.choices[0]?.message.content).toBe('Hello from the mock upstream.');
      list.push(logIdOf(response.headers));
    }
    for (const id of [...blocked, ...flagged, ...clean]) expect(id).toMatch(/^log_/);
    expect(g.mock.requests).toHaveLength(4);

    const onBlocked = await samplesOf('blocked-calls', blocked.length);
    expect(ids([...new Set(onBlocked.map((s) => s.task_log_id))])).toEqual(ids(blocked));
    // Scored, not errors: the input held a key (the block was right), the output is the block.
    for (const s of onBlocked) {
      expect(s).toMatchObject({ status: 'scored', passed: true, score: 1 });
      expect(String(s.output)).toMatch(/^Blocked by guard 'no-secrets' \(input\)/);
    }

    const onFlags = await samplesOf('refund-flags', flagged.length);
    expect(ids(onFlags.map((s) => s.task_log_id))).toEqual(ids(flagged));
    for (const s of onFlags) expect(s).toMatchObject({ status: 'scored', passed: true });

    const ran = await samplesOf('refunds-ran', flagged.length + clean.length);
    expect(ids(ran.map((s) => s.task_log_id))).toEqual(ids([...flagged, ...clean]));

    // A monitor that does not select by guard verdicts keeps a blocked call what it is: a failed call.
    const all = await samplesOf('all-calls', blocked.length + flagged.length + clean.length);
    for (const s of all) {
      if (blocked.includes(s.task_log_id)) {
        expect(s.status).toBe('error');
        expect(s.error.code).toBe('content_filter');
      } else expect(s).toMatchObject({ status: 'scored', passed: false });
    }
    const results = (await g.h.call('GET', '/v1/monitors/blocked-calls/results')).body;
    for (const t of results.totals) expect(t).toMatchObject({ num_scored: 3, num_passed: 3, num_errors: 0 });
  });

  it('refuses an unknown verdict, a stray field and a session monitor with a guards filter (422)', async () => {
    const bad = await g.h.call('POST', '/v1/monitors', {
      body: {
        name: 'bad',
        container: 'guarded',
        evaluators: ['answered'],
        filter: { guards: { verdicts: ['blocked', 'denied'] } },
      },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc.slice(0, 4)).toEqual(['body', 'filter', 'guards', 'verdicts']);
    const stray = await g.h.call('POST', '/v1/monitors', {
      body: {
        name: 'bad',
        container: 'guarded',
        evaluators: ['answered'],
        filter: { guards: { kinds: [] } },
      },
    });
    expect(stray.status).toBe(422);
    const patched = await g.h.call('PATCH', '/v1/monitors/refund-flags', {
      body: { filter: { guards: { verdicts: ['nope'] } } },
    });
    expect(patched.status).toBe(422);
    const session = await g.h.call('POST', '/v1/monitors', {
      body: {
        name: 'sessions',
        container: 'guarded',
        evaluators: ['answered'],
        unit: 'session',
        filter: { guards: { verdicts: ['blocked'] } },
      },
    });
    expect(session.status).toBe(422);
    expect(session.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'filter'], msg: expect.stringContaining('guards') }),
    ]);
  });

  it("another project's key finds no such monitor (404)", async () => {
    const other = await g.h.key(['*'], 'elsewhere');
    for (const [method, path, body] of [
      ['GET', '/v1/monitors/blocked-calls', undefined],
      ['GET', '/v1/monitors/blocked-calls/samples', undefined],
      ['PATCH', '/v1/monitors/blocked-calls', { filter: { guards: { verdicts: ['flagged'] } } }],
    ] as const) {
      const res = await g.h.call(method, path, { key: other.key, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  it('the TypeScript client and the CLI pass the guards filter through', async () => {
    const client = clientOf(g.h);
    const m = await client.monitors.create({
      name: 'from-client',
      container: 'guarded',
      evaluators: ['answered'],
      filter: { guards: { verdicts: ['redacted', 'error'] } },
    });
    expect(m.filter).toEqual({ guards: { verdicts: ['redacted', 'error'] } });
    await expect(
      client.monitors.update('from-client', {
        filter: { guards: { verdicts: ['wrong' as 'blocked'] } },
      }),
    ).rejects.toBeInstanceOf(UnprocessableEntityError);
    const cli = await evalgateJson(g.h, [
      'monitors',
      'create',
      '--name',
      'from-cli',
      '--container',
      'guarded',
      '--evaluator',
      'held-a-key',
      '--guard-verdict',
      'blocked',
      '--guard',
      'no-secrets',
    ]);
    expect(cli.filter).toEqual({ guards: { verdicts: ['blocked'], names: ['no-secrets'] } });
  });
});
