import fs from 'node:fs';
import type { Command } from 'commander';
import type { Container, ImportLog } from '../client/index.js';
import { clientFrom, collect, deleteByRef, keyValues, usage, wholeNumber } from './client-context.js';
import { countLine, detail, firstItems, print, printJson, snippet, table, usd } from './output.js';

/** `evalgate containers …` and `evalgate logs list`: the scopes of applications and their recorded calls. */

function show(c: Container): string {
  return detail([
    ['id', c.id],
    ['label', c.label],
    ['description', c.description],
    ['metadata', Object.keys(c.metadata).length ? c.metadata : null],
    ['created', c.created_at],
    ['updated', c.updated_at],
  ]);
}

/** `logs list`: a container's task logs, newest first (in seq order with --range). */
function addLogsListCommand(logs: Command): void {
  logs
    .command('list')
    .description("list a container's task logs, newest first (in seq order with --range)")
    .requiredOption('--container <container>', 'the container (id or label)')
    .option('--model <model>', 'only calls of this model')
    .option('--since <time>', 'only calls made at or after this ISO 8601 time')
    .option('--range <start:end>', 'a slice of the logs in seq order, 0-based, end exclusive')
    .option('--limit <n>', 'how many logs', wholeNumber('--limit'), 20)
    .option('--json', 'print the logs as a JSON array')
    .action(
      async (
        opts: {
          container: string;
          model?: string;
          since?: string;
          range?: string;
          limit: number;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const client = clientFrom(cmd);
        const filters = { model: opts.model, since: opts.since };
        // Without --range, the newest --limit logs: the last slice in seq order, shown newest first.
        const newest = opts.range === undefined;
        const all = newest ? (await client.logs.list(opts.container, { ...filters, limit: 1 })).total : 0;
        const range = opts.range ?? `${Math.max(0, all - opts.limit)}:${all}`;
        const listed = await firstItems(
          (limit) => client.logs.list(opts.container, { ...filters, range, limit }),
          opts.limit,
        );
        const items = newest ? listed.items.reverse() : listed.items;
        const total = newest ? all : listed.total;
        if (opts.json) return printJson(items);
        print(
          table(
            ['seq', 'id', 'model', 'status', 'input', 'output', 'cost', 'latency', 'created'],
            items.map((l) => [
              l.seq,
              l.id,
              l.model,
              l.status,
              snippet(l.input, 30),
              snippet(l.output ?? l.error?.message, 30),
              usd(l.cost),
              `${Math.round(l.latency_ms)} ms`,
              l.created_at,
            ]),
          ),
        );
        print(countLine(items.length, total, 'logs'));
      },
    );
}

export function registerCatalogCommands(program: Command): void {
  const containers = program.command('containers').description('manage containers');

  containers
    .command('list')
    .description('list containers, newest first')
    .option('--limit <n>', 'how many containers', wholeNumber('--limit'), 20)
    .option('--json', 'print the containers as a JSON array')
    .action(async (opts: { limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const { items, total } = await firstItems((limit) => client.containers.list({ limit }), opts.limit);
      if (opts.json) return printJson(items);
      print(
        table(
          ['id', 'label', 'description', 'created'],
          items.map((c) => [c.id, c.label, c.description, c.created_at]),
        ),
      );
      print(countLine(items.length, total, 'containers'));
    });

  containers
    .command('get <container>')
    .description('show a container (by id or label)')
    .option('--json', 'print the container as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const container = await clientFrom(cmd).containers.get(ref);
      if (opts.json) return printJson(container);
      print(show(container));
    });

  containers
    .command('create <label>')
    .description('create a container')
    .option('--description <text>', 'description')
    .option('--metadata <key=value>', 'metadata (repeatable)', collect, [])
    .option('--json', 'print the container as JSON')
    .action(
      async (
        label: string,
        opts: { description?: string; metadata: string[]; json?: boolean },
        cmd: Command,
      ) => {
        const container = await clientFrom(cmd).containers.create({
          label,
          ...(opts.description !== undefined ? { description: opts.description } : {}),
          ...(opts.metadata.length ? { metadata: keyValues('--metadata', opts.metadata) } : {}),
        });
        if (opts.json) return printJson(container);
        print(`Created container ${container.label} (${container.id})`);
      },
    );

  containers
    .command('delete <container>')
    .description('delete a container (by id, or by label)')
    .option('--json', 'print the deletion as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const deleted = await deleteByRef(clientFrom(cmd).containers, 'ctr_', ref);
      if (opts.json) return printJson(deleted);
      print(`Deleted container ${deleted.id}`);
    });

  const logs = program.command('logs').description("read a container's task logs (its recorded calls)");
  addLogsListCommand(logs);

  logs
    .command('import <file>')
    .description(
      'import calls recorded elsewhere into a container: a JSON array or JSON lines, all or nothing',
    )
    .requiredOption('--container <container>', 'the container (id or label)')
    .option('--json', 'print the import result as JSON')
    .action(async (file: string, opts: { container: string; json?: boolean }, cmd: Command) => {
      if (!fs.existsSync(file)) throw usage(`no such file: ${file}`);
      const client = clientFrom(cmd);
      // A .json file is one array; anything else is streamed as JSON lines.
      let result: Awaited<ReturnType<typeof client.logs.import>>;
      if (file.endsWith('.json')) {
        let entries: unknown;
        try {
          entries = JSON.parse(fs.readFileSync(file, 'utf8'));
        } catch (err) {
          throw usage(`${file} is not JSON: ${(err as Error).message}`);
        }
        if (!Array.isArray(entries)) throw usage(`${file} must hold a JSON array of logs`);
        result = await client.logs.import(opts.container, entries as ImportLog[]);
      } else {
        result = await client.logs.upload(opts.container, file);
      }
      if (opts.json) return printJson(result);
      print(
        `Imported ${result.imported} logs into ${opts.container} (seq ${result.first_seq ?? '-'}–${result.last_seq ?? '-'})`,
      );
    });
}
