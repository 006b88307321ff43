import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUILT_IN_SCORERS,
  createScorerRegistry,
  type ScorerKind,
} from '../../src/engine/scorers/registry.js';
import type { CreateRun } from '../../src/runs/schemas.js';
import { createRun } from '../../src/runs/service.js';
import { outcomeOf } from '../../src/scoring/types.js';
import { BUILT_IN_SOURCES, createSourceRegistry } from '../../src/sources/registry.js';
import { syntheticSource } from '../fixtures/synthetic-source.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Two apps in one process, each built with its own source and scorer kinds: app `extra` knows the
 * synthetic source and scores string checks with a constant scorer, app `plain` has the built-in kinds
 * only. Neither sees the other's: the kinds are values of the app, not of the process.
 */

const half: ScorerKind = {
  needs: () => ({ expected: false, baseline: false }),
  create: () => ({
    scoreBatch: async (inputs) => inputs.map(() => outcomeOf({ score: 0.5, reason: 'always half' })),
    close: async () => {},
  }),
};

let extra: Harness;
let plain: Harness;

beforeAll(async () => {
  [extra, plain] = await Promise.all([
    startHarness({
      kinds: {
        sourceKinds: createSourceRegistry([...BUILT_IN_SOURCES, syntheticSource]),
        scorerKinds: createScorerRegistry({ ...BUILT_IN_SCORERS, string_check: half }),
      },
    }),
    startHarness(),
  ]);
  for (const h of [extra, plain]) {
    await h.call('POST', '/v1/containers', { body: { label: 'c' } });
    const ev = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'string_check',
        name: 'exact',
        input: '{{sample.output_text}}',
        reference: '{{item.expected}}',
        operation: 'eq',
      },
    });
    expect(ev.status, JSON.stringify(ev.body)).toBe(201);
    const items = [
      { input: 'a', output: 'x', expected: 'x' },
      { input: 'b', output: 'y', expected: 'z' },
    ];
    const ds = await h.call('POST', '/v1/datasets', { body: { label: 'qa', items } });
    expect(ds.status, JSON.stringify(ds.body)).toBe(201);
  }
}, 60_000);
afterAll(async () => {
  await Promise.all([extra?.close(), plain?.close()]);
});

/** The run's samples once it completed; `unchecked`: a run over a kind the contract does not document. */
async function completed(h: Harness, runId: string, unchecked = false) {
  await waitFor(
    async () =>
      (await h.call('GET', `/v1/evaluation/runs/${runId}`, { unchecked })).body.status === 'completed',
    30_000,
    `run ${runId} completed`,
  );
  const samples = await h.call('GET', `/v1/evaluation/runs/${runId}/samples?limit=100`, { unchecked });
  expect(samples.status, JSON.stringify(samples.body)).toBe(200);
  return samples.body.data as { position: number; score: number | null; reasoning: string | null }[];
}

const principal = (h: Harness) => ({ projectId: h.admin.projectId, permissions: ['*'] });

describe('two apps in one process', () => {
  it('each knows only its own source kinds', async () => {
    const body = {
      container: 'c',
      evaluators: ['exact'],
      sample: { type: 'synthetic', count: 3, range: '0:3' },
    } as unknown as CreateRun;
    await expect(createRun(plain.services.ports.runs, principal(plain), body, null)).rejects.toMatchObject({
      code: 'validation_error',
      issues: [expect.objectContaining({ loc: ['body', 'sample', 'type'], type: 'enum' })],
    });
    const run = await createRun(extra.services.ports.runs, principal(extra), body, null);
    expect(run.sample).toEqual({ type: 'synthetic', range: '0:3' });
    // Executed by the app's own worker, read back through its routes.
    const rows = await completed(extra, run.id, true);
    expect(rows).toHaveLength(3);
    const read = await extra.call('GET', `/v1/evaluation/runs/${run.id}`, { unchecked: true });
    expect(read.body.sample).toEqual({
      type: 'synthetic',
      range: '0:3',
    });
    // The plain app still refuses the kind after the other app used it.
    expect(() => plain.services.sourceKinds.kind('synthetic')).toThrow(/Unknown data source type/);
  });

  it('each scores an evaluator with its own scorer kinds', async () => {
    const body = { container: 'c', evaluators: ['exact'], sample: { type: 'dataset', dataset: 'qa' } };
    const scores: Record<string, (number | null)[]> = {};
    for (const [name, h] of [
      ['extra', extra],
      ['plain', plain],
    ] as const) {
      const created = await h.call('POST', '/v1/evaluation/runs', { body });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const rows = await completed(h, created.body.id);
      scores[name] = rows.sort((x, y) => x.position - y.position).map((r) => r.score);
    }
    expect(scores).toEqual({ extra: [0.5, 0.5], plain: [1, 0] });
  });
});
