// Database-independent: the scorer registry's capabilities, with no store.
import { describe, expect, it } from 'vitest';
import {
  type Capabilities,
  createScorerRegistry,
  type EvaluatorShape,
} from '../../src/engine/scorers/registry.js';
import type { SubGrader } from '../../src/scoring/graders/schemas.js';
import { DEFAULT_EMBEDDING_MODEL } from '../../src/scoring/graders/text.js';
import { ScorerSetupError } from '../../src/scoring/types.js';

/** What each evaluator kind declares in the scorer registry: model calls, the sandbox, permissions. */

const { callsModels, capabilitiesOf, permissionsAskedBy } = createScorerRegistry();

const input = '{{sample.output_text}}';
const grader = (g: SubGrader): EvaluatorShape => ({ type: g.type, grader: g });
const MODELS: Capabilities['permissions'] = ['models:read', 'inference:write'];

const none: Capabilities = { callsModel: false, model: null, sandbox: false, permissions: [] };

const CASES: [string, EvaluatorShape, Capabilities][] = [
  [
    'judge',
    { type: 'judge', model: 'j' },
    { callsModel: true, model: 'j', sandbox: false, permissions: MODELS },
  ],
  ['code', { type: 'code' }, { ...none, sandbox: true }],
  [
    'python grader',
    { type: 'code', grader: { type: 'python', name: 'p', source: 'def grade(s, i): return 1' } },
    { ...none, sandbox: true },
  ],
  [
    'score_model',
    grader({ type: 'score_model', name: 's', model: 'm1', input: [] }),
    { callsModel: true, model: 'm1', sandbox: false, permissions: MODELS },
  ],
  [
    'label_model',
    grader({ type: 'label_model', name: 'l', model: 'm2', input: [], labels: ['a'], passing_labels: ['a'] }),
    { callsModel: true, model: 'm2', sandbox: false, permissions: MODELS },
  ],
  [
    'text_similarity by cosine',
    grader({
      type: 'text_similarity',
      name: 't',
      input,
      reference: 'x',
      evaluation_metric: 'cosine',
      embedding_model: 'emb',
    }),
    { callsModel: true, model: 'emb', sandbox: false, permissions: MODELS },
  ],
  [
    'text_similarity by cosine, default embeddings model',
    grader({ type: 'text_similarity', name: 't', input, reference: 'x', evaluation_metric: 'cosine' }),
    {
      callsModel: true,
      model: DEFAULT_EMBEDDING_MODEL,
      sandbox: false,
      permissions: MODELS,
    },
  ],
  [
    'text_similarity by rouge_l',
    grader({ type: 'text_similarity', name: 't', input, reference: 'x', evaluation_metric: 'rouge_l' }),
    none,
  ],
  ['string_check', grader({ type: 'string_check', name: 's', input, reference: 'x', operation: 'eq' }), none],
  ['tool_call_match', { type: 'tool_call_match' }, none],
  ['trajectory_length', { type: 'trajectory_length' }, none],
];

describe('capabilities of each evaluator kind', () => {
  for (const [name, ev, expected] of CASES) {
    it(name, () => {
      expect(capabilitiesOf(ev)).toEqual(expected);
    });
  }

  it('an unknown kind is a setup error, not a kind without capabilities', () => {
    expect(() => capabilitiesOf({ type: 'human' })).toThrow(ScorerSetupError);
  });
});

describe('permissions asked of a creator', () => {
  const [, judge] = CASES[0]!;
  const [, cosine] = CASES[5]!;
  const [, exact] = CASES[9]!;

  it('each once, saying why in the words of the subject', () => {
    expect(permissionsAskedBy([judge, cosine], 'the monitor')).toEqual([
      { permission: 'models:read', why: 'the monitor uses judge models' },
      { permission: 'inference:write', why: 'the monitor calls judge models' },
    ]);
    expect(permissionsAskedBy([cosine], 'the grader', 'models').map((a) => a.why)).toEqual([
      'the grader uses models',
      'the grader calls models',
    ]);
  });

  it('nothing for evaluators that call no model', () => {
    expect(permissionsAskedBy([exact, { type: 'code' }], 'the run')).toEqual([]);
    expect(permissionsAskedBy([], 'the run')).toEqual([]);
  });

  it('a run calls models when it generates or an evaluator does', () => {
    expect(callsModels({ generated: null, evaluators: [exact] })).toBe(false);
    expect(callsModels({ generated: 'sample', evaluators: [exact] })).toBe(true);
    expect(callsModels({ generated: null, evaluators: [exact, cosine] })).toBe(true);
  });
});
