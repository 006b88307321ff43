import fs from 'node:fs';
import type { Command } from 'commander';
import type { AddItems, AnnotationQueue, CreateQueue } from '../client/index.js';
import { clientFrom, collect, numberOption, usage, wholeNumber } from './client-context.js';
import { countLine, detail, firstItems, print, printJson, table } from './output.js';
import { agreementTable } from './review-agreement.js';
import { registerSettleCommands } from './review-settle.js';

/** `evalgate queues …`: human review queues (their rubric, items, progress and export). */

type Rule = NonNullable<AddItems['rules']>[number];

interface AddFlags {
  taskLog: string[];
  session: string[];
  toolStep: string[];
  sample: string[];
  run?: string;
  monitor?: string;
  failed?: boolean;
  share?: string;
  seed?: number;
  scoreMin?: string;
  scoreMax?: string;
  evaluator?: string;
  rules?: string;
  json?: boolean;
}

/** `run_x:17` or `run_x:17:1` (launch) → a run sample reference. */
function sampleRef(text: string): NonNullable<AddItems['run_samples']>[number] {
  const m = /^([^:]+):(\d+)(?::(\d+))?$/.exec(text);
  if (!m) throw usage(`--sample takes RUN:POSITION[:LAUNCH], got "${text}"`);
  return { run: m[1]!, position: Number(m[2]), ...(m[3] === undefined ? {} : { launch: Number(m[3]) }) };
}

/** `sess_x#call_1` → a tool step reference (a session id holds no `#`; a tool call id may). */
function toolStepRef(text: string): NonNullable<AddItems['tool_steps']>[number] {
  const at = text.indexOf('#');
  if (at <= 0 || at === text.length - 1) throw usage(`--tool-step takes SESSION#TOOL_CALL_ID, got "${text}"`);
  return { session: text.slice(0, at), tool_call_id: text.slice(at + 1) };
}

