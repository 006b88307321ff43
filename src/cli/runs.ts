import type { Command } from 'commander';
import type { Evalgate, ListSamplesParams, Run, RunStatus } from '../client/index.js';
import { clientFrom, collect, usage, wholeNumber } from './client-context.js';
import { finishRun, parseGates, summaryTarget } from './gating.js';
import { Names } from './names.js';
import { countLine, firstItems, fixed, print, printJson, seconds, snippet, table, usd } from './output.js';
import { type RunFlags, runBody } from './run-body.js';
import { comparisonReport } from './run-compare.js';
import { missingLines } from './run-missing.js';
import { checkAll, coverAll, rangeNotes, sideRows } from './run-range.js';
import { durationMs, progressText, resultRows, resultsTable, runDetail, sideText } from './run-results.js';
import { watchRun } from './run-watch.js';

interface GateFlags {
  json?: boolean;
  failUnder: string[];
  summary?: string;
}

const STATUSES = ['queued', 'running', 'completed', 'error', 'cancelled'];

function gateOptions(command: Command): Command {
  return command
    .option(
      '--fail-under <[evaluator.]metric=value>',
      'exit 1 when a figure is below: accuracy=0.8, avg_score=0.7, helpfulness.accuracy=0.8 (repeatable)',
      collect,
      [],
    )
    .option('--summary <markdown[=FILE]>', 'write a markdown summary (stdout, FILE or $GITHUB_STEP_SUMMARY)');
}

/** Prints a finished (or fetched) run and applies the CI gates: the exit code comes from finishRun. */
async function report(client: Evalgate, run: Run, flags: GateFlags, requireEnd: boolean): Promise<void> {
  const gates = parseGates(flags.failUnder);
  const summary = summaryTarget(flags.summary, flags.json === true);
  if (flags.json) printJson(run);
  else if (requireEnd) {
    print(
      `\n${run.id} ${run.status}: ${progressText(run)} samples, spend ${usd(run.spend)}, ` +
        `duration ${seconds(durationMs(run))}${run.error ? `\nerror ${run.error.code}: ${run.error.message}` : ''}`,
    );
    print(resultsTable(run));
  } else print(runDetail(await new Names(client).run(run)));
  if (!flags.json) for (const line of await missingLines(client, run)) print(line);
  finishRun(run, { gates, summary, requireEnd });
}

/** Validates the gate flags before anything is launched or followed. */
function checkGateFlags(flags: GateFlags): void {
  parseGates(flags.failUnder);
  summaryTarget(flags.summary, flags.json === true);
}

async function watchAndReport(client: Evalgate, runId: string, flags: GateFlags): Promise<void> {
  const run = await watchRun(client, runId, { json: flags.json === true });
  await report(client, run, flags, true);
}

/** `runs list`: runs, newest first. */
function addListCommand(runs: Command): void {
  runs
    .command('list')
    .description('list runs, newest first')
    .option('--container <container>', 'runs of this container (id or label)')
    .option('--status <status>', `runs in this status: ${STATUSES.join(', ')}`)
    .option('--name <name>', 'runs with exactly this name')
    .option('--limit <n>', 'how many runs', wholeNumber('--limit'), 20)
    .option('--json', 'print the runs as a JSON array')
    .action(
      async (
        opts: { container?: string; status?: string; name?: string; limit: number; json?: boolean },
        cmd: Command,
      ) => {
        if (opts.status !== undefined && !STATUSES.includes(opts.status)) {
          throw usage(`--status must be one of ${STATUSES.join(', ')}, got "${opts.status}"`);
        }
        const client = clientFrom(cmd);
        const { items, total } = await firstItems(
          (limit) =>
            client.runs.list({
              container: opts.container,
              status: opts.status as RunStatus,
              name: opts.name,
              limit,
            }),
          opts.limit,
        );
        if (opts.json) return printJson(items);
        const names = new Names(client);
        const shown = await Promise.all(items.map((r) => names.run(r)));
        print(
          table(
            [
              'id',
              'name',
              'status',
              'container',
              'evaluators',
              'sample',
              'progress',
              'avg score',
              'spend',
              'created',
            ],
            shown.map((r) => [
              r.id,
              r.name ?? '',
              r.status,
              r.container,
              snippet(r.evaluators?.join(', '), 40),
              sideText(r.sample),
              progressText(r),
              fixed(r.results?.overall?.avg_score),
              usd(r.spend),
              r.created_at,
            ]),
          ),
        );
        print(countLine(items.length, total, 'runs'));
      },
    );
}

