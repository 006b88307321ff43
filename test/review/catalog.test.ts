import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listTemplates } from '../../src/catalog/judge-templates/catalog.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

// Must-show 2 and 3: every catalog template made into an evaluator, run over a small dataset against the
// mock, scored, with the prompt hash on every sample; a changed prompt gets a new hash; a missing
// variable makes the position missing, never 0; reviewed items exported as a dataset and two judge
// prompts' agreement over it side by side.

let h: Harness;
let mock: MockUpstream;
/** The mock judge answers 4 unless the prompt says "strict", then 2; pass/fail templates get 1. */
function grade(prompt: string): number {
  if (prompt.includes('score 0 or 1')) return 1;
  return prompt.includes('STRICT') ? 2 : 4;
}

const ROWS = Array.from({ length: 6 }, (_, i) => ({
  input: `question ${i}`,
  output: `answer ${i}`,
  expected: `reference ${i}`,
  metadata: { context: `context ${i}`, tools: '[{"name":"search"}]' },
}));

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
  mock = await startMockUpstream({
    reply: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      return { json: { score: grade(String(messages.at(-1)?.content ?? '')), reasoning: 'ok' } };
    },
  });
  h = await startHarness();
  await h.call('POST', '/v1/models', {
    body: { label: 'jm', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'rag', items: ROWS } })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await h?.close();
  await mock?.close();
}, 120_000);

describe('the judge catalog', () => {
  it('lists the templates with scale, variables and version', async () => {
    const res = await h.call('GET', '/v1/evaluator-templates');
    expect(res.status).toBe(200);
    const names = res.body.data.map((t: { name: string }) => t.name);
    for (const n of [
      'correctness',
      'faithfulness',
      'answer_relevance',
      'context_precision',
      'context_recall',
      'hallucination',
      'toxicity',
      'conciseness',
      'tool_selection',
      'goal_completion',
      'trajectory_tool_selection',
      'conversation_relevance',
    ]) {
      expect(names).toContain(n);
    }
    const one = await h.call('GET', '/v1/evaluator-templates/faithfulness@1');
    expect(one.body).toMatchObject({
      id: 'faithfulness@1',
      version: 1,
      scale: { type: 'ordinal', min: 1, max: 5 },
    });
    expect(one.body.variables).toContain('metadata.context');
    expect((await h.call('GET', '/v1/evaluator-templates/faithfulness')).body.id).toBe('faithfulness@1');
    expect((await h.call('GET', '/v1/evaluator-templates/nope@1')).status).toBe(404);
  });

  it('makes each template an evaluator that scores a dataset, the prompt hash on every sample', async () => {
    const ids: string[] = [];
    for (const t of listTemplates()) {
      const ev = await h.call('POST', '/v1/evaluators', {
        body: { type: 'judge', name: `cat-${t.name}`, model: 'jm', template: t.id },
      });
      expect(ev.status, ev.text).toBe(201);
      expect(ev.body).toMatchObject({
        prompt: t.prompt,
        scale: t.scale,
        pass_threshold: t.pass_threshold,
        template: t.id,
      });
      ids.push(ev.body.id);
    }
    const runId = await runOver(ids, 'rag');
    const rows = await h.services.db
      .selectFrom('run_samples')
      .select(['evaluator_id', 'status', 'score', 'prompt_hash'])
      .where('run_id', '=', runId)
      .execute();
    expect(rows).toHaveLength(ids.length * ROWS.length);
    for (const r of rows) {
      expect(r.status).toBe('scored');
      expect(r.prompt_hash).toMatch(/^[0-9a-f]{16}$/);
    }
    // One hash per template: different prompts, different hashes.
    expect(new Set(rows.map((r) => r.prompt_hash)).size).toBe(ids.length);
    const run = (await h.call('GET', `/v1/evaluation/runs/${runId}`)).body;
    expect(run.status).toBe('completed');
  });

  it('records a position whose prompt variable has no value as missing, never 0', async () => {
    await h.call('POST', '/v1/datasets', {
      body: {
        label: 'no-context',
        items: [
          { input: 'q', output: 'a' },
          { input: 'q2', output: 'a2', metadata: { context: 'c' } },
        ],
      },
    });
    const ev = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'faith-missing', model: 'jm', template: 'faithfulness@1' },
    });
    const runId = await runOver([ev.body.id], 'no-context');
    const rows = await h.services.db
      .selectFrom('run_samples')
      .select(['position', 'status', 'score', 'missing_reason'])
      .where('run_id', '=', runId)
      .orderBy('position')
      .execute();
    expect(rows[0]).toMatchObject({ status: 'missing', score: null });
    expect(rows[0]?.missing_reason).toContain('{{metadata.context}}');
    expect(rows[1]).toMatchObject({ status: 'scored', score: 4 });
  });

  it("makes an edited prompt the user's own, with a new hash", async () => {
    const ev = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'relevance', model: 'jm', template: 'answer_relevance@1' },
    });
    const edited = await h.call('PATCH', `/v1/evaluators/${ev.body.id}`, {
      body: { prompt: `${ev.body.prompt}\nSTRICT: be harsh.` },
    });
    expect(edited.status).toBe(200);
    expect(edited.body.template).toBeNull();
    expect(edited.body.scale).toEqual({ type: 'ordinal', min: 1, max: 5 });
    const bad = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', model: 'jm', template: 'nope@3' },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'template']);
  });
});

