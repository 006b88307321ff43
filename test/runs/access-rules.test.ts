// Database-independent: what a run asks of its creator is decided from the request and the plan alone.
import { describe, expect, it } from 'vitest';
import type { RunPlan } from '../../src/engine/plan.js';
import { createScorerRegistry } from '../../src/engine/scorers/registry.js';
import { checkCreate, checkJudges, checkSampleAccess, sampleAccessNeeds } from '../../src/runs/access.js';
import type { CreateRun } from '../../src/runs/schemas.js';
import { ApiError } from '../../src/shared/errors.js';
import { createSourceRegistry } from '../../src/sources/registry.js';

/** The built-in kinds, as an app without extra ones has them. */
const kinds = { sourceKinds: createSourceRegistry(), scorerKinds: createScorerRegistry() };

/** The permission a check refuses for, or null when it lets the caller through. */
function refused(check: () => void): string | null {
  try {
    check();
    return null;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    expect(err.status).toBe(403);
    expect(err.code).toBe('permission_denied');
    return String(err.details?.required);
  }
}

const overDataset = {
  container: 'c',
  evaluators: ['j'],
  sample: { type: 'dataset', dataset: 'd' },
  ground_truth: { type: 'dataset', dataset: 'd' },
} as unknown as CreateRun;

describe('checkCreate', () => {
  it('asks for the evaluators, then for what each side reads', () => {
    expect(refused(() => checkCreate(kinds, overDataset, ['evaluation:*']))).toBe('evaluators:read');
    expect(refused(() => checkCreate(kinds, overDataset, ['evaluation:*', 'evaluators:read']))).toBe(
      'data:read',
    );
    expect(refused(() => checkCreate(kinds, overDataset, ['evaluators:read', 'data:read']))).toBeNull();
  });

  it("asks for logs:read where a side is omitted (it reads the container's task logs)", () => {
    const { sample: _omitted, ...body } = overDataset;
    expect(refused(() => checkCreate(kinds, body as CreateRun, ['evaluators:read', 'data:read']))).toBe(
      'logs:read',
    );
    expect(
      refused(() => checkCreate(kinds, body as CreateRun, ['evaluators:read', 'data:read', 'logs:read'])),
    ).toBeNull();
  });

  it('asks for the right to call models when a side generates', () => {
    const generating = {
      ...overDataset,
      sample: { type: 'generate', models: ['m'] },
    } as unknown as CreateRun;
    const base = ['evaluators:read', 'data:read'];
    expect(refused(() => checkCreate(kinds, generating, base))).toBe('models:read');
    expect(refused(() => checkCreate(kinds, generating, [...base, 'models:read']))).toBe('inference:write');
    expect(
      refused(() => checkCreate(kinds, generating, [...base, 'models:read', 'inference:write'])),
    ).toBeNull();
  });

  it('lets a wildcard grant through', () => {
    expect(refused(() => checkCreate(kinds, overDataset, ['*']))).toBeNull();
  });
});

describe('checkJudges', () => {
  it('asks a judge run for the right to read and call its model, and a string check for nothing', () => {
    const judge = { evaluators: [{ type: 'judge', model: 'm' }] } as unknown as Pick<RunPlan, 'evaluators'>;
    expect(refused(() => checkJudges(kinds, judge, []))).toBe('models:read');
    expect(refused(() => checkJudges(kinds, judge, ['models:read']))).toBe('inference:write');
    expect(refused(() => checkJudges(kinds, judge, ['models:read', 'inference:write']))).toBeNull();
    const stringCheck = {
      evaluators: [{ type: 'string_check', grader: { type: 'string_check' } }],
    } as unknown as Pick<RunPlan, 'evaluators'>;
    expect(refused(() => checkJudges(kinds, stringCheck, []))).toBeNull();
  });
});

describe('sampleAccessNeeds', () => {
  const plan = (sides: unknown) => JSON.stringify({ sides });
  const dataset = { type: 'dataset', ref: 'ds_1', models: [], range: { start: 0, end: 10 } };
  const logs = { type: 'container', ref: 'ctr_1', models: [], range: { start: 0, end: 10 } };

  it('names each permission once, with the side that needs it', () => {
    const needs = sampleAccessNeeds(kinds, plan({ sample: dataset, ground_truth: dataset, baseline: logs }));
    expect(needs.map((n) => n.permission)).toEqual(['data:read', 'logs:read']);
    expect(needs[0]!.why).toContain('sample side');
    expect(needs[1]!.why).toContain('baseline side');
    expect(
      refused(() =>
        checkSampleAccess(kinds, plan({ sample: logs, ground_truth: dataset, baseline: null }), [
          'data:read',
        ]),
      ),
    ).toBe('logs:read');
  });

  it('needs nothing to read a plan it cannot read', () => {
    expect(sampleAccessNeeds(kinds, 'not json')).toEqual([]);
    expect(sampleAccessNeeds(kinds, 'null')).toEqual([]);
  });
});
