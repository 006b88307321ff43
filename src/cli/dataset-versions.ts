import fs from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebStream } from 'node:stream/web';
import type { Command } from 'commander';
import type { DatasetItemsChanged, NewDatasetItem } from '../client/index.js';
import { clientFrom, collect, usage, wholeNumber } from './client-context.js';
import { countLine, firstItems, print, printJson, snippet, table } from './output.js';

/**
 * `evalgate datasets add | remove | versions | diff | export`: datasets that grow. Each change makes a
 * new version; runs pin the version they read.
 */

interface AddFlags {
  fromLog?: string;
  fromSpan?: string;
  trace?: string;
  fromSession?: string;
  fromReview?: string;
  id?: string;
  input?: string;
  output?: string;
  expected?: string;
  split: string[];
  json?: boolean;
}

/** A flag's value as JSON when it parses, else as the string it is. */
function jsonOrText(raw: string | undefined): unknown {
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

function fromOf(opts: AddFlags): NewDatasetItem['from'] {
  const given = [
    opts.fromLog !== undefined && { task_log_id: opts.fromLog },
    opts.fromSpan !== undefined && {
      span_id: opts.fromSpan,
      ...(opts.trace ? { trace_id: opts.trace } : {}),
    },
    opts.fromSession !== undefined && { session_id: opts.fromSession },
    opts.fromReview !== undefined && { review_id: opts.fromReview },
  ].filter((x) => x !== false);
  if (given.length > 1)
    throw usage('give at most one of --from-log, --from-span, --from-session, --from-review');
  if (opts.trace !== undefined && opts.fromSpan === undefined) throw usage('--trace goes with --from-span');
  return given[0];
}

function itemOf(opts: AddFlags): NewDatasetItem {
  const item: NewDatasetItem = {};
  const from = fromOf(opts);
  if (from) item.from = from;
  if (opts.id !== undefined) item.id = opts.id;
  for (const k of ['input', 'output', 'expected'] as const) {
    const v = jsonOrText(opts[k]);
    if (v !== undefined) item[k] = v;
  }
  if (opts.split.length > 0) item.splits = opts.split;
  if (!item.from && item.input === undefined) {
    throw usage(
      'give --input, or make the item from --from-log, --from-span, --from-session or --from-review',
    );
  }
  return item;
}

/** A field of an item's row. */
const field = (item: { data: object }, k: string): unknown => (item.data as Record<string, unknown>)[k];

function printChange(change: DatasetItemsChanged): void {
  for (const item of change.items) print(`Added ${item.id}: ${snippet(field(item, 'input'))}`);
  print(`Dataset ${change.dataset_id} is now version ${change.version} (${change.item_count} items)`);
}

async function exportTo(cmd: Command, ref: string, opts: ExportFlags): Promise<void> {
  const format = opts.format ?? (opts.output?.endsWith('.csv') ? 'csv' : 'jsonl');
  if (format !== 'jsonl' && format !== 'csv') throw usage(`--format must be jsonl or csv, got "${format}"`);
  const response = await clientFrom(cmd).datasets.export(ref, {
    format,
    ...(opts.version !== undefined ? { version: opts.version } : {}),
    ...(opts.split !== undefined ? { split: opts.split } : {}),
  });
  if (!response.body) return;
  const body = Readable.fromWeb(response.body as WebStream<Uint8Array>);
  if (opts.output) {
    await pipeline(body, fs.createWriteStream(opts.output));
    print(`Wrote version ${response.headers.get('x-dataset-version')} to ${opts.output}`);
  } else {
    await pipeline(body, process.stdout, { end: false });
  }
}

interface ExportFlags {
  version?: number;
  split?: string;
  format?: string;
  output?: string;
}

export function registerDatasetVersionCommands(datasets: Command): void {
  datasets
    .command('add <dataset>')
    .description('add an item (a new version): given, or made from a task log, span, session or review')
    .option(
      '--from-log <id>',
      'a task log: its messages in, its answer as output, metadata.expected expected',
    )
    .option('--from-span <id>', "a trace's span (a model call: as its task log)")
    .option('--trace <id>', 'the trace of --from-span')
    .option('--from-session <id>', 'a session: first message in, final answer and tool calls expected')
    .option('--from-review <id>', 'a review (or review item): the human answer as expected')
    .option('--id <id>', "the item's id (default: made)")
    .option('--input <json>', 'input (JSON, else text)')
    .option('--output <json>', 'output (JSON, else text)')
    .option('--expected <json>', 'expected answer (JSON, else text); overrides what --from-… gives')
    .option('--split <name>', 'a split the item is in (repeatable)', collect, [])
    .option('--json', 'print the change as JSON')
    .action(async (ref: string, opts: AddFlags, cmd: Command) => {
      const change = await clientFrom(cmd).datasets.addItem(ref, itemOf(opts));
      if (opts.json) return printJson(change);
      printChange(change);
    });

  datasets
    .command('remove <dataset> <item>')
    .description('remove an item (a new version; earlier versions keep it)')
    .option('--json', 'print the removal as JSON')
    .action(async (ref: string, item: string, opts: { json?: boolean }, cmd: Command) => {
      const removed = await clientFrom(cmd).datasets.deleteItem(ref, item);
      if (opts.json) return printJson(removed);
      print(`Removed ${removed.id}: dataset ${removed.dataset_id} is now version ${removed.version}`);
    });

  datasets
    .command('versions <dataset>')
    .description('list the versions of a dataset, newest first')
    .option('--limit <n>', 'how many versions', wholeNumber('--limit'), 20)
    .option('--json', 'print the versions as a JSON array')
    .action(async (ref: string, opts: { limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const { items, total } = await firstItems(
        (limit) => client.datasets.versions(ref, { limit }),
        opts.limit,
      );
      if (opts.json) return printJson(items);
      print(
        table(
          ['version', 'items', 'added', 'changed', 'removed', 'by', 'created'],
          items.map((v) => [
            v.version,
            v.item_count,
            v.added,
            v.changed,
            v.removed,
            v.created_by,
            v.created_at,
          ]),
        ),
      );
      print(countLine(items.length, total, 'versions'));
    });

  datasets
    .command('diff <dataset>')
    .description('what changed between two versions')
    .requiredOption('--from <n>', 'the earlier version', wholeNumber('--from'))
    .option('--to <n>', 'the later version (default: the latest)', wholeNumber('--to'))
    .option('--json', 'print the diff as JSON')
    .action(async (ref: string, opts: { from: number; to?: number; json?: boolean }, cmd: Command) => {
      const diff = await clientFrom(cmd).datasets.diff(ref, {
        from: opts.from,
        ...(opts.to !== undefined ? { to: opts.to } : {}),
      });
      if (opts.json) return printJson(diff);
      const rows = [
        ...diff.added.map((i) => ['+', i.id, snippet(field(i, 'input')), snippet(field(i, 'expected'))]),
        ...diff.removed.map((i) => ['-', i.id, snippet(field(i, 'input')), snippet(field(i, 'expected'))]),
        ...diff.changed.map((c) => [
          '~',
          c.id,
          snippet(field(c.after, 'input')),
          snippet(field(c.after, 'expected')),
        ]),
      ];
      print(table(['', 'item', 'input', 'expected'], rows));
      print(
        `Version ${diff.from_version} → ${diff.to_version}: ${diff.added.length} added, ${diff.removed.length} removed, ` +
          `${diff.changed.length} changed${diff.truncated ? ' (truncated)' : ''}`,
      );
    });

  datasets
    .command('export <dataset>')
    .description('write a version as JSON lines or CSV (to stdout, or --output)')
    .option('--version <n>', 'the version (default: the latest)', wholeNumber('--version'))
    .option('--split <name>', 'only the items of this split')
    .option('--format <format>', 'jsonl or csv (default: from --output, else jsonl)')
    .option('--output <file>', 'write to this file')
    .action(async (ref: string, opts: ExportFlags, cmd: Command) => {
      await exportTo(cmd, ref, opts);
    });
}