/** `runs create`: launches a run, then shows it (or follows it to its results with --watch or a gate). */
function addCreateCommand(runs: Command): void {
  gateOptions(
    runs
      .command('create')
      .description('launch a run (see docs/cli.md for how --dataset, --logs and --generate shape it)')
      .requiredOption('--container <container>', 'the run container (id or label)')
      .option('--evaluator <evaluator>', 'evaluator id or name (repeatable)', collect, [])
      .option('--dataset <dataset>', 'sample (and ground truth) from this dataset')
      .option('--logs', "sample from the container's task logs")
      .option('--generate <models>', 'sample: fresh completions from these models, comma-separated')
      .option(
        '--prompt <name[@version|@label]>',
        'sample: render this prompt version over each item (repeatable; an experiment: versions × models)',
        collect,
        [],
      )
      .option('--sessions <container>', "sample: the container's sessions, one position each")
      .option(
        '--tool-steps <container>',
        "sample: the tool calls of the container's sessions, one position each",
      )
      .option('--tool <name>', 'with --tool-steps: only the calls of this tool (repeatable)', collect, [])
      .option('--simulate <models>', 'sample: simulated conversations with these models, comma-separated')
      .option('--user-model <model>', 'with --simulate: the model playing the user')
      .option('--max-turns <n>', 'with --simulate: user messages per conversation at most (default 5)')
      .option(
        '--ground-truth <side>',
        'dataset:NAME[@VERSION] or logs (default: the --dataset, else the task logs)',
      )
      .option('--baseline <side>', 'dataset:NAME, logs or generate:MODEL, for pairwise judges')
      .option('--range <start:end>', 'positions of each side, 0-based, end exclusive (server default 0:100)')
      .option('--all', 'every row of each dataset or task-log side (instead of --range)')
      .option('--environment <name>', 'the environment (pool of workers) to run in (default main)')
      .option('--name <name>', 'a name for the run, shown beside its id in lists and pickers')
      .option('--metadata <key=value>', 'metadata of the run (repeatable)', collect, [])
      .option('--cache [ttl]', 'answer identical generation and judge calls from the response cache (TTL s)')
      .option('--idempotency-key <key>', 'the same key with the same flags returns the same run')
      .option('--watch', 'follow the run until it ends, then print its results')
      .option('--json', 'print the run as JSON'),
  ).action(
    async (
      opts: RunFlags & GateFlags & { watch?: boolean; idempotencyKey?: string; all?: boolean },
      cmd: Command,
    ) => {
      checkAll(opts);
      let body = runBody(opts);
      checkGateFlags(opts);
      const client = clientFrom(cmd);
      const conversations = opts.sessions !== undefined || opts.toolSteps !== undefined;
      if (opts.all && conversations) throw usage('--all does not count sessions or tool steps: give --range');
      // Sessions and tool steps are not rows of a dataset or task logs: their sides are not counted here.
      const rows = conversations ? new Map() : await sideRows(client, body);
      if (opts.all) body = coverAll(body, rows);
      // Say when a side's range leaves rows out (stderr: --json output stays one document).
      for (const note of rangeNotes(body, rows)) process.stderr.write(`${note}\n`);
      const run = await client.runs.create(
        body,
        opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {},
      );
      // Gates and summaries are about results: asking for them waits as --watch does.
      if (opts.watch || opts.failUnder.length > 0 || opts.summary !== undefined) {
        if (!opts.json) print(`Created run ${run.id}`);
        return watchAndReport(client, run.id, opts);
      }
      if (opts.json) return printJson(run);
      print(runDetail(await new Names(client).run(run)));
      print(`Follow it with: evalgate runs watch ${run.id}`);
    },
  );
}

