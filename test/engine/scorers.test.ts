import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import type { EvaluatorSnapshot } from '../../src/engine/plan.js';
import { BUILT_IN_SCORERS, createScorerRegistry, kindOf } from '../../src/engine/scorers/registry.js';
import { type ChunkRef, Engine } from '../../src/engine/work.js';
import { askUntilParsed } from '../../src/scoring/ask.js';
import { outcomeOf, type ScoreInput, ScorerSetupError } from '../../src/scoring/types.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import {
  engineDeps,
  judgeRunOver,
  modelsBySlug,
  recordingMetrics,
  scorerPorts,
} from '../helpers/engine-ports.js';
import { modelAt } from '../llm/layer-helpers.js';

/** The scorer registry, the ask-until-it-parses loop and missing positions, from the engine's ports. */

function evaluator(fields: Partial<EvaluatorSnapshot>): EvaluatorSnapshot {
  return {
    id: 'evl_1',
    name: 'e',
    type: 'judge',
    mode: 'pointwise',
    model: 'judge',
    prompt: 'Rate {{output}}',
    api: null,
    inference_parameters: {},
    pass_threshold: null,
    source: null,
    requirements: [],
    grader: null,
    ...fields,
  };
}

const item = (fields: { output?: unknown; expected?: unknown }) => ({
  id: 'i',
  input: 'q',
  output: fields.output ?? null,
  expected: fields.expected ?? null,
  metadata: {},
  raw: null,
});
const at = (
  sample: ReturnType<typeof item> | null,
  baseline: ReturnType<typeof item> | null = null,
): ScoreInput => ({
  position: 0,
  sample,
  groundTruth: null,
  baseline,
});

describe('the scorer registry', () => {
  const { createScorer, missingReason, scorerKindOf } = createScorerRegistry();

  it('knows every evaluator kind by its grader type or its own type; an unknown kind is a setup error', () => {
    expect(kindOf(evaluator({ type: 'judge' }))).toBe('judge');
    expect(
      kindOf(
        evaluator({ type: 'score_model', grader: { type: 'score_model', name: 's', model: 'm', input: [] } }),
      ),
    ).toBe('score_model');
    for (const type of [
      'judge',
      'code',
      'string_check',
      'text_similarity',
      'score_model',
      'label_model',
    ] as const) {
      expect(() => scorerKindOf(evaluator({ type }))).not.toThrow();
    }
    const unknown = evaluator({ type: 'human' as EvaluatorSnapshot['type'] });
    expect(() => scorerKindOf(unknown)).toThrow(ScorerSetupError);
    expect(() => scorerKindOf(unknown)).toThrow(/No scorer is registered for 'human'/);
  });

  it('checks the sandbox once, for the kinds that run code, naming the kind', async () => {
    let asked = 0;
    const ports = scorerPorts({
      sandbox: async () => {
        asked += 1;
        return { available: false, reason: 'nsjail missing' };
      },
    });
    await expect(createScorer(evaluator({ type: 'code', source: 'x' }), ports)).rejects.toThrow(
      'Code evaluators cannot run on this worker: nsjail missing',
    );
    const python = evaluator({
      type: 'code',
      grader: { type: 'python', name: 'p', source: 'def grade(s, i): return 1' },
    });
    await expect(createScorer(python, ports)).rejects.toMatchObject({
      code: 'sandbox_unavailable',
      message: 'Python graders cannot run on this worker: nsjail missing',
    });
    expect(asked).toBe(2);
    // Judges and graders never ask for the sandbox.
    await createScorer(evaluator({ type: 'judge' }), ports);
    await createScorer(
      evaluator({
        type: 'string_check',
        grader: { type: 'string_check', name: 's', input: 'a', reference: 'a', operation: 'eq' },
      }),
      ports,
    );
    expect(asked).toBe(2);
  });

  it('takes a new kind in one line of a registry of its own, which no other registry sees', async () => {
    const withConstant = createScorerRegistry({
      ...BUILT_IN_SCORERS,
      constant: {
        needs: () => ({ expected: false, baseline: false }),
        create: () => ({
          scoreBatch: async (inputs) => inputs.map(() => outcomeOf({ score: 0.5, reason: 'always half' })),
          close: async () => {},
        }),
      },
    });
    const ev = evaluator({ type: 'constant' as EvaluatorSnapshot['type'] });
    const scorer = await withConstant.createScorer(ev, scorerPorts());
    const [outcome] = await scorer.scoreBatch([at(item({ output: 'x' }))], new AbortController().signal);
    expect(outcome).toMatchObject({ score: 0.5, reason: 'always half' });
    expect(withConstant.missingReason(ev, at(item({ output: 'x' })))).toBeNull();
    // The built-in kinds are still there; the default registry, built before or after, has no 'constant'.
    expect(() => withConstant.scorerKindOf(evaluator({ type: 'judge' }))).not.toThrow();
    expect(() => scorerKindOf(ev)).toThrow(ScorerSetupError);
    expect(() => createScorerRegistry().scorerKindOf(ev)).toThrow(/No scorer is registered for 'constant'/);
  });

  it('says why a position is missing for each kind', () => {
    const judge = evaluator({ prompt: 'Is {{output}} like {{expected}}?' });
    const pairwise = evaluator({ mode: 'pairwise' });
    const code = evaluator({ type: 'code' });
    expect(missingReason(judge, at(null))).toBe('no sample at this position');
    expect(missingReason(code, at(item({ output: '  ' })))).toBe('the sample has no output');
    expect(missingReason(judge, at(item({ output: 'x' })))).toBe(
      'no expected value (the prompt uses {{expected}})',
    );
    expect(missingReason(judge, at(item({ output: 'x', expected: 'y' })))).toBeNull();
    expect(missingReason(pairwise, at(item({ output: 'x' })))).toBe('no baseline output');
    expect(missingReason(pairwise, at(item({ output: 'x' }), item({ output: 'b' })))).toBeNull();
    expect(missingReason(code, at(item({ output: 'x' })))).toBeNull();
  });
});

