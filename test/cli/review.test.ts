// Database-independent: the CLI's view of the review API; the review store runs on both databases in test/review.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness, type TestKey } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { evalgate } from './cli-helpers.js';
import { evalgateWithInput } from './review-helpers.js';

// `evalgate queues …` and `evalgate review` as a person uses them: tables, usage errors, another
// project's key, and the review loop with its keys (answers piped, one a line): a key off the scale asked
// again, p/f, s to skip (the item never comes back), q to stop (the claim kept for the next session).

let h: Harness;
let mock: MockUpstream;
let runId: string;
let alice: TestKey;

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      const i = Number(/a(\d+)/.exec(String(messages.at(-1)?.content ?? ''))?.[1] ?? 0);
      return { json: { score: i % 2 === 0 ? 1 : 0, reasoning: `judged a${i}` } };
    },
  });
  h = await startHarness();
  await h.call('POST', '/v1/models', {
    body: { label: 'jm', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: 3 }, (_, i) => ({
    input: `q${i}`,
    output: `a${i}`,
    metadata: { ctx: `c${i}` },
  }));
  await h.call('POST', '/v1/datasets', { body: { label: 'three', items } });
  await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'ok',
      model: 'jm',
      prompt: 'Right? {{output}}',
      pass_threshold: 0.5,
      scale: { type: 'pass_fail' },
    },
  });
  const run = await h.call('POST', '/v1/evaluation/runs', {
    body: { container: 'c', evaluators: ['ok'], sample: { type: 'dataset', dataset: 'three', range: '0:3' } },
  });
  runId = run.body.id;
  await waitFor(
    async () => (await h.call('GET', `/v1/evaluation/runs/${runId}`)).body.status === 'completed',
    60_000,
  );
  // A reviewer sees the run's samples: it needs what reading them needs (a dataset, and the container's
  // task logs as the omitted ground truth).
  alice = await h.key(['review:read', 'review:write', 'evaluation:read', 'data:read', 'logs:read']);
}, 300_000);

afterAll(async () => {
  await h?.close();
  await mock?.close();
}, 300_000);

describe('evalgate queues and review', { timeout: 180_000 }, () => {
  it('creates a queue, adds items and says what is wrong with bad flags', async () => {
    const created = await evalgate(h, ['queues', 'create', 'checks', '--evaluator', 'ok']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^Created queue checks \(aq_\w+\)/);
    const nothing = await evalgate(h, ['queues', 'add', 'checks']);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('nothing to add');
    const noRun = await evalgate(h, ['queues', 'add', 'checks', '--failed']);
    expect(noRun.code).toBe(1);
    expect(noRun.stderr).toContain('give --run RUN');
    const badSample = await evalgate(h, ['queues', 'add', 'checks', '--sample', 'nope']);
    expect(badSample.stderr).toContain('--sample takes RUN:POSITION');
    const samples = [0, 1, 2].flatMap((i) => ['--sample', `${runId}:${i}`]);
    const added = await evalgate(h, ['queues', 'add', 'checks', ...samples]);
    expect(added.stdout.trim()).toBe('Added 3 items (0 already queued)');
    const list = await evalgate(h, ['queues', 'list']);
    expect(list.stdout).toMatch(/checks\s*│ ok\s*│ 3\s*│ 3\s*│ 0/);
    expect(list.stdout).toContain('1 of 1 queues');
    const got = await evalgate(h, ['queues', 'get', 'checks']);
    expect(got.stdout).toContain('ok (pass_fail)');
    expect(got.stdout).toContain('3 (3 open, 0 done, 0 flagged)');
    const unknown = await evalgate(h, ['queues', 'create', 'bad', '--evaluator', 'missing-one']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^evalgate: 422/);
  });

  it('reviews with keys: off the scale asked again, pass, skip, quit keeping the claim', async () => {
    const first = await evalgateWithInput(h, ['review', 'checks'], 'x\np\ns\nq\n', alice.key);
    expect(first.code, first.stderr).toBe(0);
    const out = first.stdout;
    expect(out).toContain('Queue checks: 3 open of 3.');
    expect(out).toContain('Input:\n  q0');
    expect(out).toContain('Output:\n  a0');
    // Judges are named by name, not by id.
    expect(out).toMatch(/Judge ok: /);
    expect(out).toContain('judged a0');
    expect(out).toContain('ok [p pass · f fail · s skip · q quit]');
    expect(out).toContain('"x" is not on the scale (p pass · f fail)');
    expect(out).toContain('Skipped.');
    expect(out).toMatch(/Stopped\. Your claim on aqi_\w+ is kept until \d{4}-/);
    expect(out).toContain('Reviewed 1, skipped 1.');

    // The next session gets the kept claim first; the skipped item never comes back to alice.
    const second = await evalgateWithInput(h, ['review', 'checks'], 'f\n', alice.key);
    expect(second.stdout).toContain('Input:\n  q2');
    expect(second.stdout).toContain('Nothing left to review in this queue.');
    expect(second.stdout).toContain('Reviewed 1, skipped 0.');

    const reviews = await h.call('GET', '/v1/annotation-queues/checks/reviews?limit=10');
    const items = await h.call('GET', '/v1/annotation-queues/checks/items?limit=10');
    const position = new Map(
      items.body.data.map((i: { id: string; position: number }) => [i.id, i.position]),
    );
    const answers = Object.fromEntries(
      reviews.body.data.map((r: { item_id: string; passed: boolean }) => [position.get(r.item_id), r.passed]),
    );
    expect(answers).toEqual({ 0: true, 2: false });
    const done = await evalgate(h, ['queues', 'items', 'checks', '--state', 'done']);
    expect(done.stdout).toContain('2 of 2 items');
    const badState = await evalgate(h, ['queues', 'items', 'checks', '--state', 'nope']);
    expect(badState.stderr).toContain('--state is open, done or flagged');
    const agreement = await evalgate(h, ['evaluators', 'agreement', 'ok', '--queue', 'checks']);
    expect(agreement.code, agreement.stderr).toBe(0);
    // Position 0: both pass; position 2: the judge passes, alice fails it.
    expect(agreement.stdout).toMatch(/% agreement\s*│ 0\.500/);
    expect(agreement.stdout).toMatch(/n\s*│ 2/);
  });

  it("answers 404 to another project's key", async () => {
    const other = await h.key(['*'], 'elsewhere');
    for (const args of [
      ['queues', 'get', 'checks'],
      ['queues', 'items', 'checks'],
      ['evaluators', 'agreement', 'ok'],
    ]) {
      const res = await evalgateWithInput(h, args, '', other.key);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^evalgate: 404 not_found/);
    }
    const review = await evalgateWithInput(h, ['review', 'checks'], 'p\n', other.key);
    expect(review.stderr).toMatch(/^evalgate: 404 not_found/);
  });
});
