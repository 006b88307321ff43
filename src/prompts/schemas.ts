import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../http/schemas.js';
import { SAMPLING_FIELDS } from '../shared/sampling.js';

/** A label's name: lowercase letters, digits, `_`, `.`, `-`; `latest` is implied and cannot be set. */
export const LABEL_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,62}$';
export const PROMPT_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$';

const Role = Type.Union([
  Type.Literal('system'),
  Type.Literal('developer'),
  Type.Literal('user'),
  Type.Literal('assistant'),
]);

export const PromptMessage = Type.Object(
  {
    role: Role,
    content: Type.String({ maxLength: 200_000, description: 'Text with {{variables}}' }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: false },
);

const VariableType = Type.Union(
  [Type.Literal('string'), Type.Literal('number'), Type.Literal('boolean'), Type.Literal('json')],
  { description: 'The type a value must have' },
);

export const Variables = Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), VariableType, {
  description: 'Declared variable types; a variable the messages use and this omits is a string',
});

export const Parameters = Type.Object(
  { ...SAMPLING_FIELDS },
  {
    additionalProperties: true,
    description: 'Sampling parameters sent with the call unless the request gives its own',
  },
);

const Tool = Type.Object(
  {
    type: Type.Literal('function'),
    function: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 64 }),
        description: Type.Optional(Type.String()),
        parameters: Type.Optional(FreeObject()),
        strict: Type.Optional(Nullable(Type.Boolean())),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: 'A function tool, as chat completions declare it' },
);

const ResponseFormat = Type.Object(
  { type: Type.Union([Type.Literal('text'), Type.Literal('json_object'), Type.Literal('json_schema')]) },
  { additionalProperties: true, description: "A chat completion's response_format" },
);

const VersionFields = {
  messages: Type.Array(PromptMessage, { minItems: 1, maxItems: 500 }),
  variables: Type.Optional(Variables),
  model: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 300 }))),
  parameters: Type.Optional(Parameters),
  tools: Type.Optional(Nullable(Type.Array(Tool, { maxItems: 128 }))),
  response_format: Type.Optional(Nullable(ResponseFormat)),
  commit_message: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  labels: Type.Optional(
    Type.Array(Type.String({ pattern: LABEL_PATTERN }), {
      maxItems: 20,
      uniqueItems: true,
      description: 'Labels moved to the new version',
    }),
  ),
};

export const CreatePromptVersion = Type.Object(VersionFields, { additionalProperties: false });
export type CreatePromptVersion = Static<typeof CreatePromptVersion>;

export const CreatePrompt = Type.Object(
  {
    name: Type.String({ pattern: PROMPT_NAME_PATTERN, description: 'Unique in the project' }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    ...VersionFields,
  },
  { additionalProperties: false },
);
export type CreatePrompt = Static<typeof CreatePrompt>;

export const PromptVersion = Type.Object({
  object: Type.Literal('prompt.version'),
  prompt_id: Type.String(),
  name: Type.String({ description: "The prompt's name" }),
  version: Type.Integer({ minimum: 1 }),
  messages: Type.Array(PromptMessage),
  variables: Variables,
  model: Nullable(Type.String()),
  parameters: FreeObject(),
  tools: Nullable(Type.Array(Tool)),
  response_format: Nullable(FreeObject()),
  commit_message: Nullable(Type.String()),
  author: Type.String({ description: 'key:<id> or user:<id>' }),
  created_at: Type.String(),
  labels: Type.Array(Type.String(), { description: 'Labels on this version (latest included)' }),
});
export type PromptVersion = Static<typeof PromptVersion>;

export const Prompt = Type.Object({
  object: Type.Literal('prompt'),
  id: Type.String(),
  project_id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  latest_version: Type.Integer({ minimum: 1 }),
  labels: Type.Record(Type.String(), Type.Integer(), { description: 'Label → version (latest included)' }),
  created_at: Type.String(),
  updated_at: Type.String(),
  version: PromptVersion,
});
export type Prompt = Static<typeof Prompt>;

export const PromptSummary = Type.Omit(Prompt, ['version']);
export type PromptSummary = Static<typeof PromptSummary>;
export const PromptList = ListOf(PromptSummary);
export const PromptVersionList = ListOf(PromptVersion);

export const ListPromptsQuery = Type.Object({
  ...PageQuery,
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Names containing this' })),
});
export type ListPromptsQuery = Static<typeof ListPromptsQuery>;

export const GetPromptQuery = Type.Object({
  label: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9_.-]{0,62}$' })),
  version: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type GetPromptQuery = Static<typeof GetPromptQuery>;

export const PromptParam = Type.Object({
  prompt: Type.String({ minLength: 1, maxLength: 200, description: 'Prompt id or name' }),
});
export const VersionParam = Type.Object({
  prompt: Type.String({ minLength: 1, maxLength: 200, description: 'Prompt id or name' }),
  version: Type.Integer({ minimum: 1 }),
});
export const LabelParam = Type.Object({
  prompt: Type.String({ minLength: 1, maxLength: 200, description: 'Prompt id or name' }),
  label: Type.String({ pattern: LABEL_PATTERN }),
});

export const MoveLabel = Type.Object(
  { version: Type.Integer({ minimum: 1 }) },
  { additionalProperties: false },
);

export const PromptLabel = Type.Object({
  object: Type.Literal('prompt.label'),
  prompt_id: Type.String(),
  name: Type.String(),
  version: Type.Integer(),
  previous_version: Nullable(Type.Integer({ description: 'Where the label was before this move' })),
  updated_by: Type.String(),
  updated_at: Type.String(),
});
export type PromptLabel = Static<typeof PromptLabel>;

export const PromptLabelDeleted = Type.Object({
  object: Type.Literal('prompt.label'),
  prompt_id: Type.String(),
  name: Type.String(),
  deleted: Type.Literal(true),
});

export const LabelMove = Type.Object({
  action: Type.String({ description: 'move, rollback or delete' }),
  from_version: Nullable(Type.Integer()),
  to_version: Nullable(Type.Integer()),
  reverted: Type.Boolean({ description: 'Undone by a rollback' }),
  moved_by: Type.String(),
  moved_at: Type.String(),
});
export const PromptLabelList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(
    Type.Object({ name: Type.String(), version: Type.Integer(), history: Type.Array(LabelMove) }),
  ),
  total: Type.Integer({ minimum: 0 }),
});

export const DiffQuery = Type.Object({
  from: Type.Integer({ minimum: 1, description: 'The older version' }),
  to: Type.Integer({ minimum: 1, description: 'The newer version' }),
});

const Change = Type.Object({ old: Type.Unknown(), new: Type.Unknown() });
export const PromptDiff = Type.Object({
  object: Type.Literal('prompt.diff'),
  prompt_id: Type.String(),
  from_version: Type.Integer(),
  to_version: Type.Integer(),
  changed: Type.Boolean({ description: 'Whether anything differs' }),
  messages: Type.Array(
    Type.Object({
      index: Type.Integer(),
      status: Type.Union([
        Type.Literal('added'),
        Type.Literal('removed'),
        Type.Literal('changed'),
        Type.Literal('unchanged'),
      ]),
      role: Type.Optional(Change),
      patch: Type.Optional(Type.String({ description: 'Unified diff of the content' })),
    }),
  ),
  model: Nullable(Change),
  parameters: Type.Record(Type.String(), Change),
  variables: Type.Record(Type.String(), Change),
  tools: Nullable(Change),
  response_format: Nullable(Change),
});
export type PromptDiff = Static<typeof PromptDiff>;
