import type { Command } from 'commander';
import type { SessionDetail } from '../client/index.js';
import { clientFrom, usage, wholeNumber } from './client-context.js';
import { countLine, detail, firstItems, print, printJson, seconds, snippet, table, usd } from './output.js';

/** `evalgate sessions list|get|end`: conversations and agent runs, the gateway's calls grouped. */

type Turn = SessionDetail['turns'][number];
type ToolCall = SessionDetail['tool_calls'][number];

function errorsOption(raw: string | undefined): boolean | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'only') return true;
  if (raw === 'none') return false;
  throw usage(`--errors must be 'only' or 'none', got '${raw}'`);
}

/** Where the agent changed, as the input column starts: `[handoff to refunds by transfer_to_refunds]`. */
function handoffMark(h: Turn['handoff']): string {
  if (!h) return '';
  return `[handoff${h.from ? ` from ${h.from}` : ''}${h.to ? ` to ${h.to}` : ''}${h.tool ? ` by ${h.tool}` : ''}] `;
}

/**
 * A turn's line: the handoff that led to it, what the call added (the user's message, tool results), its
 * answer, its tool calls.
 */
function turnRow(t: Turn, results: Map<string, ToolCall>): unknown[] {
  const said = t.input.filter((m) => m.role === 'user').map((m) => m.content);
  const toolResults = t.input.filter((m) => m.role === 'tool').length;
  const added = said.join(' / ') || (toolResults > 0 ? `(${toolResults} tool results)` : '');
  const calls = t.output.tool_calls.map((c) => {
    const call = results.get(c.id);
    const scored = call?.scores.length ? ` [${scoreList(call.scores)}]` : '';
    return `${c.name}(${JSON.stringify(c.arguments)}) -> ${snippet(call?.result ?? '-', 30)}${scored}`;
  });
  const usageOf = t.usage as { prompt_tokens?: number; completion_tokens?: number } | null;
  return [
    t.index + 1,
    t.model,
    snippet(handoffMark(t.handoff) + added, t.handoff ? 80 : 40),
    snippet(t.output.content ?? '', 40),
    calls.join('; '),
    `${usageOf?.prompt_tokens ?? 0}/${usageOf?.completion_tokens ?? 0}`,
    usd(t.cost),
    seconds(t.latency_ms),
    t.status,
    scoreList(t.scores),
  ];
}

function scoreList(scores: Turn['scores']): string {
  return scores.map((s) => `${s.evaluator_id}=${s.score ?? '-'}`).join(', ');
}

function showSession(s: SessionDetail): string {
  const head = detail([
    ['id', s.id],
    ['key', s.key],
    ['container', s.container_id],
    ['grouped by', s.assigned_by],
    ['started', s.started_at],
    ['last activity', s.last_activity_at],
    ['ended', s.ended_at ?? 'no (open)'],
    ['turns', s.turn_count],
    ['errors', s.error_count],
    ['models', s.models.join(', ')],
    ['tokens', `${s.usage.prompt_tokens} in / ${s.usage.completion_tokens} out`],
    ['cost', usd(s.cost)],
    ['latency', seconds(s.latency_ms)],
  ]);
  const results = new Map(s.tool_calls.map((c) => [c.id, c]));
  const turns = table(
    [
      'turn',
      'model',
      'input',
      'answer',
      'tool calls',
      'tokens in/out',
      'cost',
      'latency',
      'status',
      'scores',
    ],
    s.turns.map((t) => turnRow(t, results)),
  );
  const shown =
    s.turns.length < s.turn_count
      ? `\nturns ${s.turns_offset + 1}–${s.turns_offset + s.turns.length} of ${s.turn_count} (--turns-offset for more)`
      : '';
  return `${head}\n${turns}${shown}`;
}

