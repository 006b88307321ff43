import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../http/schemas.js';

/*
 * The JSON shapes of `/v1/guards`: a policy is an ordered list of checks, each a built-in guard or an
 * evaluator of the project, with its stage, action, timeout and failure mode.
 */

export const GUARD_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$';

export const PII_ENTITIES = ['email', 'phone', 'card', 'iban', 'national_id'] as const;
export const NATIONAL_IDS = [
  'us_ssn',
  'uk_nino',
  'es_dni',
  'it_cf',
  'de_tax_id',
  'fr_nir',
  'in_aadhaar',
] as const;
export const SECRET_KINDS = [
  'openai',
  'anthropic',
  'aws_access_key',
  'github',
  'slack',
  'private_key',
  'bearer',
] as const;

const Strings = <T extends string>(values: readonly T[], description: string) =>
  Type.Array(Type.Unsafe<T>({ type: 'string', enum: [...values] }), {
    minItems: 1,
    uniqueItems: true,
    description,
  });

const PiiGuard = Type.Object(
  {
    type: Type.Literal('pii'),
    entities: Type.Optional(Strings(PII_ENTITIES, 'What it looks for (default: all)')),
    national_ids: Type.Optional(Strings(NATIONAL_IDS, 'Which national ids (default: all)')),
  },
  {
    additionalProperties: false,
    description: 'Personal data, each kind checked (cards by Luhn, IBANs by mod 97)',
  },
);
const SecretsGuard = Type.Object(
  {
    type: Type.Literal('secrets'),
    kinds: Type.Optional(Strings(SECRET_KINDS, 'Which credential patterns (default: all)')),
  },
  { additionalProperties: false, description: 'API keys, tokens and private key blocks' },
);
const DenyListGuard = Type.Object(
  {
    type: Type.Literal('deny_list'),
    terms: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 1000 }),
  },
  { additionalProperties: false, description: 'Words or phrases, case-insensitive, matched at word bounds' },
);
const RegexGuard = Type.Object(
  {
    type: Type.Literal('regex'),
    pattern: Type.String({ minLength: 1, maxLength: 2000, description: 'RE2 syntax (linear time)' }),
    case_insensitive: Type.Optional(Type.Boolean()),
    replacement: Type.Optional(
      Type.String({ maxLength: 200, description: 'Redaction text (default [REDACTED])' }),
    ),
  },
  { additionalProperties: false, description: 'A regular expression, run by an RE2 engine: no backtracking' },
);
const JsonSchemaGuard = Type.Object(
  {
    type: Type.Literal('json_schema'),
    schema: FreeObject('The JSON Schema the answer must satisfy (parsed as JSON)'),
  },
  { additionalProperties: false },
);
const InjectionGuard = Type.Object(
  {
    type: Type.Literal('prompt_injection'),
    threshold: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1, description: 'Triggers at or above (0.5)' }),
    ),
  },
  { additionalProperties: false, description: 'Heuristic phrases of prompt injection, scored 0..1' },
);
const LanguageGuard = Type.Object(
  {
    type: Type.Literal('language'),
    allowed: Type.Array(Type.String({ pattern: '^[a-z]{3}$' }), {
      minItems: 1,
      maxItems: 100,
      description: 'ISO 639-3 codes (eng, fra, deu, …)',
    }),
    min_chars: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10_000, description: 'Shorter texts are not judged (20)' }),
    ),
  },
  { additionalProperties: false },
);
const LengthGuard = Type.Object(
  {
    type: Type.Literal('length'),
    min_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    max_chars: Type.Optional(Type.Integer({ minimum: 0 })),
    min_tokens: Type.Optional(Type.Integer({ minimum: 0 })),
    max_tokens: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Tokens estimated as characters / 4' }),
    ),
  },
  { additionalProperties: false },
);
const EvaluatorGuard = Type.Object(
  {
    type: Type.Literal('evaluator'),
    evaluator: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'An evaluator of the project, id or name',
    }),
  },
  { additionalProperties: false, description: 'Any evaluator of the project; a failing verdict triggers' },
);

export const GuardSpec = Type.Union([
  PiiGuard,
  SecretsGuard,
  DenyListGuard,
  RegexGuard,
  JsonSchemaGuard,
  InjectionGuard,
  LanguageGuard,
  LengthGuard,
  EvaluatorGuard,
]);
export type GuardSpec = Static<typeof GuardSpec>;
export type GuardType = GuardSpec['type'];

const Stage = Type.Union([Type.Literal('input'), Type.Literal('output'), Type.Literal('parallel')], {
  description:
    'input: before the upstream call; parallel: beside it (a block cancels it); output: on the answer',
});
const Action = Type.Union([Type.Literal('block'), Type.Literal('flag'), Type.Literal('redact')]);
const OnError = Type.Union([Type.Literal('open'), Type.Literal('closed')], {
  description: 'A check that times out or fails: open lets the call through, closed blocks it',
});
const Streaming = Type.Union([Type.Literal('incremental'), Type.Literal('hold')], {
  description: 'Output checks on streams: as the text arrives (prefix-judging guards) or once it is complete',
});

export const GuardCheckInput = Type.Object(
  {
    name: Type.String({ pattern: GUARD_NAME_PATTERN, description: 'The verdict score’s name' }),
    guard: GuardSpec,
    stage: Type.Optional(Stage),
    action: Type.Optional(Action),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 120_000 })),
    on_error: Type.Optional(OnError),
    streaming: Type.Optional(Streaming),
  },
  { additionalProperties: false },
);
export type GuardCheckInput = Static<typeof GuardCheckInput>;

