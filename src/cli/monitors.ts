import fs from 'node:fs';
import type { Command } from 'commander';
import type { CreateMonitor, Evalgate, Monitor, MonitorResults, PatchMonitor } from '../client/index.js';
import { clientFrom, collect, keyValues, numberOption, usage, wholeNumber } from './client-context.js';
import { Names } from './names.js';
import { countLine, detail, firstItems, fixed, print, printJson, snippet, table, usd } from './output.js';

/** `evalgate monitors …`: standing rules that score a sampled share of a container's calls. */

interface Flags {
  file?: string;
  name?: string;
  container?: string;
  evaluator: string[];
  rate?: string;
  model: string[];
  route: string[];
  metadata: string[];
  guardVerdict: string[];
  guard: string[];
  environment?: string;
  backfillSince?: string;
  backfillUntil?: string;
  alertEvaluator?: string;
  alertMetric?: string;
  alertBelow?: string;
  alertWindow?: string;
  alertMinSamples?: string;
  webhook?: string;
  json?: boolean;
}

function readBody(path: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(path, 'utf8'));
    if (typeof value === 'object' && value !== null && !Array.isArray(value))
      return value as Record<string, unknown>;
  } catch (err) {
    throw usage(`cannot read ${path} as JSON: ${(err as Error).message}`);
  }
  throw usage(`${path} must hold one JSON object`);
}

/** The body from `-f FILE`, then the flags on top of it (flags win). */
function bodyOf(flags: Flags): Record<string, unknown> {
  const body: Record<string, unknown> = flags.file ? readBody(flags.file) : {};
  if (flags.name !== undefined) body.name = flags.name;
  if (flags.container !== undefined) body.container = flags.container;
  if (flags.evaluator.length) body.evaluators = flags.evaluator;
  if (flags.rate !== undefined) body.sampling_rate = numberOption('--rate', flags.rate);
  if (flags.environment !== undefined) body.environment = flags.environment;
  const filter: Record<string, unknown> = {};
  if (flags.model.length) filter.models = flags.model;
  if (flags.route.length) filter.routes = flags.route;
  if (flags.metadata.length) filter.metadata = keyValues('--metadata', flags.metadata);
  const guards = Object.entries({ verdicts: flags.guardVerdict, names: flags.guard });
  if (guards.some(([, v]) => v.length))
    filter.guards = Object.fromEntries(guards.filter(([, v]) => v.length));
  if (Object.keys(filter).length) body.filter = filter;
  if (flags.backfillSince) body.backfill = { since: flags.backfillSince, until: flags.backfillUntil };
  if (flags.webhook !== undefined) {
    body.alert = {
      evaluator: flags.alertEvaluator ?? flags.evaluator[0],
      metric: flags.alertMetric ?? 'pass_rate',
      below: numberOption('--alert-below', flags.alertBelow ?? '0.8'),
      window: numberOption('--alert-window', flags.alertWindow ?? '3600'),
      min_samples: numberOption('--alert-min-samples', flags.alertMinSamples ?? '10'),
      webhook_url: flags.webhook,
    };
  }
  return body;
}

function options(command: Command): Command {
  return command
    .option('-f, --file <file.json>', 'the monitor as JSON (the body of POST /v1/monitors)')
    .option('--name <name>', 'unique name in the project')
    .option('--rate <r>', 'share of the matching calls scored, 0 < r <= 1')
    .option('--model <model>', 'only calls to this model (repeatable)', collect, [])
    .option(
      '--route <route>',
      'only calls through chat, responses, messages or embeddings (repeatable)',
      collect,
      [],
    )
    .option('--metadata <key=value>', 'only calls with this metadata (repeatable)', collect, [])
    .option(
      '--guard-verdict <verdict>',
      'only calls with a guard verdict of this kind (repeatable)',
      collect,
      [],
    )
    .option('--guard <check>', 'only calls with a verdict of this guard check (repeatable)', collect, [])
    .option('--webhook <url>', 'alert: the URL receiving signed POSTs')
    .option('--alert-evaluator <evaluator>', 'alert: the evaluator watched (default: the first)')
    .option('--alert-metric <metric>', 'alert: pass_rate (default) or avg_score')
    .option('--alert-below <number>', 'alert: fires below this (default 0.8)')
    .option('--alert-window <seconds>', 'alert: the window (default 3600)')
    .option('--alert-min-samples <n>', 'alert: scored calls needed to decide (default 10)')
    .option('--json', 'print the monitor as JSON');
}

