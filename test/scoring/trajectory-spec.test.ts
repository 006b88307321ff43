// Database-independent: a trajectory evaluator's spec is built and checked from the request alone.
import { describe, expect, it } from 'vitest';
import { buildTrajectoryConfig, trajectoryConfigOf } from '../../src/scoring/trajectory/spec.js';

describe('buildTrajectoryConfig: tool_call_match', () => {
  it('fills in the defaults', () => {
    expect(buildTrajectoryConfig('tool_call_match', null, {})).toEqual({
      config: {
        type: 'tool_call_match',
        match_mode: 'in_order',
        arguments_match: 'exact',
        expected_field: 'expected_tool_calls',
        tool_schemas: null,
      },
      issues: [],
    });
  });

  it("takes a request's fields over the stored spec's", () => {
    const stored = buildTrajectoryConfig('tool_call_match', null, {
      expected_field: 'expected.calls',
    }).config;
    const { config, issues } = buildTrajectoryConfig('tool_call_match', stored, {
      arguments_match: 'schema',
      tool_schemas: { weather: { type: 'object', required: ['city'] } },
    });
    expect(issues).toEqual([]);
    expect(config).toMatchObject({
      expected_field: 'expected.calls',
      arguments_match: 'schema',
      tool_schemas: { weather: { type: 'object', required: ['city'] } },
    });
  });

  it('locates every problem in the body', () => {
    const { issues } = buildTrajectoryConfig('tool_call_match', null, {
      match_mode: 'sometimes',
      expected_field: '1bad path',
      tool_schemas: { a: 'not a schema', b: { type: 'no-such-type' } },
      min_length: 2,
    });
    const at = issues.map((i) => `${i.loc.join('.')}:${i.type}`);
    expect(at).toEqual([
      'body.min_length:extra_forbidden',
      'body.match_mode:value_error',
      'body.expected_field:value_error',
      'body.tool_schemas:extra_forbidden',
      'body.tool_schemas.a:value_error',
      'body.tool_schemas.b:value_error',
    ]);
    expect(issues.find((i) => i.loc.at(-1) === 'b')?.msg).toMatch(/^Not a valid JSON schema: /);
  });
});

describe('buildTrajectoryConfig: trajectory_length', () => {
  it('takes bounds on tool calls by default, or on turns', () => {
    expect(buildTrajectoryConfig('trajectory_length', null, { max_length: 3 })).toEqual({
      config: { type: 'trajectory_length', length_of: 'tool_calls', min_length: null, max_length: 3 },
      issues: [],
    });
    expect(
      buildTrajectoryConfig('trajectory_length', null, { length_of: 'turns', min_length: 0, max_length: 0 })
        .config,
    ).toEqual({ type: 'trajectory_length', length_of: 'turns', min_length: 0, max_length: 0 });
  });

  it('refuses missing, negative, fractional or crossed bounds and an unknown length', () => {
    const msgs = (given: Record<string, unknown>) =>
      buildTrajectoryConfig('trajectory_length', null, given).issues.map((i) => `${i.loc[1]}: ${i.msg}`);
    expect(msgs({})).toEqual(['max_length: Give min_length, max_length or both']);
    expect(msgs({ min_length: -1, max_length: 1.5 })).toEqual([
      'min_length: A whole number, 0 or more',
      'max_length: A whole number, 0 or more',
    ]);
    expect(msgs({ min_length: 4, max_length: 2 })).toEqual([
      'max_length: max_length must be at least min_length',
    ]);
    expect(msgs({ length_of: 'words', max_length: 2 })).toEqual(['length_of: turns or tool_calls']);
    expect(msgs({ max_length: 2, match_mode: 'any_order' })).toEqual([
      'match_mode: Not allowed for trajectory_length evaluators',
    ]);
  });
});

describe('trajectoryConfigOf', () => {
  it('reads back a stored spec of the same type only', () => {
    const { config } = buildTrajectoryConfig('trajectory_length', null, { max_length: 3 });
    expect(trajectoryConfigOf('trajectory_length', JSON.stringify(config))).toEqual(config);
    expect(trajectoryConfigOf('tool_call_match', JSON.stringify(config))).toBeNull();
    expect(trajectoryConfigOf('score_model', JSON.stringify(config))).toBeNull();
    expect(trajectoryConfigOf('trajectory_length', null)).toBeNull();
    expect(trajectoryConfigOf('trajectory_length', '{broken')).toBeNull();
  });
});
