import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aggregate } from '../../src/engine/aggregate.js';
import type { RunPlan } from '../../src/engine/plan.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

// Must-show 3: a judge's scores under two prompts are never averaged together. A run's judge prompt is the
// one its plan took, so two prompts meet in one run's rows only when rows are scored again under an edited
// evaluator; the rows of a second run over the same data, scored by the edited prompt, stand in for them.

let h: Harness;
let mock: MockUpstream;
const N = 8;

async function completedRun(evaluator: string): Promise<string> {
  const run = await h.call('POST', '/v1/evaluation/runs', {
    body: {
      container: 'c',
      evaluators: [evaluator],
      sample: { type: 'dataset', dataset: 'eight', range: `0:${N}` },
    },
  });
  expect(run.status, run.text).toBe(201);
  await waitFor(
    async () => (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status === 'completed',
    60_000,
  );
  return run.body.id;
}

beforeAll(async () => {
  // The first prompt grades 4, the edited one ("HARSH") 1.
  mock = await startMockUpstream({
    reply: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      return {
        json: { score: String(messages.at(-1)?.content ?? '').includes('HARSH') ? 1 : 4, reasoning: 'r' },
      };
    },
  });
  h = await startHarness();
  await h.call('POST', '/v1/models', {
    body: { label: 'jm', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: N }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'eight', items } })).status).toBe(201);
}, 300_000);

afterAll(async () => {
  await h?.close();
  await mock?.close();
}, 300_000);

describe('run aggregates split by prompt hash', { timeout: 180_000 }, () => {
  it('reports one aggregate per prompt and no combined average when a judge prompt changed', async () => {
    const judge = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'g', model: 'jm', prompt: 'Grade 1-5: {{output}}', pass_threshold: 3 },
    });
    expect(judge.status, judge.text).toBe(201);
    const first = await completedRun('g');
    const one = await h.call('GET', `/v1/evaluation/runs/${first}`);
    const perEval = one.body.results.per_model[0].per_eval[judge.body.id];
    // One prompt: the evaluator's own figures, no split.
    expect(perEval).toMatchObject({ avg_score: 4, accuracy: 1, num_scored: N });
    expect(perEval.by_prompt_hash).toBeUndefined();

    // The prompt is edited; a second run scores with the new one.
    const edited = await h.call('PATCH', `/v1/evaluators/${judge.body.id}`, {
      body: { prompt: 'HARSH. Grade 1-5: {{output}}' },
    });
    expect(edited.status, edited.text).toBe(200);
    const second = await completedRun('g');
    const db = h.services.db;
    const hashOf = async (run: string) =>
      (
        await db
          .selectFrom('run_samples')
          .select('prompt_hash')
          .where('run_id', '=', run)
          .executeTakeFirstOrThrow()
      ).prompt_hash;
    const [oldHash, newHash] = [await hashOf(first), await hashOf(second)];
    expect(oldHash).toMatch(/^[0-9a-f]{16}$/);
    expect(newHash).not.toBe(oldHash);

    // The first run's last half rescored under the edited prompt: its rows now come from two prompts.
    const rescored = await db
      .selectFrom('run_samples')
      .select(['position', 'score', 'passed', 'prompt_hash'])
      .where('run_id', '=', second)
      .where('position', '>=', N / 2)
      .execute();
    for (const r of rescored) {
      await db
        .updateTable('run_samples')
        .set({ score: r.score, passed: r.passed, prompt_hash: r.prompt_hash })
        .where('run_id', '=', first)
        .where('position', '=', r.position)
        .execute();
    }
    const row = await db.selectFrom('runs').select('plan').where('id', '=', first).executeTakeFirstOrThrow();
    const plan = JSON.parse(row.plan as string) as RunPlan;
    const results = await aggregate(
      db,
      first,
      plan,
      [{ index: 0, expected: N, positions: N, callId: null }],
      'completed',
    );
    const split = results.per_model[0]!.per_eval[judge.body.id]!;
    expect(split.avg_score).toBeNull();
    expect(split.accuracy).toBeNull();
    expect(split.num_scored).toBe(N);
    const byHash = new Map(split.by_prompt_hash!.map((g) => [g.prompt_hash, g]));
    expect(byHash.size).toBe(2);
    expect(byHash.get(oldHash!)).toMatchObject({
      num_scored: N / 2,
      avg_score: 4,
      num_passed: N / 2,
      accuracy: 1,
    });
    expect(byHash.get(newHash!)).toMatchObject({
      num_scored: N / 2,
      avg_score: 1,
      num_failed: N / 2,
      accuracy: 0,
    });
    // The run's overall figures do not average the two prompts either.
    expect(results.overall.avg_score).toBeNull();
  });
});
