import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import type { Dataset, Evalgate, UploadProgress } from '../client/index.js';
import { clientFrom, deleteByRef, usage, wholeNumber } from './client-context.js';
import { registerDatasetVersionCommands } from './dataset-versions.js';
import { countLine, detail, firstItems, print, printJson, seconds, table } from './output.js';
import { csvRows, type FileRows, jsonArrayRows } from './row-sources.js';

/** `evalgate datasets …`: uploads streamed from JSON lines, JSON arrays and CSV files; listing; deletion. */

const FORMATS: Record<string, 'jsonl' | 'json' | 'csv'> = {
  '.jsonl': 'jsonl',
  '.ndjson': 'jsonl',
  '.json': 'json',
  '.csv': 'csv',
};

/**
 * The chunks of an upload are garbage once sent, but they live outside V8's heap, which collects them
 * only after 64 MB have piled up: with the CLI's own ~100 MB that is a peak of ~170 MB for any large
 * file. Collecting every 8 MB sent keeps the peak near the CLI's resting size, for a few ms each time.
 * (`gc` is exposed the way jest's leak detector does it; where that fails, V8 collects on its own.)
 */
const COLLECT_EVERY_BYTES = 8 * 1024 * 1024;

function collector(): (() => void) | null {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc: unknown = vm.runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    return null;
  }
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

interface UploadFlags {
  label?: string;
  description?: string;
  format?: string;
  gzip?: boolean;
  json?: boolean;
}

async function upload(client: Evalgate, file: string, opts: UploadFlags): Promise<void> {
  const format = opts.format ?? FORMATS[path.extname(file).toLowerCase()];
  if (format !== 'jsonl' && format !== 'json' && format !== 'csv') {
    throw usage(
      opts.format
        ? `--format must be jsonl, json or csv, got "${opts.format}"`
        : `cannot tell the format of ${file} from its extension: name it .jsonl, .ndjson, .json or .csv, or give --format`,
    );
  }
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch (err) {
    throw usage(`cannot read ${file}: ${(err as Error).message}`);
  }
  // JSON lines go to the server as they are; the other formats are turned into rows on the way.
  let converted: FileRows | null = null;
  if (format === 'csv') converted = csvRows(file);
  else if (format === 'json') converted = jsonArrayRows(file);

  const stream = opts.json ? process.stderr : process.stdout;
  const bar = stream.isTTY
    ? new cliProgress.SingleBar(
        {
          stream,
          format: `${path.basename(file)} [{bar}] {percentage}% | {read} of {size} | {rows} rows | {speed}`,
          barCompleteChar: '█',
          barIncompleteChar: '░',
          barsize: 30,
          hideCursor: false,
          fps: 10,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  const started = Date.now();
  const payload = (read: number, rows: number) => {
    const elapsed = (Date.now() - started) / 1000;
    return {
      read: mb(read),
      size: mb(size),
      rows: rows.toLocaleString('en-US'),
      speed: elapsed > 0 ? `${mb(read / elapsed)}/s` : '-',
    };
  };
  bar?.start(size, 0, payload(0, 0));
  const collect = collector();
  let collectedAt = 0;
  const onProgress = (p: UploadProgress) => {
    const read = converted ? converted.read() : p.bytes;
    bar?.update(Math.min(read, size), payload(read, p.rows));
    if (collect && read - collectedAt >= COLLECT_EVERY_BYTES) {
      collectedAt = read;
      collect();
    }
  };
  let dataset: Dataset;
  try {
    dataset = await client.datasets.upload(converted ? converted.rows : file, {
      label: opts.label,
      description: opts.description,
      gzip: opts.gzip === true,
      onProgress,
    });
  } finally {
    bar?.stop();
  }
  if (opts.json) return printJson(dataset);
  print(
    `Uploaded ${dataset.item_count.toLocaleString('en-US')} rows as dataset ${dataset.label} (${dataset.id}) ` +
      `in ${seconds(Date.now() - started)}`,
  );
}

function show(d: Dataset): string {
  return detail([
    ['id', d.id],
    ['label', d.label],
    ['rows', d.item_count],
    ['version', d.version],
    ['description', d.description],
    ['metadata', Object.keys(d.metadata).length ? d.metadata : null],
    ['created', d.created_at],
    ['updated', d.updated_at],
  ]);
}

export function registerDatasetCommands(program: Command): void {
  const datasets = program
    .command('datasets')
    .description('upload, list, grow (versions), diff, export and delete datasets');

  datasets
    .command('upload <file>')
    .description(
      'upload a dataset, streamed: JSON lines (.jsonl, .ndjson), a JSON array (.json) or CSV (.csv)',
    )
    .requiredOption('--label <label>', 'unique label of the dataset in the project')
    .option('--description <text>', 'description')
    .option('--format <format>', 'jsonl, json or csv (default: from the extension)')
    .option('--gzip', 'compress the upload on the fly')
    .option('--json', 'print the dataset as JSON (progress goes to stderr)')
    .action(async (file: string, opts: UploadFlags, cmd: Command) => {
      await upload(clientFrom(cmd), file, opts);
    });

  datasets
    .command('list')
    .description('list datasets, newest first')
    .option('--limit <n>', 'how many datasets', wholeNumber('--limit'), 20)
    .option('--json', 'print the datasets as a JSON array')
    .action(async (opts: { limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const { items, total } = await firstItems((limit) => client.datasets.list({ limit }), opts.limit);
      if (opts.json) return printJson(items);
      print(
        table(
          ['id', 'label', 'rows', 'description', 'created'],
          items.map((d) => [d.id, d.label, d.item_count, d.description, d.created_at]),
        ),
      );
      print(countLine(items.length, total, 'datasets'));
    });

  datasets
    .command('get <dataset>')
    .description('show a dataset (by id or label)')
    .option('--json', 'print the dataset as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const dataset = await clientFrom(cmd).datasets.get(ref);
      if (opts.json) return printJson(dataset);
      print(show(dataset));
    });

  datasets
    .command('delete <dataset>')
    .description('delete a dataset (by id, or by label)')
    .option('--json', 'print the deletion as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const deleted = await deleteByRef(clientFrom(cmd).datasets, 'ds_', ref);
      if (opts.json) return printJson(deleted);
      print(`Deleted dataset ${deleted.id}`);
    });

  registerDatasetVersionCommands(datasets);
}