async function show(client: Evalgate, m: Monitor): Promise<void> {
  const names = new Names(client);
  const [container, evaluators] = await Promise.all([
    names.container(m.container),
    names.evaluators(m.evaluators),
  ]);
  print(
    detail([
      ['id', m.id],
      ['name', m.name],
      ['container', container],
      ['evaluators', evaluators?.join(', ')],
      ['sampling rate', m.sampling_rate],
      ['filter', Object.keys(m.filter).length ? m.filter : null],
      ['enabled', m.enabled],
      ['environment', m.environment],
      ['selected', m.selected],
      ['spend', usd(m.spend)],
      ['lag', `${m.lag_seconds.toFixed(1)} s`],
      ['alert', m.alert],
      ['alert state', m.alert_state],
      ['created', m.created_at],
    ]),
  );
  if (m.alert_secret) print(`Webhook signing secret (shown once): ${m.alert_secret}`);
}

const pct = (n: number, d: number) => (d > 0 ? `${((100 * n) / d).toFixed(1)}%` : '-');

/** One row per bucket and evaluator, then the totals. */
export function resultsTable(r: MonitorResults): string {
  const rows: unknown[][] = [];
  for (const b of r.buckets) {
    for (const e of b.evaluators) {
      rows.push([
        b.start,
        e.name,
        e.num_scored,
        pct(e.num_passed, e.num_passed + e.num_failed),
        fixed(e.avg_score),
        e.num_errors,
      ]);
    }
  }
  for (const e of r.totals) {
    rows.push([
      'total',
      e.name,
      e.num_scored,
      pct(e.num_passed, e.num_passed + e.num_failed),
      fixed(e.avg_score),
      e.num_errors,
    ]);
  }
  return table(['bucket', 'evaluator', 'scored', 'pass rate', 'avg score', 'errors'], rows);
}

