import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../http/schemas.js';

const Usage = Type.Object({
  prompt_tokens: Type.Integer({ minimum: 0 }),
  completion_tokens: Type.Integer({ minimum: 0 }),
  total_tokens: Type.Integer({ minimum: 0 }),
});

/** A session: a conversation or an agent's run, the calls that belong to it and their totals. */
export const Session = Type.Object({
  object: Type.Literal('session'),
  id: Type.String(),
  project_id: Type.String(),
  container_id: Type.String(),
  assigned_by: Type.Union(
    [Type.Literal('header'), Type.Literal('conversation'), Type.Literal('trace'), Type.Literal('continuity')],
    { description: 'The rule that started the session (see docs/agents.md)' },
  ),
  key: Nullable(
    Type.String({ description: 'The X-Evalgate-Session value, conversation or trace id naming it' }),
  ),
  started_at: Type.String(),
  last_activity_at: Type.String(),
  ended_at: Nullable(
    Type.String({
      description:
        'When the session was ended with POST /v1/sessions/{id}/end; null while open (a later call opens it again)',
    }),
  ),
  turn_count: Type.Integer({ minimum: 0, description: 'Calls in the session' }),
  error_count: Type.Integer({ minimum: 0 }),
  models: Type.Array(Type.String()),
  usage: Usage,
  cost: Type.Number({ description: 'USD' }),
  latency_ms: Type.Number({ description: 'Sum of the calls’ latencies' }),
});
export type Session = Static<typeof Session>;

const ToolCall = Type.Object({ id: Type.String(), name: Type.String(), arguments: Type.Unknown() });
const TurnMessage = Type.Object({
  role: Type.Union([
    Type.Literal('system'),
    Type.Literal('user'),
    Type.Literal('assistant'),
    Type.Literal('tool'),
  ]),
  content: Type.String(),
  tool_call_id: Type.Optional(Type.String()),
  tool_calls: Type.Optional(
    Type.Array(Type.Object(ToolCall.properties, { description: 'A tool call of an earlier answer' }), {
      description:
        "An assistant message's tool calls, in a turn showing a conversation the session did not record (its first)",
    }),
  ),
});
const Handoff = Type.Object(
  {
    from: Nullable(Type.String({ description: 'The agent before, where an earlier handoff named it' })),
    to: Nullable(Type.String({ description: "The agent after, as the transfer's result or tool name says" })),
    tool: Nullable(Type.String({ description: 'The tool call of the previous turn that made the handoff' })),
    tool_call_id: Nullable(Type.String()),
  },
  {
    description:
      'Set on the turn where the agent changed (the conversation went on under another system prompt)',
  },
);

const Score = Type.Object({
  run_id: Type.String(),
  evaluator_id: Type.String(),
  score: Nullable(Type.Number()),
  passed: Nullable(Type.Boolean()),
});

export const Turn = Type.Object({
  index: Type.Integer({ minimum: 0 }),
  task_log_id: Type.String(),
  model: Type.String(),
  created_at: Type.String(),
  status: Type.Union([Type.Literal('success'), Type.Literal('error')]),
  input: Type.Array(TurnMessage, { description: 'What the call added to the conversation' }),
  output: Type.Object({ content: Nullable(Type.String()), tool_calls: Type.Array(ToolCall) }),
  handoff: Nullable(Handoff),
  usage: Nullable(FreeObject()),
  cost: Type.Number(),
  latency_ms: Type.Number(),
  error: Type.Unknown(),
  scores: Type.Array(Score, { description: 'Scores of runs over this call' }),
});

export const SessionDetail = Type.Object({
  ...Session.properties,
  scores: Type.Array(Score, { description: 'Scores of session runs over this session' }),
  turns_offset: Type.Integer({
    minimum: 0,
    description: 'Index of the first turn returned (turn_count says how many there are in all)',
  }),
  turns: Type.Array(Turn),
  tool_calls: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      arguments: Type.Unknown(),
      result: Nullable(Type.String()),
      turn: Type.Integer({ minimum: 0 }),
      scores: Type.Array(Score, {
        description: 'Scores of tool-step runs over this call (its item id: `<session id>#<tool call id>`)',
      }),
    }),
  ),
});
export type SessionDetail = Static<typeof SessionDetail>;

/** One tool call of a session with the conversation up to it: what a tool-step run scores. */
export const ToolStepDetail = Type.Object({
  object: Type.Literal('tool_step'),
  id: Type.String({ description: 'The step as an item: `<session id>#<tool call id>`' }),
  session_id: Type.String(),
  tool_call_id: Type.String(),
  name: Type.String({ description: "The tool's name" }),
  arguments: Type.Unknown({ description: 'The arguments as the model gave them (parsed where JSON)' }),
  result: Nullable(Type.String({ description: 'What the tool returned, as a later call sent it' })),
  turn: Type.Integer({ minimum: 0, description: 'The turn whose answer made the call' }),
  task_log_id: Type.String({ description: "That turn's task log" }),
  index: Type.Integer({ minimum: 0, description: "The step's place among the session's tool calls" }),
  context: Type.Array(TurnMessage, { description: 'The conversation before the call' }),
  scores: Type.Array(Score, { description: 'Scores of tool-step runs over this step' }),
});
export type ToolStepDetail = Static<typeof ToolStepDetail>;

export const ToolStepParams = Type.Object({
  session: Type.String({ minLength: 1, maxLength: 200, description: 'Session id' }),
  tool_call: Type.String({ minLength: 1, maxLength: 300, description: 'Tool call id' }),
});

export const SessionList = ListOf(Session);

export const ListSessionsQuery = Type.Object({
  ...PageQuery,
  container: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Container id or label' }),
  ),
  since: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only sessions active at or after this time' }),
  ),
  until: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only sessions started before this time' }),
  ),
  model: Type.Optional(
    Type.String({ minLength: 1, maxLength: 300, description: 'Only sessions with a call of this model' }),
  ),
  errors: Type.Optional(
    Type.Boolean({ description: 'true: only sessions with a failed call; false: only without' }),
  ),
  min_turns: Type.Optional(Type.Integer({ minimum: 0, description: 'At least this many calls' })),
  max_turns: Type.Optional(Type.Integer({ minimum: 0, description: 'At most this many calls' })),
});
export type ListSessionsQuery = Static<typeof ListSessionsQuery>;

export const SessionIdParam = Type.Object({
  session: Type.String({ minLength: 1, maxLength: 200, description: 'Session id' }),
});

export const SessionTurnsQuery = Type.Object({
  turns_offset: Type.Optional(
    Type.Integer({ minimum: 0, description: 'Index of the first turn to return (default 0)' }),
  ),
  turns_limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: 'Turns to return, at most the server limit (EVALGATE_SESSION_MAX_TURNS, default 1000)',
    }),
  ),
});
export type SessionTurnsQuery = Static<typeof SessionTurnsQuery>;
