import { type Static, Type } from 'typebox';
import { SPLIT_PATTERN } from '../catalog/datasets/schemas.js';
import { Nullable } from '../http/schemas.js';
import { POSITION_RANGE_FORMAT } from '../http/validation.js';
import { LABEL_PATTERN } from '../prompts/schemas.js';
import { SAMPLING_FIELDS } from '../shared/sampling.js';

export const RANGE_PATTERN = '^\\d+:\\d+$';

/**
 * A data source, discriminated by `type` (default `generate`). The three variants share one object
 * schema so every problem is reported at its own field; the service enforces which fields each variant
 * takes (unknown ones are rejected, as in the contract).
 */
/** type=sessions: which of the container's sessions the side reads (one position per session). */
const SessionSideFilter = Type.Object(
  {
    since: Type.Optional(Type.String({ format: 'date-time', description: 'Sessions active at or after' })),
    until: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Sessions started before (default: the run’s creation)',
      }),
    ),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    errors: Type.Optional(Type.Boolean()),
    min_turns: Type.Optional(Type.Integer({ minimum: 0 })),
    max_turns: Type.Optional(Type.Integer({ minimum: 0 })),
    sessions: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        minItems: 1,
        maxItems: 1000,
        description: 'type=sessions or tool_steps: only these sessions (ids)',
      }),
    ),
    tools: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        minItems: 1,
        maxItems: 100,
        description: 'type=tool_steps: only the calls of these tools (names)',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'type=sessions, traces or tool_steps: which sessions, traces or tool steps (min_turns, max_turns and sessions: sessions and tool steps only; tools: tool steps only)',
  },
);

/** An experiment's prompt: by name or id, at a version, a label, or (neither) its latest. */
export const PromptPick = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'The prompt’s name or id' }),
    version: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647 })),
    label: Type.Optional(
      Type.String({ pattern: LABEL_PATTERN, description: 'Resolved to its version when the run is created' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'A prompt version: a version or a label (neither: the latest)',
  },
);

/** type=generate: sampling parameters sent with every generation call (over a prompt version's own). */
export const GenerationParameters = Type.Object(
  { ...SAMPLING_FIELDS },
  {
    additionalProperties: false,
    description: 'type=generate: sampling parameters of every generation call (over a prompt version’s own)',
  },
);

export const DataSource = Type.Object(
  {
    type: Type.Optional(
      Type.Enum(['dataset', 'container', 'generate', 'sessions', 'traces', 'tool_steps', 'simulate'], {
        default: 'generate',
      }),
    ),
    dataset: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'type=dataset: dataset id or label' }),
    ),
    version: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2_147_483_647,
        description:
          'type=dataset: the dataset version to read (default: the latest when the run is created)',
      }),
    ),
    split: Type.Optional(
      Type.String({
        pattern: SPLIT_PATTERN,
        description: 'type=dataset: read only the items of this split',
      }),
    ),
    container: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'type=container, sessions, traces or tool_steps: container id or label',
      }),
    ),
    filter: Type.Optional(SessionSideFilter),
    models: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
        minItems: 1,
        maxItems: 32,
        description: 'type=generate: model ids or slugs',
      }),
    ),
    prompts: Type.Optional(
      Type.Array(PromptPick, {
        minItems: 1,
        maxItems: 16,
        description:
          'type=generate: prompt versions to render over each item (an experiment): one launch per version × model',
      }),
    ),
    parameters: Type.Optional(GenerationParameters),
    user_model: Type.Optional(
      Type.String({ minLength: 1, maxLength: 300, description: 'type=simulate: the simulated user’s model' }),
    ),
    max_turns: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 50,
        description: 'type=simulate: user messages at most (default 5)',
      }),
    ),
    tools: Type.Optional(
      Type.Enum(['from_row', 'none'], {
        description: 'type=simulate: offer the tools the row declares (default from_row)',
      }),
    ),
    range: Type.Optional(
      Nullable(
        Type.String({
          pattern: RANGE_PATTERN,
          format: POSITION_RANGE_FORMAT,
          description: 'start:end, 0-based, end exclusive, bounds at most 2^53 - 1; default 0:100',
        }),
      ),
    ),
  },
  {
    additionalProperties: false,
    description: 'Data source: dataset, container task logs, or generated completions',
    // Published as a oneOf of the variants (src/http/openapi-document.ts).
    'x-data-source': 'request',
  },
);
export type DataSource = Static<typeof DataSource>;