/** `monitors list`: monitors, newest first. */
function addListCommand(monitors: Command): void {
  monitors
    .command('list')
    .description('list monitors, newest first')
    .option('--container <container>', 'monitors of this container (id or label)')
    .option('--limit <n>', 'how many monitors', wholeNumber('--limit'), 20)
    .option('--json', 'print the monitors as a JSON array')
    .action(async (opts: { container?: string; limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const { items, total } = await firstItems(
        (limit) => client.monitors.list({ container: opts.container, limit }),
        opts.limit,
      );
      if (opts.json) return printJson(items);
      const names = new Names(client);
      const containers = await Promise.all(items.map((m) => names.container(m.container)));
      print(
        table(
          ['id', 'name', 'container', 'rate', 'enabled', 'selected', 'spend', 'lag s', 'alert'],
          items.map((m, i) => [
            m.id,
            m.name,
            containers[i],
            m.sampling_rate,
            m.enabled,
            m.selected,
            usd(m.spend),
            m.lag_seconds.toFixed(1),
            m.alert_state,
          ]),
        ),
      );
      print(countLine(items.length, total, 'monitors'));
    });
}

/** `monitors results`: pass rate and average score per bucket, redrawn with --watch. */
function addResultsCommand(monitors: Command): void {
  monitors
    .command('results <monitor>')
    .description('per-evaluator pass rate and average score per time bucket; --watch redraws it live')
    .option('--since <iso>', 'calls recorded at or after')
    .option('--until <iso>', 'calls recorded before')
    .option('--bucket <bucket>', 'minute, hour (default) or day')
    .option('--watch', 'redraw every --interval seconds until interrupted')
    .option('--interval <seconds>', 'seconds between redraws', wholeNumber('--interval'), 5)
    .option('--times <n>', 'with --watch: stop after n draws', wholeNumber('--times'))
    .option('--json', 'print the results as JSON')
    .action(
      async (
        ref: string,
        opts: {
          since?: string;
          until?: string;
          bucket?: string;
          watch?: boolean;
          interval: number;
          times?: number;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const client = clientFrom(cmd);
        if (opts.bucket !== undefined && !['minute', 'hour', 'day'].includes(opts.bucket))
          throw usage(`--bucket must be minute, hour or day, got "${opts.bucket}"`);
        const params = {
          since: opts.since,
          until: opts.until,
          bucket: opts.bucket as 'minute' | 'hour' | 'day' | undefined,
        };
        const draw = async () => {
          const [m, r] = await Promise.all([client.monitors.get(ref), client.monitors.results(ref, params)]);
          if (opts.json) return printJson(r);
          // On a terminal the view is redrawn in place; elsewhere each draw follows the last.
          if (opts.watch && process.stdout.isTTY) process.stdout.write('\x1b[H\x1b[2J');
          print(
            `${m.name}: ${m.selected} selected, lag ${m.lag_seconds.toFixed(1)} s, spend ${usd(m.spend)}, ${m.enabled ? 'enabled' : 'paused'}${m.alert_state ? `, alert ${m.alert_state}` : ''}`,
          );
          print(resultsTable(r));
        };
        await draw();
        if (!opts.watch) return;
        let stop = false;
        process.once('SIGINT', () => {
          stop = true;
        });
        for (let n = 1; !stop && (opts.times === undefined || n < opts.times); n++) {
          await new Promise((r) => setTimeout(r, opts.interval * 1000));
          if (!stop) await draw();
        }
      },
    );
}

/** `monitors samples`: scored calls, newest first. */
function addSamplesCommand(monitors: Command): void {
  monitors
    .command('samples <monitor>')
    .description('scored calls, newest first: task log id, score, reasoning')
    .option('--failed', 'only calls that did not pass')
    .option('--evaluator <evaluator>', 'only this evaluator (id or name)')
    .option('--since <iso>', 'calls recorded at or after')
    .option('--until <iso>', 'calls recorded before')
    .option('--limit <n>', 'how many samples', wholeNumber('--limit'), 20)
    .option('--json', 'print the samples as a JSON array')
    .action(
      async (
        ref: string,
        opts: {
          failed?: boolean;
          evaluator?: string;
          since?: string;
          until?: string;
          limit: number;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const client = clientFrom(cmd);
        const { items, total } = await firstItems(
          (limit) =>
            client.monitors.samples(ref, {
              failed: opts.failed,
              evaluator: opts.evaluator,
              since: opts.since,
              until: opts.until,
              limit,
            }),
          opts.limit,
        );
        if (opts.json) return printJson(items);
        const names = new Names(client);
        const evaluators = await Promise.all(items.map((s) => names.evaluator(s.evaluator)));
        print(
          table(
            ['task log', 'evaluator', 'status', 'score', 'passed', 'reasoning', 'output'],
            items.map((s, i) => [
              s.task_log_id,
              evaluators[i],
              s.status,
              s.score,
              s.passed,
              snippet(s.reasoning, 50),
              snippet(s.output, 40),
            ]),
          ),
        );
        print(countLine(items.length, total, 'samples'));
      },
    );
}

export function registerMonitorCommands(program: Command): void {
  const monitors = program
    .command('monitors')
    .description("score a sampled share of a container's calls as they are recorded");

  addListCommand(monitors);

  monitors
    .command('get <monitor>')
    .description('show a monitor (by id or name): selected calls, spend, lag, alert state')
    .option('--json', 'print the monitor as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const m = await client.monitors.get(ref);
      if (opts.json) return printJson(m);
      await show(client, m);
    });

  options(
    monitors
      .command('create')
      .description('create a monitor: --name, --container, --evaluator (repeatable), --rate, filters, alert')
      .option('--container <container>', 'container (id or label)')
      .option('--evaluator <evaluator>', 'evaluator id or name (repeatable)', collect, [])
      .option('--environment <name>', 'the run workers that score it')
      .option('--backfill-since <iso>', "also score the container's calls recorded since then")
      .option('--backfill-until <iso>', 'the end of the backfill window (default: now)'),
  ).action(async (opts: Flags, cmd: Command) => {
    const client = clientFrom(cmd);
    const m = await client.monitors.create(bodyOf(opts) as CreateMonitor);
    if (opts.json) return printJson(m);
    await show(client, m);
  });

  options(
    monitors
      .command('update <monitor>')
      .description('change a monitor: name, rate, filters, alert')
      .option('--enable', 'select calls again')
      .option('--disable', 'stop selecting calls'),
  ).action(async (ref: string, opts: Flags & { enable?: boolean; disable?: boolean }, cmd: Command) => {
    const body = bodyOf({ ...opts, evaluator: [] }) as PatchMonitor & Record<string, unknown>;
    if (opts.enable) body.enabled = true;
    if (opts.disable) body.enabled = false;
    if (opts.webhook !== undefined && opts.alertEvaluator === undefined)
      throw usage('--webhook needs --alert-evaluator here');
    const client = clientFrom(cmd);
    const m = await client.monitors.update(ref, body);
    if (opts.json) return printJson(m);
    await show(client, m);
  });

  for (const [verb, enabled] of [
    ['pause', false],
    ['resume', true],
  ] as const) {
    monitors
      .command(`${verb} <monitor>`)
      .description(
        enabled
          ? 'select calls recorded from now on'
          : 'stop selecting calls (what was selected is still scored)',
      )
      .action(async (ref: string, _opts: unknown, cmd: Command) => {
        const m = await clientFrom(cmd).monitors.update(ref, { enabled });
        print(`${m.name} ${enabled ? 'resumed' : 'paused'}`);
      });
  }

  monitors
    .command('delete <monitor>')
    .description('delete a monitor (by id or name)')
    .action(async (ref: string, _opts: unknown, cmd: Command) => {
      const done = await clientFrom(cmd).monitors.delete(ref);
      print(`deleted ${done.id}`);
    });

  addResultsCommand(monitors);

  addSamplesCommand(monitors);
}