describe('closing the loop', () => {
  it('exports reviewed items as a dataset and compares two judge prompts over it', async () => {
    const lenient = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'lenient', model: 'jm', template: 'correctness@1' },
    });
    const runId = await runOver([lenient.body.id], 'rag');
    await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'loop', evaluators: ['lenient'], comment: true },
    });
    await h.call('POST', '/v1/annotation-queues/loop/items', {
      body: { rules: [{ run: runId, score_min: 1, score_max: 5 }] },
    });
    // The person is harsher than the lenient judge: 2 everywhere.
    for (;;) {
      const c = await h.call('POST', '/v1/annotation-queues/loop/claim');
      if (!c.body.item) break;
      const r = await h.call('POST', `/v1/annotation-queues/loop/items/${c.body.item.item.id}/review`, {
        body: { scores: [{ evaluator: 'lenient', score: 2 }], comment: 'too generous' },
      });
      expect(r.status, r.text).toBe(201);
    }
    const exported = await h.call('POST', '/v1/annotation-queues/loop/export', {
      body: { label: 'reviewed' },
    });
    expect(exported.status, exported.text).toBe(201);
    expect(exported.body.item_count).toBe(ROWS.length);
    const items = await h.call('GET', `/v1/datasets/${exported.body.id}/items?limit=100`);
    expect(items.body.data[0].expected ?? items.body.data[0].data?.expected).toBe(2);
    const strict = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'judge',
        name: 'strict',
        model: 'jm',
        prompt: `${lenient.body.prompt}\nSTRICT: be harsh.`,
        scale: { type: 'ordinal', min: 1, max: 5 },
        pass_threshold: 4,
      },
    });
    const over = await runOver([lenient.body.id, strict.body.id], 'reviewed');
    const res = await h.call('GET', `/v1/evaluators/lenient/agreement?run=${over}&compare=strict`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.n).toBe(ROWS.length);
    expect(res.body.groups[0].percent_agreement).toBe(0);
    expect(res.body.groups[0].mae).toBe(2);
    expect(res.body.compare.evaluator.name).toBe('strict');
    expect(res.body.compare.groups[0].percent_agreement).toBe(1);
    expect(res.body.compare.groups[0].mae).toBe(0);
    expect(res.body.compare.groups[0].prompt_hash).not.toBe(res.body.groups[0].prompt_hash);
    // Without data:write, no export.
    const k = await h.key(['review:*']);
    const denied = await h.call('POST', '/v1/annotation-queues/loop/export', {
      key: k.key,
      body: { label: 'r2' },
    });
    expect(denied.status).toBe(403);
  }, 180_000);
});