describe('the ask-until-it-parses loop', () => {
  it('asks again while the reply does not parse, at most `attempts` times, and stops when told', async () => {
    const replies = ['no', 'still no', '42'];
    let calls = 0;
    const ask = (attempts?: number, stop?: string) =>
      askUntilParsed({
        call: async () => replies[calls++] ?? '',
        parse: (r) => (/^\d+$/.test(r) ? Number(r) : null),
        seen: (r) => r === stop,
        ...(attempts !== undefined ? { attempts } : {}),
      });
    expect(await ask()).toBeNull();
    expect(calls).toBe(2);
    calls = 0;
    expect(await ask(3)).toBe(42);
    expect(calls).toBe(3);
    calls = 0;
    expect(await ask(3, 'no')).toBeNull();
    expect(calls).toBe(1);
  });
});

describe('an engine built from its port factories', () => {
  let fresh: FreshDatabase;
  let database: DatabaseHandle;
  let mock: MockUpstream;
  const seen = new Set<string>();

  beforeAll(async () => {
    fresh = await freshDatabase();
    database = await openDatabase(fresh.url);
    await database.migrate();
    // The judge answers prose the first time it sees a prompt, JSON the second.
    mock = await startMockUpstream({
      reply: (req) => {
        const prompt = req.lastUserText;
        if (!seen.has(prompt)) {
          seen.add(prompt);
          return 'I think it is good.';
        }
        return { json: { score: 1, reasoning: 'second try' } };
      },
    });
  });
  afterAll(async () => {
    await mock?.close();
    await database?.close();
    await fresh?.drop();
  });

  it('asks the judge again after an unparseable reply, and stores why positions are missing', async () => {
    const { db } = database;
    const resolveModel = modelsBySlug({ judge: modelAt(mock.baseUrl, { slug: 'judge' }) });
    const { runId, queue } = await judgeRunOver(
      db,
      fresh.dataDir,
      resolveModel,
      [{ input: 'a', output: 'first' }, { input: 'b' }, { input: 'c', output: 'third' }],
      'Rate OUT<<{{output}}>>',
    );
    const run = { id: runId };
    const metrics = recordingMetrics();
    const engine = new Engine(engineDeps(db, { resolveModel, metrics }));
    try {
      const chunks = (await engine.prepareRun(run.id)) as ChunkRef[];
      for (const chunk of chunks) {
        await engine.runChunk(chunk, new AbortController().signal);
        await engine.completeChunk(chunk, 'test-worker');
      }
      expect(await engine.finalizeRun(run.id)).toBe('completed');
    } finally {
      await engine.close();
      await queue.close();
    }
    const rows = await db
      .selectFrom('run_samples')
      .select(['position', 'status', 'score', 'calls', 'missing_reason'])
      .where('run_id', '=', run.id)
      .orderBy('position')
      .execute();
    expect(rows.map((r) => ({ ...r, position: Number(r.position), calls: Number(r.calls) }))).toEqual([
      { position: 0, status: 'scored', score: 1, calls: 2, missing_reason: null },
      { position: 1, status: 'missing', score: null, calls: 0, missing_reason: 'the sample has no output' },
      { position: 2, status: 'scored', score: 1, calls: 2, missing_reason: null },
    ]);
    expect(mock.stats.requests).toBe(4);
    expect(metrics.calls).toHaveLength(4);
  });
});
