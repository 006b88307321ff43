import type { Item } from '../../catalog/items.js';
import { isObject } from '../../shared/json.js';
import type { ScoreInput, ScoreOutcome, Scorer } from '../types.js';
import { outcomeOf } from '../types.js';
import { checkLength, matchToolCalls, type ToolCallLike, toolCallsOf } from './match.js';
import type { ToolCallMatchConfig, TrajectoryConfig, TrajectoryLengthConfig } from './spec.js';

/** An actual tool call with the turn (0-based) that made it, when known. */
interface ActualCall extends ToolCallLike {
  turn: number | null;
}

/** The value at a dotted path of an object (`expected.calls`), or undefined. */
function at(value: unknown, path: string): unknown {
  let v = value;
  for (const key of path.split('.')) {
    if (!isObject(v)) return undefined;
    v = v[key];
  }
  return v;
}

/** A row's value, parsed when it is a JSON string (CSV uploads carry arrays as text). */
function parsedValue(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

/** The turns of a sample: a session's, else the row's own `turns` field (a dataset row with a conversation). */
export function turnsOf(item: Item): unknown[] | null {
  if (item.session) return item.session.turns;
  const turns = parsedValue(at(item.raw, 'turns'));
  return Array.isArray(turns) ? turns : null;
}

/**
 * The tool calls a sample made, in order: a session's; else the row's `tool_calls` field; else those of
 * the row's `turns` (each turn's `tool_calls`, or its `output.tool_calls`, with the turn's index).
 */
export function actualCallsOf(item: Item): ActualCall[] | null {
  if (item.session) {
    return item.session.tool_calls.flatMap((c) =>
      isObject(c) && typeof c.name === 'string'
        ? [{ name: c.name, arguments: c.arguments, turn: typeof c.turn === 'number' ? c.turn : null }]
        : [],
    );
  }
  const raw = parsedValue(at(item.raw, 'tool_calls'));
  if (raw !== undefined) {
    const calls = toolCallsOf(raw);
    if (!calls || !Array.isArray(raw)) return null;
    return calls.map((c, i) => {
      const turn = (raw[i] as Record<string, unknown>).turn;
      return { ...c, turn: typeof turn === 'number' ? turn : null };
    });
  }
  const turns = turnsOf(item);
  if (!turns) return null;
  const out: ActualCall[] = [];
  turns.forEach((t, index) => {
    if (!isObject(t)) return;
    const list = t.tool_calls ?? (isObject(t.output) ? t.output.tool_calls : undefined);
    for (const c of toolCallsOf(list ?? []) ?? []) out.push({ ...c, turn: index });
  });
  return out;
}

const missing = (message: string): ScoreOutcome => outcomeOf({ error: { code: 'missing_data', message } });
const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** The expected calls of a position: the ground-truth row's field, else the sample row's own. */
function expectedCallsOf(input: ScoreInput, config: ToolCallMatchConfig): ToolCallLike[] | null | 'invalid' {
  const sources = [
    input.groundTruth?.raw,
    input.groundTruth?.evalItem,
    input.sample?.raw,
    input.sample?.evalItem,
  ];
  for (const source of sources) {
    const value = parsedValue(at(source, config.expected_field));
    if (value === undefined || value === null) continue;
    return toolCallsOf(value) ?? 'invalid';
  }
  return null;
}

function scoreMatch(input: ScoreInput, config: ToolCallMatchConfig): ScoreOutcome {
  const sample = input.sample;
  const actual = sample ? actualCallsOf(sample) : null;
  if (!actual)
    return missing(
      'the sample has no tool calls to compare (not a session, and no tool_calls or turns field)',
    );
  const expectedRaw = expectedCallsOf(input, config);
  if (expectedRaw === null)
    return missing(`no expected tool calls (the row has no '${config.expected_field}')`);
  if (expectedRaw === 'invalid')
    return missing(`'${config.expected_field}' is not a list of tool calls ({name, arguments})`);
  const schemas = config.tool_schemas;
  const expected =
    config.arguments_match === 'schema' && schemas
      ? expectedRaw.map((e) => ({ name: e.name, arguments: schemas[e.name] ?? e.arguments ?? {} }))
      : expectedRaw;
  const m = matchToolCalls(actual, expected, { mode: config.match_mode, arguments: config.arguments_match });
  const paired = new Set(m.matchedActual);
  const perTurn = new Map<number, { turn: number; tool_calls: number; matched: number }>();
  actual.forEach((call, i) => {
    if (call.turn === null) return;
    const entry = perTurn.get(call.turn) ?? { turn: call.turn, tool_calls: 0, matched: 0 };
    entry.tool_calls++;
    if (paired.has(i)) entry.matched++;
    perTurn.set(call.turn, entry);
  });
  return outcomeOf({
    score: m.pass ? 1 : 0,
    passed: m.pass,
    reason:
      `${config.match_mode}: ${m.matched} of ${m.expected} expected calls matched by ${m.actual} actual ` +
      `(precision ${round(m.precision)}, recall ${round(m.recall)})`,
    extra: {
      precision: round(m.precision),
      recall: round(m.recall),
      pass: m.pass,
      matched: m.matched,
      actual: m.actual,
      expected: m.expected,
      match_mode: config.match_mode,
      arguments_match: config.arguments_match,
      actual_calls: actual.map((c, i) => ({ name: c.name, turn: c.turn, matched: paired.has(i) })),
      per_turn: [...perTurn.values()].sort((a, b) => a.turn - b.turn),
    },
  });
}

function scoreLength(input: ScoreInput, config: TrajectoryLengthConfig): ScoreOutcome {
  const sample = input.sample;
  const length =
    sample === null
      ? null
      : config.length_of === 'turns'
        ? (turnsOf(sample)?.length ?? null)
        : (actualCallsOf(sample)?.length ?? null);
  if (length === null)
    return missing(`the sample has no ${config.length_of === 'turns' ? 'turns' : 'tool calls'}`);
  const spec = {
    count: config.length_of,
    min: config.min_length ?? undefined,
    max: config.max_length ?? undefined,
  };
  const { pass } = checkLength(length, spec);
  const bounds = `[${config.min_length ?? ''}, ${config.max_length ?? ''}]`;
  return outcomeOf({
    score: pass ? 1 : 0,
    passed: pass,
    reason: `${length} ${config.length_of === 'turns' ? 'turns' : 'tool calls'}, bounds ${bounds}`,
    extra: {
      length,
      length_of: config.length_of,
      min_length: config.min_length,
      max_length: config.max_length,
    },
  });
}

/** Scores one position with a trajectory grader: computed here, no model and no sandbox. */
export function scoreTrajectory(input: ScoreInput, config: TrajectoryConfig): ScoreOutcome {
  const started = performance.now();
  const out = config.type === 'tool_call_match' ? scoreMatch(input, config) : scoreLength(input, config);
  return { ...out, latencyMs: performance.now() - started };
}

export function createTrajectoryScorer(config: TrajectoryConfig): Scorer {
  return {
    scoreBatch: (inputs) => Promise.resolve(inputs.map((input) => scoreTrajectory(input, config))),
    close: () => Promise.resolve(),
  };
}
