import { Type } from 'typebox';
import { FreeObject, Nullable } from '../http/schemas.js';
import { Grader } from '../scoring/graders/schemas.js';

/** `POST /v1/fine_tuning/alpha/graders/run` (openai `GraderRunParams`). */
export const GraderRunBody = Type.Object(
  {
    grader: Grader,
    model_sample: Type.String({
      maxLength: 2_000_000,
      description: 'The model output to grade (the sample namespace)',
    }),
    item: Type.Optional(Type.Unknown({ description: 'The dataset item (the item namespace)' })),
  },
  { additionalProperties: false },
);

/** `POST /v1/fine_tuning/alpha/graders/validate` (openai `GraderValidateParams`). */
export const GraderValidateBody = Type.Object({ grader: Grader }, { additionalProperties: false });

const ErrorFlags = Type.Object({
  formula_parse_error: Type.Boolean(),
  invalid_variable_error: Type.Boolean(),
  model_grader_parse_error: Type.Boolean(),
  model_grader_refusal_error: Type.Boolean(),
  model_grader_server_error: Type.Boolean(),
  model_grader_server_error_details: Nullable(Type.String()),
  other_error: Type.Boolean(),
  python_grader_runtime_error: Type.Boolean(),
  python_grader_runtime_error_details: Nullable(Type.String()),
  python_grader_server_error: Type.Boolean(),
  python_grader_server_error_type: Nullable(Type.String()),
  sample_parse_error: Type.Boolean(),
  truncated_observation_error: Type.Boolean(),
  unresponsive_reward_error: Type.Boolean(),
});

/** openai `GraderRunResponse`. */
export const GraderRunResponse = Type.Object({
  reward: Type.Number(),
  sub_rewards: FreeObject('Rewards of a multi grader’s sub-graders by name'),
  metadata: Type.Object({
    name: Type.String(),
    type: Type.String(),
    errors: ErrorFlags,
    execution_time: Type.Number({ description: 'Seconds' }),
    scores: FreeObject(),
    token_usage: Nullable(Type.Integer()),
    sampled_model_name: Nullable(Type.String()),
    error_message: Nullable(Type.String({ description: 'Evalgate extension: why the item errored' })),
  }),
  model_grader_token_usage_per_model: FreeObject(),
});

export const GraderValidateResponse = Type.Object({ grader: Grader });
