import { type Static, Type } from 'typebox';
import { FreeObject, Nullable } from '../http/schemas.js';
import { CreatePromptVersion, PromptMessage } from '../prompts/schemas.js';

/** The most models one playground run answers side by side. */
export const MAX_MODELS = 4;
/** The most evaluators a run scores each answer with. */
export const MAX_EVALUATORS = 8;

const Fields = CreatePromptVersion.properties;

const PromptRef = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 200, description: 'The prompt the request was opened from' }),
    version: Type.Integer({ minimum: 1 }),
  },
  { additionalProperties: false },
);

/** The request as the playground edits it: a prompt version's fields, with values for its variables. */
const EditableFields = {
  messages: Type.Array(PromptMessage, { minItems: 1, maxItems: 500 }),
  variables: Type.Optional(
    Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.Unknown(), {
      description: "Values of the messages' {{variables}}",
    }),
  ),
  variable_types: Fields.variables,
  tools: Fields.tools,
  response_format: Fields.response_format,
  parameters: Fields.parameters,
};

export const PlaygroundRun = Type.Object(
  {
    ...EditableFields,
    models: Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
      minItems: 1,
      maxItems: MAX_MODELS,
      description: 'The models answering side by side (1 to 4), each by slug, label or id',
    }),
    evaluators: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        maxItems: MAX_EVALUATORS,
        uniqueItems: true,
        description: "The project's evaluators (id or name) scoring each answer once it is complete",
      }),
    ),
    expected: Type.Optional(Type.Unknown({ description: 'The expected answer evaluators compare with' })),
    prompt: Type.Optional(Nullable(PromptRef)),
  },
  { additionalProperties: false },
);
export type PlaygroundRun = Static<typeof PlaygroundRun>;

/** An editable request made from a recorded object (what the playground opens). */
export const EditableRequest = Type.Object({
  object: Type.Literal('playground.request'),
  source: Type.Object({
    kind: Type.Union([
      Type.Literal('prompt_version'),
      Type.Literal('task_log'),
      Type.Literal('span'),
      Type.Literal('session_turn'),
    ]),
    id: Type.String(),
    task_log_id: Nullable(Type.String()),
  }),
  messages: Type.Array(PromptMessage),
  variables: FreeObject('Values of the variables (a recorded call has none: its messages are rendered)'),
  variable_types: FreeObject(),
  tools: Nullable(Type.Array(FreeObject())),
  response_format: Nullable(FreeObject()),
  parameters: FreeObject(),
  model: Nullable(Type.String({ description: 'The model the source names' })),
  output: Nullable(Type.String({ description: 'What the recorded call answered' })),
  prompt: Nullable(PromptRef),
  prompt_name: Nullable(Type.String()),
});
export type EditableRequest = Static<typeof EditableRequest>;

export const OpenQuery = Type.Object(
  {
    prompt: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Prompt id or name' })),
    version: Type.Optional(Type.Integer({ minimum: 1 })),
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
    task_log: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    span: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A model-call span id' })),
    trace: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    session: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    turn: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 100_000, description: "The turn's index (0: first)" }),
    ),
  },
  { additionalProperties: false },
);
export type OpenQuery = Static<typeof OpenQuery>;

/** "Save as new version": the edited request as the next version of a prompt (or a new prompt). */
export const SaveVersion = Type.Object(
  {
    prompt: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Prompt id or name; a new name creates it',
    }),
    messages: EditableFields.messages,
    variable_types: Fields.variables,
    tools: Fields.tools,
    response_format: Fields.response_format,
    parameters: Fields.parameters,
    model: Fields.model,
    commit_message: Fields.commit_message,
    labels: Fields.labels,
  },
  { additionalProperties: false },
);
export type SaveVersion = Static<typeof SaveVersion>;
