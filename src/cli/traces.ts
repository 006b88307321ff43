import type { Command } from 'commander';
import type { Trace, TraceSpan } from '../client/index.js';
import { clientFrom, usage, wholeNumber } from './client-context.js';
import { countLine, detail, firstItems, print, printJson, seconds, table, usd } from './output.js';

/** `evalgate traces list|get`: traces sent over OTLP and gateway calls, as span trees. */

function errorsOption(raw: string | undefined): boolean | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'only') return true;
  if (raw === 'none') return false;
  throw usage(`--errors must be 'only' or 'none', got '${raw}'`);
}

/** A span's line in the tree: indented by depth, with its model call's model and tokens when it is one. */
function spanRow(s: TraceSpan): unknown[] {
  const call = s.model_call;
  return [
    `${'  '.repeat(s.depth)}${s.name}`,
    s.span_id,
    s.operation ?? s.kind,
    seconds(s.offset_ms),
    seconds(s.duration_ms),
    s.status.code === 'error' ? `error${s.status.message ? `: ${s.status.message}` : ''}` : s.status.code,
    call ? (call.model ?? '-') : '',
    call ? `${call.usage.input_tokens}/${call.usage.output_tokens}` : '',
    call?.task_log_id ?? '',
  ];
}

function showTrace(t: Trace): string {
  const head = detail([
    ['id', t.id],
    ['name', t.name],
    ['service', t.service_name],
    ['container', t.container_id],
    ['session', t.session_id],
    ['started', t.started_at],
    ['duration', seconds(t.duration_ms)],
    ['spans', t.totals.span_count],
    ['errors', t.totals.error_count],
    ['model calls', t.totals.model_call_count],
    ['tokens', `${t.totals.usage.input_tokens} in / ${t.totals.usage.output_tokens} out`],
    ['cost', usd(t.totals.cost)],
  ]);
  const spans = table(
    ['span', 'id', 'operation', 'start', 'duration', 'status', 'model', 'tokens in/out', 'task log'],
    t.spans.map(spanRow),
  );
  return `${head}\n${spans}`;
}

export function registerTraceCommands(program: Command): void {
  const traces = program
    .command('traces')
    .description('read traces (spans sent over OTLP and gateway calls)');

  traces
    .command('list')
    .description('list traces, newest first')
    .option('--container <container>', 'only traces of this container (id or label)')
    .option('--session <session>', 'only traces of this session')
    .option('--model <model>', 'only traces with a call of this model')
    .option('--since <time>', 'only traces started at or after this ISO 8601 time')
    .option('--until <time>', 'only traces started before this ISO 8601 time')
    .option('--errors <only|none>', "'only': traces with an error span; 'none': traces without")
    .option(
      '--min-spans <n>',
      'only traces of at least this many spans (2 hides gateway calls made without a traceparent)',
      wholeNumber('--min-spans'),
    )
    .option('--limit <n>', 'how many traces', wholeNumber('--limit'), 20)
    .option('--json', 'print the traces as a JSON array')
    .action(
      async (
        opts: {
          container?: string;
          session?: string;
          model?: string;
          since?: string;
          until?: string;
          errors?: string;
          minSpans?: number;
          limit: number;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const errors = errorsOption(opts.errors);
        const client = clientFrom(cmd);
        const filters = {
          container: opts.container,
          session: opts.session,
          model: opts.model,
          since: opts.since,
          until: opts.until,
          ...(errors === undefined ? {} : { errors }),
          ...(opts.minSpans === undefined ? {} : { min_spans: opts.minSpans }),
        };
        const { items, total } = await firstItems(
          (limit) => client.traces.list({ ...filters, limit }),
          opts.limit,
        );
        if (opts.json) return printJson(items);
        print(
          table(
            ['id', 'name', 'service', 'started', 'duration', 'spans', 'errors', 'models', 'cost'],
            items.map((t) => [
              t.id,
              t.name,
              t.service_name,
              t.started_at,
              seconds(t.duration_ms),
              t.totals.span_count,
              t.totals.error_count,
              t.models.join(', '),
              usd(t.totals.cost),
            ]),
          ),
        );
        print(countLine(items.length, total, 'traces'));
      },
    );

  traces
    .command('get <trace_id>')
    .description('show a trace: its totals and its spans as a tree')
    .option('--json', 'print the trace as JSON')
    .action(async (traceId: string, opts: { json?: boolean }, cmd: Command) => {
      const trace = await clientFrom(cmd).traces.get(traceId);
      if (opts.json) return printJson(trace);
      print(showTrace(trace));
    });
}