export function registerSessionCommands(program: Command): void {
  const sessions = program
    .command('sessions')
    .description('read sessions (conversations and agent runs grouped from gateway calls)');

  sessions
    .command('list')
    .description('list sessions, newest first')
    .option('--container <container>', 'only sessions of this container (id or label)')
    .option('--model <model>', 'only sessions with a call of this model')
    .option('--since <time>', 'only sessions active at or after this ISO 8601 time')
    .option('--until <time>', 'only sessions started before this ISO 8601 time')
    .option('--errors <only|none>', "'only': sessions with a failed call; 'none': sessions without")
    .option('--min-turns <n>', 'at least this many calls', wholeNumber('--min-turns', 0))
    .option('--max-turns <n>', 'at most this many calls', wholeNumber('--max-turns', 0))
    .option('--limit <n>', 'how many sessions', wholeNumber('--limit'), 20)
    .option('--json', 'print the sessions as a JSON array')
    .action(
      async (
        opts: {
          container?: string;
          model?: string;
          since?: string;
          until?: string;
          errors?: string;
          minTurns?: number;
          maxTurns?: number;
          limit: number;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const errors = errorsOption(opts.errors);
        const client = clientFrom(cmd);
        const filters = {
          container: opts.container,
          model: opts.model,
          since: opts.since,
          until: opts.until,
          min_turns: opts.minTurns,
          max_turns: opts.maxTurns,
          ...(errors === undefined ? {} : { errors }),
        };
        const { items, total } = await firstItems(
          (limit) => client.sessions.list({ ...filters, limit }),
          opts.limit,
        );
        if (opts.json) return printJson(items);
        print(
          table(
            ['id', 'key', 'started', 'turns', 'errors', 'models', 'tokens', 'cost', 'grouped by'],
            items.map((s) => [
              s.id,
              s.key,
              s.started_at,
              s.turn_count,
              s.error_count,
              s.models.join(', '),
              s.usage.total_tokens,
              usd(s.cost),
              s.assigned_by,
            ]),
          ),
        );
        print(countLine(items.length, total, 'sessions'));
      },
    );

  sessions
    .command('get <session_id>')
    .description('show a session: its totals and its turns with tool calls, tokens, cost and scores')
    .option('--turns-offset <n>', 'first turn to show (0-based)', wholeNumber('--turns-offset', 0))
    .option(
      '--turns-limit <n>',
      'how many turns to show (at most the server limit)',
      wholeNumber('--turns-limit'),
    )
    .option('--json', 'print the session as JSON')
    .action(
      async (
        sessionId: string,
        opts: { turnsOffset?: number; turnsLimit?: number; json?: boolean },
        cmd: Command,
      ) => {
        const session = await clientFrom(cmd).sessions.get(sessionId, {
          turns_offset: opts.turnsOffset,
          turns_limit: opts.turnsLimit,
        });
        if (opts.json) return printJson(session);
        print(showSession(session));
      },
    );

  sessions
    .command('step <session_id> <tool_call_id>')
    .description('show a tool step: one tool call, its result, the conversation before it, and its scores')
    .option('--json', 'print the step as JSON')
    .action(async (sessionId: string, toolCallId: string, opts: { json?: boolean }, cmd: Command) => {
      const step = await clientFrom(cmd).sessions.toolCall(sessionId, toolCallId);
      if (opts.json) return printJson(step);
      const context = step.context.map((m) => `  ${m.role}: ${snippet(m.content, 100)}`).join('\n');
      print(
        `${detail([
          ['step', step.id],
          ['tool', step.name],
          ['arguments', JSON.stringify(step.arguments)],
          ['result', step.result ?? '(none recorded)'],
          ['turn', step.turn + 1],
          ['task log', step.task_log_id],
          ['scores', scoreList(step.scores) || '-'],
        ])}\nbefore it:\n${context}`,
      );
    });

  sessions
    .command('end <session_id>')
    .description('end a session: a session monitor scores it now instead of waiting for it to be idle')
    .option('--json', 'print the session as JSON')
    .action(async (sessionId: string, opts: { json?: boolean }, cmd: Command) => {
      const session = await clientFrom(cmd).sessions.end(sessionId);
      if (opts.json) return printJson(session);
      print(`Ended ${session.id} at ${session.ended_at} (${session.turn_count} turns).`);
    });
}
