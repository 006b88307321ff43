import { Ajv } from 'ajv';
import type { ValidationIssue } from '../../shared/errors.js';
import { TRAJECTORY_EVALUATOR_TYPES, type TrajectoryEvaluatorType } from '../../shared/grader-types.js';
import { isObject } from '../../shared/json.js';
import { ARGUMENT_MODES, type ArgumentMode, MATCH_MODES, type MatchMode } from './match.js';

/** The trajectory grader types: they score a whole conversation's tool calls or length, not one answer. */
export const TRAJECTORY_TYPES = TRAJECTORY_EVALUATOR_TYPES;
export type TrajectoryType = TrajectoryEvaluatorType;

export function isTrajectoryType(type: string): type is TrajectoryType {
  return (TRAJECTORY_TYPES as readonly string[]).includes(type);
}

/** `tool_call_match`: the actual tool calls against the expected ones a row names. */
export interface ToolCallMatchConfig {
  type: 'tool_call_match';
  match_mode: MatchMode;
  arguments_match: ArgumentMode;
  /** The field of the ground-truth row (else of the sample's own row) that holds the expected calls. */
  expected_field: string;
  /** arguments_match `schema`: a JSON schema per tool name (else the expected call's arguments are one). */
  tool_schemas: Record<string, Record<string, unknown>> | null;
}

/** `trajectory_length`: the number of turns or of tool calls within inclusive bounds. */
export interface TrajectoryLengthConfig {
  type: 'trajectory_length';
  length_of: 'turns' | 'tool_calls';
  min_length: number | null;
  max_length: number | null;
}

export type TrajectoryConfig = ToolCallMatchConfig | TrajectoryLengthConfig;

/** The request fields of each trajectory type (other evaluators may not carry them). */
export const TRAJECTORY_FIELDS_OF: Record<TrajectoryType, readonly string[]> = {
  tool_call_match: ['match_mode', 'arguments_match', 'expected_field', 'tool_schemas'],
  trajectory_length: ['length_of', 'min_length', 'max_length'],
};
export const TRAJECTORY_FIELDS = [
  ...TRAJECTORY_FIELDS_OF.tool_call_match,
  ...TRAJECTORY_FIELDS_OF.trajectory_length,
] as const;

export const DEFAULT_EXPECTED_FIELD = 'expected_tool_calls';
const FIELD_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** Made on first use, not at start. */
let instance: Ajv | null = null;
const ajv = (): Ajv => (instance ??= new Ajv({ strict: false }));

/**
 * The spec a request's fields (over a stored spec's) make for `type`, and every problem with it,
 * located in the request body.
 */
export function buildTrajectoryConfig(
  type: TrajectoryType,
  stored: TrajectoryConfig | null,
  given: Record<string, unknown>,
): { config: TrajectoryConfig; issues: ValidationIssue[] } {
  const previous = (stored?.type === type ? stored : {}) as Record<string, unknown>;
  const value = (f: string): unknown => (given[f] !== undefined ? given[f] : previous[f]);
  const issues: ValidationIssue[] = [];
  const bad = (field: string, msg: string, kind = 'value_error') =>
    issues.push({ loc: ['body', field], msg, type: kind });
  for (const t of TRAJECTORY_TYPES) {
    if (t === type) continue;
    for (const f of TRAJECTORY_FIELDS_OF[t]) {
      if (given[f] !== undefined && given[f] !== null)
        bad(f, `Not allowed for ${type} evaluators`, 'extra_forbidden');
    }
  }
  if (type === 'tool_call_match') {
    const mode = value('match_mode') ?? 'in_order';
    const args = value('arguments_match') ?? 'exact';
    const field = value('expected_field') ?? DEFAULT_EXPECTED_FIELD;
    const schemas = value('tool_schemas') ?? null;
    if (!(MATCH_MODES as readonly unknown[]).includes(mode))
      bad('match_mode', `One of ${MATCH_MODES.join(', ')}`);
    if (!(ARGUMENT_MODES as readonly unknown[]).includes(args))
      bad('arguments_match', `One of ${ARGUMENT_MODES.join(', ')}`);
    if (typeof field !== 'string' || !FIELD_PATTERN.test(field))
      bad(
        'expected_field',
        'A field name or dotted path of the row, as `expected_tool_calls` or `expected.calls`',
      );
    if (schemas !== null) {
      if (!isObject(schemas)) bad('tool_schemas', 'An object: tool name → JSON schema of its arguments');
      else {
        if (args !== 'schema') bad('tool_schemas', "Only with arguments_match 'schema'", 'extra_forbidden');
        for (const [tool, schema] of Object.entries(schemas)) {
          if (!isObject(schema)) {
            issues.push({
              loc: ['body', 'tool_schemas', tool],
              msg: 'A JSON schema (an object)',
              type: 'value_error',
            });
            continue;
          }
          try {
            ajv().compile(schema);
          } catch (err) {
            issues.push({
              loc: ['body', 'tool_schemas', tool],
              msg: `Not a valid JSON schema: ${(err as Error).message}`,
              type: 'value_error',
            });
          }
        }
      }
    }
    return {
      config: {
        type,
        match_mode: mode as MatchMode,
        arguments_match: args as ArgumentMode,
        expected_field: String(field),
        tool_schemas: isObject(schemas) ? (schemas as ToolCallMatchConfig['tool_schemas']) : null,
      },
      issues,
    };
  }
  const of = value('length_of') ?? 'tool_calls';
  const min = value('min_length') ?? null;
  const max = value('max_length') ?? null;
  if (of !== 'turns' && of !== 'tool_calls') bad('length_of', 'turns or tool_calls');
  const bound = (f: string, v: unknown) => {
    if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 0))
      bad(f, 'A whole number, 0 or more');
  };
  bound('min_length', min);
  bound('max_length', max);
  if (min === null && max === null) bad('max_length', 'Give min_length, max_length or both', 'missing');
  if (typeof min === 'number' && typeof max === 'number' && min > max)
    bad('max_length', 'max_length must be at least min_length');
  return {
    config: {
      type,
      length_of: of === 'turns' ? 'turns' : 'tool_calls',
      min_length: typeof min === 'number' ? min : null,
      max_length: typeof max === 'number' ? max : null,
    },
    issues,
  };
}

/** The spec stored for a trajectory evaluator (the `grader` column holds it), or null. */
export function trajectoryConfigOf(type: string, stored: string | null): TrajectoryConfig | null {
  if (!isTrajectoryType(type) || stored === null) return null;
  try {
    const spec: unknown = JSON.parse(stored);
    return isObject(spec) && spec.type === type ? (spec as unknown as TrajectoryConfig) : null;
  } catch {
    return null;
  }
}