export function registerRunCommands(program: Command): void {
  const runs = program.command('runs').description('launch, follow and inspect evaluation runs');

  addListCommand(runs);

  gateOptions(
    runs
      .command('get <run>')
      .description('show a run: status, sides, progress, spend and results')
      .option('--json', 'print the run as JSON'),
  ).action(async (runId: string, opts: GateFlags, cmd: Command) => {
    checkGateFlags(opts);
    const client = clientFrom(cmd);
    await report(client, await client.runs.get(runId), opts, false);
  });

  addCreateCommand(runs);

  gateOptions(
    runs
      .command('watch <run>')
      .description('follow a run with a progress bar until it ends, then print its results')
      .option('--json', 'print the finished run as JSON (progress goes to stderr)'),
  ).action(async (runId: string, opts: GateFlags, cmd: Command) => {
    checkGateFlags(opts);
    await watchAndReport(clientFrom(cmd), runId, opts);
  });

  runs
    .command('rename <run> [name]')
    .description('name a run (any status); without a name, remove its name')
    .option('--json', 'print the run as JSON')
    .action(async (runId: string, name: string | undefined, opts: { json?: boolean }, cmd: Command) => {
      const run = await clientFrom(cmd).runs.update(runId, { name: name ?? null });
      if (opts.json) return printJson(run);
      print(run.name === null ? `Run ${run.id} has no name` : `Run ${run.id} is named "${run.name}"`);
    });

  runs
    .command('cancel <run>')
    .description('stop a queued or running run; its partial results are kept')
    .option('--json', 'print the cancelled run as JSON')
    .action(async (runId: string, opts: { json?: boolean }, cmd: Command) => {
      const run = await clientFrom(cmd).runs.cancel(runId);
      if (opts.json) return printJson(run);
      print(`Run ${run.id} is ${run.status} (${progressText(run)} samples done)`);
    });

  runs
    .command('samples <run>')
    .description('per-sample results: one per launch, evaluator and position')
    .option('--evaluator <evaluator>', 'of this evaluator (id or name)')
    .option('--launch <n>', 'of this launch', wholeNumber('--launch', 0))
    .option('--passed', 'only samples that passed')
    .option('--failed', 'only samples that failed')
    .option('--errored', 'only samples whose evaluation failed')
    .option('--missing', 'only samples that could not be scored (each says why)')
    .option('--limit <n>', 'how many samples', wholeNumber('--limit'), 20)
    .option('--json', 'print the samples as a JSON array')
    .action(async (runId: string, opts: SampleFlags, cmd: Command) => {
      await samples(clientFrom(cmd), runId, opts);
    });

  runs
    .command('compare <run>')
    .description('paired score differences against a baseline run, or between launches of the run (--by)')
    .option('--baseline <run>', 'the run to compare against')
    .option('--by <what>', 'compare launches of the run: prompt_version (same model) or model (same prompt)')
    .option(
      '--reference <ref>',
      'with --by: the reference prompt version (NAME@VERSION, NAME@LABEL) or model',
    )
    .option('--limit <n>', 'regressions listed per evaluator and launch (1..100)', wholeNumber('--limit'))
    .option('--json', 'print the comparison as JSON')
    .action(
      async (
        runId: string,
        opts: { baseline?: string; by?: string; reference?: string; limit?: number; json?: boolean },
        cmd: Command,
      ) => {
        if ((opts.baseline === undefined) === (opts.by === undefined)) {
          throw usage('give exactly one of --baseline RUN and --by prompt_version|model');
        }
        if (opts.by !== undefined && opts.by !== 'prompt_version' && opts.by !== 'model') {
          throw usage(`--by takes prompt_version or model, got "${opts.by}"`);
        }
        if (opts.reference !== undefined && opts.by === undefined) throw usage('--reference goes with --by');
        const comparison = await clientFrom(cmd).runs.compare(runId, {
          ...(opts.baseline !== undefined ? { baseline: opts.baseline } : {}),
          ...(opts.by !== undefined ? { by: opts.by as 'prompt_version' | 'model' } : {}),
          ...(opts.reference !== undefined ? { reference: opts.reference } : {}),
          ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
        });
        if (opts.json) return printJson(comparison);
        print(comparisonReport(comparison));
      },
    );
}