function rulesFile(path: string): Rule[] {
  let value: unknown;
  try {
    value = JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (err) {
    throw usage(`cannot read ${path} as JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(value)) throw usage(`${path} must hold a JSON array of rules`);
  return value as Rule[];
}

/** The body of POST …/items from the flags: references, a rule over `--run`, and rules from a file. */
export function addBodyOf(flags: AddFlags): AddItems {
  const body: AddItems = {};
  if (flags.taskLog.length) body.task_logs = flags.taskLog;
  if (flags.session.length) body.sessions = flags.session;
  if (flags.toolStep.length) body.tool_steps = flags.toolStep.map(toolStepRef);
  if (flags.sample.length) body.run_samples = flags.sample.map(sampleRef);
  const rules: Rule[] = flags.rules ? rulesFile(flags.rules) : [];
  const ruleFlags = [flags.failed, flags.share, flags.scoreMin, flags.scoreMax].some((f) => f !== undefined);
  if (flags.run !== undefined && flags.monitor !== undefined)
    throw usage('give --run or --monitor, not both');
  const over =
    flags.run !== undefined
      ? { run: flags.run }
      : flags.monitor !== undefined
        ? { monitor: flags.monitor }
        : null;
  if (over) {
    if (!ruleFlags) {
      throw usage(
        `--${over.run ? 'run' : 'monitor'} needs a criterion: --failed, --share, --score-min or --score-max`,
      );
    }
    const rule: Rule = { ...over };
    if (flags.failed) rule.failed = true;
    if (flags.share !== undefined) rule.share = numberOption('--share', flags.share);
    if (flags.seed !== undefined) rule.seed = flags.seed;
    if (flags.scoreMin !== undefined) rule.score_min = numberOption('--score-min', flags.scoreMin);
    if (flags.scoreMax !== undefined) rule.score_max = numberOption('--score-max', flags.scoreMax);
    if (flags.evaluator !== undefined) rule.evaluator = flags.evaluator;
    rules.push(rule);
  } else if (ruleFlags) {
    throw usage(
      '--failed, --share, --score-min and --score-max select positions of a run: give --run RUN or --monitor MONITOR',
    );
  }
  if (rules.length) body.rules = rules;
  if (Object.keys(body).length === 0) {
    throw usage(
      'nothing to add: give --task-log, --session, --tool-step, --sample, --run with a criterion, or --rules FILE',
    );
  }
  return body;
}

function show(queue: AnnotationQueue): void {
  const c = queue.counts;
  print(
    detail([
      ['id', queue.id],
      ['name', queue.name],
      ['description', queue.description],
      [
        'rubric',
        queue.rubric.evaluators
          .map((e) => `${e.name} (${String((e.scale as { type?: unknown }).type)})`)
          .join(', '),
      ],
      ['comment', queue.rubric.comment],
      ['reviewers per item', queue.reviewers_per_item],
      ['claim seconds', queue.claim_seconds],
      ['items', `${c.total} (${c.open} open, ${c.done} done, ${c.flagged} flagged)`],
      ['reviews', c.reviews],
      ['created', queue.created_at],
    ]),
  );
}

/** `queues create`: a queue whose rubric is one or more evaluators. */
function addCreateCommand(queues: Command): void {
  queues
    .command('create <name>')
    .description('create a queue whose rubric is one or more evaluators (their scales)')
    .requiredOption('--evaluator <evaluator>', 'a rubric evaluator, id or name (repeatable)', collect, [])
    .option('--description <text>', 'what the queue is for')
    .option('--comment', 'ask reviewers for a free-text comment too')
    .option('--reviewers <n>', 'how many different people review each item', wholeNumber('--reviewers'))
    .option('--claim-seconds <s>', 'how long a claim holds an item', wholeNumber('--claim-seconds'))
    .option('--json', 'print the queue as JSON')
    .action(
      async (
        name: string,
        opts: {
          evaluator: string[];
          description?: string;
          comment?: boolean;
          reviewers?: number;
          claimSeconds?: number;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        if (opts.evaluator.length === 0) throw usage('give at least one --evaluator');
        const body: CreateQueue = { name, evaluators: opts.evaluator };
        if (opts.description !== undefined) body.description = opts.description;
        if (opts.comment) body.comment = true;
        if (opts.reviewers !== undefined) body.reviewers_per_item = opts.reviewers;
        if (opts.claimSeconds !== undefined) body.claim_seconds = opts.claimSeconds;
        const queue = await clientFrom(cmd).queues.create(body);
        if (opts.json) return printJson(queue);
        print(`Created queue ${queue.name} (${queue.id})`);
      },
    );
}

/** `queues items`: a queue's items in the order they were added. */
function addItemsCommand(queues: Command): void {
  queues
    .command('items <queue>')
    .description("list a queue's items in the order they were added")
    .option('--state <state>', 'open, done or flagged')
    .option('--limit <n>', 'how many items', wholeNumber('--limit'), 20)
    .option('--json', 'print the items as a JSON array')
    .action(async (ref: string, opts: { state?: string; limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const state = opts.state as 'open' | 'done' | 'flagged' | undefined;
      if (state !== undefined && !['open', 'done', 'flagged'].includes(state)) {
        throw usage(`--state is open, done or flagged, got "${opts.state}"`);
      }
      const { items, total } = await firstItems(
        (limit) => client.queues.items.list(ref, state === undefined ? { limit } : { state, limit }),
        opts.limit,
      );
      if (opts.json) return printJson(items);
      print(
        table(
          ['id', 'kind', 'ref', 'source', 'state', 'reviews', 'flag'],
          items.map((i) => [
            i.id,
            i.kind,
            i.ref,
            i.source,
            i.state,
            `${i.reviews}/${i.reviewers_needed}`,
            i.flag,
          ]),
        ),
      );
      print(countLine(items.length, total, 'items'));
    });
}

export function registerQueueCommands(program: Command): void {
  const queues = program
    .command('queues')
    .description('human review queues: rubric, items, progress, export');

  queues
    .command('list')
    .description('list review queues, newest first, with their progress')
    .option('--limit <n>', 'how many queues', wholeNumber('--limit'), 20)
    .option('--json', 'print the queues as a JSON array')
    .action(async (opts: { limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const { items, total } = await firstItems((limit) => client.queues.list({ limit }), opts.limit);
      if (opts.json) return printJson(items);
      print(
        table(
          ['id', 'name', 'rubric', 'total', 'open', 'done', 'flagged', 'reviews'],
          items.map((q) => [
            q.id,
            q.name,
            q.rubric.evaluators.map((e) => e.name).join(', '),
            q.counts.total,
            q.counts.open,
            q.counts.done,
            q.counts.flagged,
            q.counts.reviews,
          ]),
        ),
      );
      print(countLine(items.length, total, 'queues'));
    });

  addCreateCommand(queues);

  queues
    .command('get <queue>')
    .description('show a queue (by id or name): rubric and progress')
    .option('--json', 'print the queue as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const queue = await clientFrom(cmd).queues.get(ref);
      if (opts.json) return printJson(queue);
      show(queue);
    });

  queues
    .command('add <queue>')
    .description(
      "add items: task logs, sessions, tool steps, run positions, or a rule over a run's or a monitor's scores",
    )
    .option('--task-log <id>', 'a task log (repeatable)', collect, [])
    .option('--session <id>', 'a session (repeatable)', collect, [])
    .option('--tool-step <session#call>', 'a tool step: SESSION#TOOL_CALL_ID (repeatable)', collect, [])
    .option('--sample <run:position>', 'a run position, RUN:POSITION[:LAUNCH] (repeatable)', collect, [])
    .option('--run <run>', 'a rule over this run: with --failed, --share, --score-min/--score-max')
    .option('--monitor <monitor>', 'a rule over the calls this monitor scored (as --run)')
    .option('--failed', 'the positions the evaluator failed')
    .option('--share <r>', 'a seeded random share of the positions, 0 < r <= 1')
    .option('--seed <n>', 'seed of the share (0)', wholeNumber('--seed', 0))
    .option('--score-min <x>', 'positions scored at least this')
    .option('--score-max <x>', 'positions scored at most this')
    .option('--evaluator <evaluator>', "whose scores the rule reads (the rubric's first)")
    .option('--rules <file.json>', 'more rules, as a JSON array (the "rules" of POST …/items)')
    .option('--json', 'print the result as JSON')
    .action(async (ref: string, opts: AddFlags, cmd: Command) => {
      const added = await clientFrom(cmd).queues.items.add(ref, addBodyOf(opts));
      if (opts.json) return printJson(added);
      print(`Added ${added.added} items (${added.already_queued} already queued)`);
    });

  addItemsCommand(queues);

  queues
    .command('export <queue>')
    .description('a dataset of the reviewed items: the human answer as expected, the comment kept')
    .requiredOption('--label <label>', 'label of the new dataset')
    .option('--evaluator <evaluator>', "whose human answer is expected (the rubric's first)")
    .option('--json', 'print the dataset as JSON')
    .action(
      async (ref: string, opts: { label: string; evaluator?: string; json?: boolean }, cmd: Command) => {
        const body =
          opts.evaluator === undefined
            ? { label: opts.label }
            : { label: opts.label, evaluator: opts.evaluator };
        const dataset = await clientFrom(cmd).queues.export(ref, body);
        if (opts.json) return printJson(dataset);
        print(`Exported ${dataset.item_count} reviewed items as dataset ${dataset.label} (${dataset.id})`);
      },
    );

  queues
    .command('agreement <queue>')
    .description("each rubric evaluator's agreement with the queue's reviews")
    .option('--json', 'print the agreement as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const result = await clientFrom(cmd).queues.agreement(ref);
      if (opts.json) return printJson(result);
      for (const agreement of result.evaluators) print(agreementTable(agreement));
    });

  queues
    .command('delete <queue>')
    .description('delete a queue with its items and reviews')
    .option('--json', 'print the deletion as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const deleted = await clientFrom(cmd).queues.delete(ref);
      if (opts.json) return printJson(deleted);
      print(`Deleted queue ${deleted.id}`);
    });

  registerSettleCommands(queues);
}
