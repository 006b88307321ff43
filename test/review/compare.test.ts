import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evalgate, evalgateJson } from '../cli/cli-helpers.js';
import { evalgateWithInput } from '../cli/review-helpers.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness, type TestKey } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

// Must-show 2 end to end, on both databases, through the CLI as a person would: a judge run, its items
// queued and reviewed in `evalgate review` (answers piped), exported as a dataset, a revised judge prompt
// run over it beside the old one, and both prompts' agreement side by side (API and `--compare`).

let h: Harness;
let mock: MockUpstream;
let reviewer: TestKey;
const N = 6;
/** The people grade every answer 2, except the one at position 3, graded 3. */
const HUMAN = Array.from({ length: N }, (_, i) => (i === 3 ? 3 : 2));

async function runOver(evaluators: string[], dataset: string): Promise<string> {
  const run = await h.call('POST', '/v1/evaluation/runs', {
    body: { container: 'c', evaluators, sample: { type: 'dataset', dataset, range: '0:100' } },
  });
  expect(run.status, run.text).toBe(201);
  await waitFor(
    async () => (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status === 'completed',
    60_000,
  );
  return run.body.id;
}

beforeAll(async () => {
  // The old prompt grades everything 4; the revised one ("STRICT") grades 2, as the people mostly do.
  mock = await startMockUpstream({
    reply: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      const prompt = String(messages.at(-1)?.content ?? '');
      return { json: { score: prompt.includes('STRICT') ? 2 : 4, reasoning: 'graded' } };
    },
  });
  h = await startHarness();
  await h.call('POST', '/v1/models', {
    body: { label: 'jm', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: N }, (_, i) => ({ input: `question ${i}`, output: `answer ${i}` }));
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'answers', items } })).status).toBe(201);
  // A reviewer sees the run's samples: it needs what reading them needs (the run reads a dataset and,
  // as its omitted ground truth, the container's task logs).
  reviewer = await h.key(['review:read', 'review:write', 'evaluation:read', 'data:read', 'logs:read']);
}, 300_000);

afterAll(async () => {
  await h?.close();
  await mock?.close();
}, 300_000);

const PROMPT = 'Grade the answer from 1 to 5.\n\nQuestion: {{input}}\nOutput: {{output}}';
const scale = { type: 'ordinal', min: 1, max: 5 };

describe('the compare loop through the CLI', { timeout: 240_000 }, () => {
  it('reviews, exports, runs a revised prompt and shows both agreements side by side', async () => {
    const v1 = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'grade', model: 'jm', prompt: PROMPT, scale, pass_threshold: 3 },
    });
    expect(v1.status, v1.text).toBe(201);
    const first = await runOver(['grade'], 'answers');

    const queue = await evalgateJson(h, ['queues', 'create', 'loop', '--evaluator', 'grade', '--comment']);
    expect(queue.rubric.evaluators.map((e: { name: string }) => e.name)).toEqual(['grade']);
    const added = await evalgateJson(h, ['queues', 'add', 'loop', '--run', first, '--score-min', '1']);
    expect(added).toMatchObject({ added: N, already_queued: 0 });

    // Items are claimed oldest first, so the answers are piped in position order: a grade and a comment.
    const answers = HUMAN.map((g, i) => `${g}\n${i === 3 ? '' : 'too generous'}\n`).join('');
    const review = await evalgateWithInput(h, ['review', 'loop', '--hide-judge'], answers, reviewer.key);
    expect(review.stderr).toBe('');
    expect(review.code).toBe(0);
    expect(review.stdout).toContain('Output:\n  answer 0');
    expect(review.stdout).toContain('grade [1..5 · s skip · q quit]');
    expect(review.stdout).toContain('Nothing left to review in this queue.');
    expect(review.stdout).toContain(`Reviewed ${N}, skipped 0.`);
    // Blind review: the judge's grade shows only once the person's is saved.
    expect(review.stdout.indexOf('Judge ')).toBeGreaterThan(review.stdout.indexOf('Saved.'));

    const reviews = await h.call('GET', '/v1/annotation-queues/loop/reviews?limit=100');
    expect(reviews.body.total).toBe(N);
    const items = await h.call('GET', '/v1/annotation-queues/loop/items?limit=100');
    const positionOf = new Map<string, number>(
      items.body.data.map((i: { id: string; position: number }) => [i.id, i.position]),
    );
    for (const r of reviews.body.data) {
      const position = positionOf.get(r.item_id)!;
      expect(r.score).toBe(HUMAN[position]);
      expect(r.comment).toBe(position === 3 ? null : 'too generous');
      expect(r.reviewer).toBe(`key:${reviewer.id}`);
    }

    const dataset = await evalgateJson(h, ['queues', 'export', 'loop', '--label', 'reviewed']);
    expect(dataset.item_count).toBe(N);
    const v2 = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'judge',
        name: 'grade-v2',
        model: 'jm',
        prompt: `${PROMPT}\nSTRICT`,
        scale,
        pass_threshold: 3,
      },
    });
    expect(v2.status, v2.text).toBe(201);
    const second = await runOver(['grade', 'grade-v2'], 'reviewed');

    // The API: the old prompt never agrees (4 against 2 or 3), the revised one on 5 of 6.
    const api = await h.call('GET', `/v1/evaluators/grade/agreement?run=${second}&compare=grade-v2`);
    expect(api.status, api.text).toBe(200);
    const old = api.body.groups;
    const revised = api.body.compare.groups;
    expect(old).toHaveLength(1);
    expect(revised).toHaveLength(1);
    expect(old[0]).toMatchObject({ n: N, percent_agreement: 0 });
    expect(old[0].mae).toBeCloseTo((2 * 5 + 1) / N, 12);
    expect(revised[0]).toMatchObject({ n: N });
    expect(revised[0].percent_agreement).toBeCloseTo(5 / N, 12);
    expect(revised[0].mae).toBeCloseTo(1 / N, 12);
    expect(revised[0].prompt_hash).not.toBe(old[0].prompt_hash);

    // The CLI: the same figures, as JSON and side by side in a table.
    const json = await evalgateJson(h, [
      'evaluators',
      'agreement',
      'grade',
      '--run',
      second,
      '--compare',
      'grade-v2',
    ]);
    expect(json).toEqual(api.body);
    const shown = await evalgate(h, [
      'evaluators',
      'agreement',
      'grade',
      '--run',
      second,
      '--compare',
      'grade-v2',
    ]);
    expect(shown.code, shown.stderr).toBe(0);
    const text = shown.stdout;
    expect(text).toContain(`Agreement with human reviews over run ${second}`);
    expect(text).toContain(`prompt ${old[0].prompt_hash}`);
    expect(text).toContain(`prompt ${revised[0].prompt_hash}`);
    const row = (label: string) => text.split('\n').find((l) => l.includes(`│ ${label} `)) ?? '';
    expect(row('% agreement')).toMatch(/0\.000.*0\.833/);
    expect(row('MAE')).toMatch(/1\.833.*0\.167/);
    expect(row('n')).toMatch(/6.*6/);

    // Over the queue's reviews (no run), the old prompt alone, with its interval.
    const queueView = await evalgate(h, ['evaluators', 'agreement', 'grade', '--queue', 'loop']);
    expect(queueView.code, queueView.stderr).toBe(0);
    expect(queueView.stdout).toContain('over queue');
    expect(queueView.stdout).toContain('95 % interval');
  });
});