interface SampleFlags {
  evaluator?: string;
  launch?: number;
  passed?: boolean;
  failed?: boolean;
  errored?: boolean;
  missing?: boolean;
  limit: number;
  json?: boolean;
}

async function samples(client: Evalgate, runId: string, opts: SampleFlags): Promise<void> {
  if ([opts.passed, opts.failed, opts.errored, opts.missing].filter(Boolean).length > 1) {
    throw usage('give at most one of --passed, --failed, --errored and --missing');
  }
  const params: ListSamplesParams = {};
  if (opts.evaluator !== undefined) params.evaluator = opts.evaluator;
  if (opts.launch !== undefined) params.launch = opts.launch;
  if (opts.passed) params.passed = true;
  if (opts.failed) params.passed = false;
  if (opts.errored) params.errored = true;
  if (opts.missing) params.status = 'missing';
  const [{ items, total }, run] = await Promise.all([
    firstItems((limit) => client.runs.samples(runId, { ...params, limit }), opts.limit),
    opts.json ? null : client.runs.get(runId),
  ]);
  if (opts.json) return printJson(items);
  // Samples name their evaluator by id; the run's results know the names.
  const names = new Map((run ? resultRows(run) : []).map((r) => [r.evaluatorId, r.evaluator]));
  const lookup = new Names(client);
  for (const s of items) {
    if (!names.has(s.evaluator_id))
      names.set(s.evaluator_id, (await lookup.evaluator(s.evaluator_id)) ?? '-');
  }
  print(
    table(
      [
        'launch',
        'evaluator',
        'position',
        'status',
        'score',
        'passed',
        'input',
        'output',
        'expected',
        'reasoning / error / why missing',
      ],
      items.map((s) => [
        s.launch_index,
        names.get(s.evaluator_id) ?? s.evaluator_id,
        s.position,
        s.status,
        fixed(s.score),
        s.passed === null ? '-' : s.passed ? 'yes' : 'no',
        snippet(s.input, 24),
        snippet(s.output, 24),
        snippet(s.expected, 16),
        // A traceback's last line says what went wrong; the whole of it follows the table.
        snippet(
          s.status === 'missing' && s.missing_reason
            ? s.missing_reason
            : s.error
              ? lastLine(errorText(s.error))
              : s.reasoning,
          48,
        ),
      ]),
    ),
  );
  print(countLine(items.length, total, 'samples'));
  const errors = items.filter(
    (s) => s.error && String((s.error as { message?: unknown }).message ?? '').includes('\n'),
  );
  for (const s of errors) {
    const name = names.get(s.evaluator_id) ?? s.evaluator_id;
    print(`\n${name} at position ${s.position} (launch ${s.launch_index}):`);
    print(errorText(s.error ?? {}).replace(/^/gm, '  '));
  }
}

/** The last non-empty line of a text (a traceback's exception line). */
function lastLine(text: string): string {
  return text.trimEnd().split('\n').at(-1)?.trim() ?? '';
}

function errorText(error: object): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return [code, message].filter((v) => typeof v === 'string').join(': ');
}
