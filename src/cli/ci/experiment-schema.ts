import { type Static, Type } from 'typebox';
import { SAMPLING_FIELDS } from '../../shared/sampling.js';

/**
 * The experiment file (`evalgate.yaml`) as a JSON Schema: schemas/evalgate-experiments.schema.json is
 * this document written out (a test keeps the two equal), for editors and for `$schema` references.
 * Every object rejects unknown properties, so a typo is a problem at its own line rather than a gate
 * that silently checks nothing.
 */

const Name = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' });
const Ratio = Type.Number({ minimum: 0, maximum: 1 });

const Dataset = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Dataset id or label' }),
    version: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: 'The dataset version to read (default: the latest when the run is created)',
      }),
    ),
    range: Type.Optional(
      Type.String({
        pattern: '^\\d+:\\d+$',
        description: 'The slice of rows to evaluate, start:end (0-based, end exclusive); default 0:100',
      }),
    ),
  },
  { additionalProperties: false, description: 'The rows the candidate answers and is scored against' },
);

const Candidate = Type.Object(
  {
    models: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
        minItems: 1,
        maxItems: 32,
        description:
          'Models (ids or labels) that answer each dataset row; one launch each (with prompts: each version on each model)',
      }),
    ),
    prompts: Type.Optional(
      Type.Array(
        Type.String({
          pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}(@([1-9][0-9]{0,8}|[a-z0-9][a-z0-9_.-]{0,62}))?$',
          description: 'NAME (its latest version), NAME@VERSION or NAME@LABEL',
        }),
        {
          minItems: 1,
          maxItems: 16,
          description:
            "Stored prompt versions rendered over each row's input fields; one launch per version × model (without models: each version's own model)",
        },
      ),
    ),
    parameters: Type.Optional(
      Type.Object(
        { ...SAMPLING_FIELDS },
        {
          additionalProperties: false,
          description: "Sampling parameters of every generation call (over a prompt version's own)",
        },
      ),
    ),
    command: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'A shell command that answers the dataset rows: one JSON line per row on its standard input, ' +
          'one JSON line {"output": …} per row, in order, on its standard output',
      }),
    ),
    timeout_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 86_400, description: 'With command: how long it may take' }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'What is evaluated: models (and prompt versions, parameters) that generate the answers, or an application command',
  },
);

const Baseline = Type.Object(
  {
    run: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A run id' })),
    branch: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 300,
        description: 'The latest completed run of the same experiment recorded on this branch',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "What the candidate is compared with; default: the latest run on the pull request's target branch",
  },
);

const Gate = Type.Object(
  {
    metric: Type.Optional(
      Type.Enum(['avg_score', 'accuracy'], {
        description: 'The figure min and max_drop read: avg_score (default) or accuracy (pass rate)',
      }),
    ),
    min: Type.Optional(Type.Number({ description: "The candidate's figure must be at least this" })),
    max_drop: Type.Optional(
      Type.Number({
        minimum: 0,
        description: 'The figure may fall at most this much below the baseline (paired mean difference)',
      }),
    ),
    drop_at_confidence: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0.5,
        exclusiveMaximum: 1,
        description:
          'Fail when the paired interval of the score difference at this level lies wholly below 0',
      }),
    ),
    max_error_rate: Type.Optional({
      ...Ratio,
      description: 'Share of samples whose evaluation failed, at most',
    }),
    max_missing_rate: Type.Optional({
      ...Ratio,
      description: 'Share of samples that could not be scored (no output, …), at most',
    }),
  },
  { additionalProperties: false, description: 'The rules one evaluator must meet' },
);

export const Experiment = Type.Object(
  {
    description: Type.Optional(Type.String()),
    container: Name,
    dataset: Dataset,
    candidate: Candidate,
    evaluators: Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
      minItems: 1,
      maxItems: 50,
      description: 'Evaluator ids or names',
    }),
    baseline: Type.Optional(Baseline),
    gates: Type.Optional(
      Type.Record(Type.String({ minLength: 1 }), Gate, {
        description: 'Per evaluator (as named in evaluators): the rules its results must meet',
      }),
    ),
    environment: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    cache: Type.Optional(
      Type.Boolean({ description: "Answer identical calls from the server's response cache" }),
    ),
  },
  { additionalProperties: false },
);
export type Experiment = Static<typeof Experiment>;
export type GateRules = Static<typeof Gate>;

export const ExperimentFile = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    version: Type.Literal(1, { description: 'The file format version' }),
    experiments: Type.Record(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$' }), Experiment, {
      minProperties: 1,
      additionalProperties: false,
      description: 'Named experiments (names: letters, digits, . _ -)',
    }),
  },
  { additionalProperties: false, title: 'Evalgate experiments (evalgate.yaml)' },
);
export type ExperimentFile = Static<typeof ExperimentFile>;