export const GuardCheck = Type.Object({
  name: Type.String(),
  guard: GuardSpec,
  stage: Stage,
  action: Action,
  timeout_ms: Type.Integer(),
  on_error: OnError,
  streaming: Streaming,
});
export type GuardCheck = Static<typeof GuardCheck>;

const Refs = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
    maxItems: 100,
    uniqueItems: true,
    description,
  });

export const AppliesToInput = Type.Object(
  {
    containers: Type.Optional(Refs('Containers, id or label')),
    keys: Type.Optional(Refs('API keys of the project, by id')),
    models: Type.Optional(Refs('Model names as requests give them')),
  },
  {
    additionalProperties: false,
    description: 'A call matching any entry; all empty: every call of the project',
  },
);
export const AppliesTo = Type.Object({
  containers: Type.Array(Type.String()),
  keys: Type.Array(Type.String()),
  models: Type.Array(Type.String()),
});
export type AppliesTo = Static<typeof AppliesTo>;

export const CreateGuardPolicy = Type.Object(
  {
    name: Type.String({ pattern: GUARD_NAME_PATTERN }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    enabled: Type.Optional(Type.Boolean()),
    applies_to: Type.Optional(AppliesToInput),
    checks: Type.Array(GuardCheckInput, { minItems: 1, maxItems: 50 }),
  },
  { additionalProperties: false },
);
export type CreateGuardPolicy = Static<typeof CreateGuardPolicy>;

export const UpdateGuardPolicy = Type.Object(
  {
    name: Type.Optional(Type.String({ pattern: GUARD_NAME_PATTERN })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    enabled: Type.Optional(Type.Boolean()),
    applies_to: Type.Optional(AppliesToInput),
    checks: Type.Optional(Type.Array(GuardCheckInput, { minItems: 1, maxItems: 50 })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateGuardPolicy = Static<typeof UpdateGuardPolicy>;

export const GuardPolicy = Type.Object({
  id: Type.String(),
  object: Type.Literal('guard_policy'),
  name: Type.String(),
  description: Nullable(Type.String()),
  enabled: Type.Boolean(),
  applies_to: AppliesTo,
  checks: Type.Array(GuardCheck),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export type GuardPolicy = Static<typeof GuardPolicy>;

export const GuardPolicyList = ListOf(GuardPolicy);
export const GuardPolicyDeleted = Type.Object({
  id: Type.String(),
  object: Type.Literal('guard_policy'),
  deleted: Type.Literal(true),
});
export const GuardParam = Type.Object({
  guard: Type.String({ minLength: 1, maxLength: 200, description: 'Policy id or name' }),
});
export const ListGuardsQuery = Type.Object({ ...PageQuery });

export const VERDICTS = ['passed', 'blocked', 'flagged', 'redacted', 'error'] as const;
export type VerdictKind = (typeof VERDICTS)[number];
const VerdictKind = Type.Union(
  [
    Type.Literal('passed'),
    Type.Literal('blocked'),
    Type.Literal('flagged'),
    Type.Literal('redacted'),
    Type.Literal('error'),
  ],
  {
    description: 'passed; blocked (also a check that failed closed); flagged; redacted; error (failed open)',
  },
);

export const GuardVerdict = Type.Object({
  id: Type.String(),
  object: Type.Literal('guard_verdict'),
  task_log_id: Nullable(Type.String()),
  policy_id: Type.String(),
  guard: Type.String({ description: 'The check’s name: the score’s name' }),
  stage: Stage,
  action: Action,
  verdict: VerdictKind,
  score: Nullable(Type.Number({ description: '1: nothing found; 0: triggered' })),
  passed: Nullable(Type.Boolean()),
  reason: Nullable(Type.String()),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
  latency_ms: Type.Number(),
  created_at: Type.String({ format: 'date-time' }),
});
export type GuardVerdict = Static<typeof GuardVerdict>;
export const GuardVerdictList = ListOf(GuardVerdict);
export const ListVerdictsQuery = Type.Object({
  ...PageQuery,
  task_log_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  guard: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  verdict: Type.Optional(VerdictKind),
});

const Iso = (description: string) => Type.String({ format: 'date-time', description });
export const VerdictSummaryQuery = Type.Object({
  since: Type.Optional(Iso('Verdicts at or after (default: 24 hours before `until`)')),
  until: Type.Optional(Iso('Verdicts before (default: now)')),
  examples: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 20, description: 'Latest verdicts shown per check (3)' }),
  ),
});
export type VerdictSummaryQuery = Static<typeof VerdictSummaryQuery>;

export const VerdictExample = Type.Object({
  ...GuardVerdict.properties,
  model: Nullable(Type.String({ description: "The call's model, when it was recorded" })),
});
export type VerdictExample = Static<typeof VerdictExample>;

export const GuardVerdictCounts = Type.Object({
  guard: Type.String({ description: 'The check’s name' }),
  blocked: Type.Integer(),
  flagged: Type.Integer(),
  redacted: Type.Integer(),
  error: Type.Integer(),
  total: Type.Integer(),
  examples: Type.Array(VerdictExample, { description: 'The latest verdicts of the check, newest first' }),
});
export type GuardVerdictCounts = Static<typeof GuardVerdictCounts>;

export const GuardVerdictSummary = Type.Object({
  object: Type.Literal('guard_verdict_summary'),
  since: Type.String({ format: 'date-time' }),
  until: Type.String({ format: 'date-time' }),
  guards: Type.Array(GuardVerdictCounts, {
    description: 'Per check name, most verdicts first (at most 100 checks); passes are not stored',
  }),
});
export type GuardVerdictSummary = Static<typeof GuardVerdictSummary>;
