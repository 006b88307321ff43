import fs from 'node:fs';
import type { Command } from 'commander';
import type { CreatePromptVersion, Prompt, PromptDiff, PromptVersion } from '../client/index.js';
import { clientFrom, usage, wholeNumber } from './client-context.js';
import { countLine, detail, firstItems, print, printJson, snippet, table } from './output.js';

/** `evalgate prompts list|get|create|version|label|diff|rollback`: versioned prompts and their labels. */

interface VersionFlags {
  file?: string;
  system?: string;
  user?: string;
  model?: string;
  message?: string;
  label: string[];
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** A version's fields: the file's JSON (messages, variables, model, parameters, …), then the flags over it. */
function versionBody(flags: VersionFlags): CreatePromptVersion {
  let body: Record<string, unknown> = {};
  if (flags.file !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(fs.readFileSync(flags.file, 'utf8'));
    } catch (err) {
      throw usage(`--file ${flags.file}: ${(err as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw usage(`--file ${flags.file} must hold a JSON object (messages, variables, model, parameters, …)`);
    }
    body = parsed as Record<string, unknown>;
  }
  const messages: { role: 'system' | 'user'; content: string }[] = [];
  if (flags.system !== undefined) messages.push({ role: 'system', content: flags.system });
  if (flags.user !== undefined) messages.push({ role: 'user', content: flags.user });
  if (messages.length > 0) body.messages = messages;
  if (body.messages === undefined) throw usage('give the messages: --file <json>, or --system/--user <text>');
  if (flags.model !== undefined) body.model = flags.model;
  if (flags.message !== undefined) body.commit_message = flags.message;
  if (flags.label.length > 0) body.labels = flags.label;
  return body as unknown as CreatePromptVersion;
}

function showVersion(v: PromptVersion): string {
  const head = detail([
    ['prompt', `${v.name} (${v.prompt_id})`],
    ['version', v.version],
    ['labels', v.labels.join(', ')],
    ['model', v.model ?? '-'],
    ['parameters', JSON.stringify(v.parameters)],
    [
      'variables',
      Object.entries(v.variables)
        .map(([n, t]) => `${n}: ${t}`)
        .join(', ') || '-',
    ],
    ['tools', v.tools ? v.tools.map((t) => t.function.name).join(', ') : '-'],
    ['response format', v.response_format ? JSON.stringify(v.response_format) : '-'],
    ['commit message', v.commit_message ?? '-'],
    ['author', v.author],
    ['created', v.created_at],
  ]);
  const messages = v.messages.map((m) => `--- ${m.role}\n${m.content}`).join('\n');
  return `${head}\n${messages}`;
}

function showDiff(d: PromptDiff): string {
  if (!d.changed) return `versions ${d.from_version} and ${d.to_version} are the same`;
  const lines = [`versions ${d.from_version} → ${d.to_version}`];
  const change = (name: string, c: { old: unknown; new: unknown } | null) => {
    if (c) lines.push(`${name}: ${JSON.stringify(c.old)} → ${JSON.stringify(c.new)}`);
  };
  change('model', d.model);
  for (const [k, c] of Object.entries(d.parameters)) change(`parameters.${k}`, c);
  for (const [k, c] of Object.entries(d.variables)) change(`variables.${k}`, c);
  change('tools', d.tools);
  change('response_format', d.response_format);
  for (const m of d.messages) {
    if (m.status === 'unchanged') continue;
    lines.push(`message ${m.index}: ${m.status}`);
    if (m.role) lines.push(`  role: ${String(m.role.old)} → ${String(m.role.new)}`);
    if (m.patch) lines.push(m.patch);
  }
  return lines.join('\n');
}

function versionOptions(command: Command): Command {
  return command
    .option('--file <json>', 'a JSON object: messages, variables, model, parameters, tools, response_format')
    .option('--system <text>', 'a system message (instead of the file’s messages)')
    .option('--user <text>', 'a user message (instead of the file’s messages)')
    .option('--model <model>', 'the model the version calls')
    .option('-m, --message <text>', 'the commit message')
    .option('--label <label>', 'move this label to the new version (repeatable)', collect, [] as string[])
    .option('--json', 'print the result as JSON');
}

export function registerPromptCommands(program: Command): void {
  const prompts = program
    .command('prompts')
    .description('versioned prompts: versions, labels, diffs, rollbacks');

  prompts
    .command('list')
    .description('list prompts, newest first')
    .option('--name <text>', 'only names containing this')
    .option('--limit <n>', 'how many prompts', wholeNumber('--limit'), 20)
    .option('--json', 'print the prompts as a JSON array')
    .action(async (opts: { name?: string; limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const { items, total } = await firstItems(
        (limit) => client.prompts.list({ name: opts.name, limit }),
        opts.limit,
      );
      if (opts.json) return printJson(items);
      const labels = (l: Record<string, number>) =>
        Object.entries(l)
          .map(([n, v]) => `${n}=${v}`)
          .join(', ');
      print(
        table(
          ['name', 'id', 'latest', 'labels', 'description', 'updated'],
          items.map((p) => [
            p.name,
            p.id,
            p.latest_version,
            labels(p.labels),
            snippet(p.description ?? '', 40),
            p.updated_at,
          ]),
        ),
      );
      print(countLine(items.length, total, 'prompts'));
    });

  prompts
    .command('get <prompt>')
    .description('show a prompt (id or name) at a label or version, default the latest')
    .option('--label <label>', 'the version this label points at')
    .option('--version <n>', 'this version', wholeNumber('--version'))
    .option('--json', 'print the prompt as JSON')
    .action(async (ref: string, opts: { label?: string; version?: number; json?: boolean }, cmd: Command) => {
      const p: Prompt = await clientFrom(cmd).prompts.get(ref, { label: opts.label, version: opts.version });
      if (opts.json) return printJson(p);
      print(showVersion(p.version));
    });

  versionOptions(prompts.command('create <name>').description('create a prompt with its first version'))
    .option('--description <text>', 'what the prompt is for')
    .action(
      async (name: string, opts: VersionFlags & { description?: string; json?: boolean }, cmd: Command) => {
        const body = versionBody(opts);
        const p = await clientFrom(cmd).prompts.create({ ...body, name, description: opts.description });
        if (opts.json) return printJson(p);
        print(`created ${p.name} (${p.id}) version 1`);
      },
    );

  versionOptions(
    prompts.command('version <prompt>').description('create the next version of a prompt'),
  ).action(async (ref: string, opts: VersionFlags & { json?: boolean }, cmd: Command) => {
    const v = await clientFrom(cmd).prompts.createVersion(ref, versionBody(opts));
    if (opts.json) return printJson(v);
    print(`created ${v.name} version ${v.version}${v.labels.length > 1 ? ` (${v.labels.join(', ')})` : ''}`);
  });

  prompts
    .command('label <prompt> <label> [version]')
    .description('move a label to a version (created on first use), or remove it with --delete')
    .option('--delete', 'remove the label')
    .option('--json', 'print the result as JSON')
    .action(
      async (
        ref: string,
        label: string,
        version: string | undefined,
        opts: { delete?: boolean; json?: boolean },
        cmd: Command,
      ) => {
        const client = clientFrom(cmd);
        if (opts.delete) {
          if (version !== undefined) throw usage('--delete takes no version');
          const gone = await client.prompts.deleteLabel(ref, label);
          return opts.json ? printJson(gone) : print(`removed label ${label}`);
        }
        if (version === undefined) throw usage('give the version to move the label to, or --delete');
        const moved = await client.prompts.moveLabel(ref, label, wholeNumber('version')(version));
        if (opts.json) return printJson(moved);
        print(`${label}: ${moved.previous_version ?? '-'} → ${moved.version}`);
      },
    );

  prompts
    .command('rollback <prompt> <label>')
    .description('move a label back to the version its latest move took it from')
    .option('--json', 'print the result as JSON')
    .action(async (ref: string, label: string, opts: { json?: boolean }, cmd: Command) => {
      const moved = await clientFrom(cmd).prompts.rollbackLabel(ref, label);
      if (opts.json) return printJson(moved);
      print(`${label}: ${moved.previous_version ?? '-'} → ${moved.version}`);
    });

  prompts
    .command('diff <prompt> <from> <to>')
    .description('what changed between two versions: messages, model, parameters, variables, tools')
    .option('--json', 'print the diff as JSON')
    .action(async (ref: string, from: string, to: string, opts: { json?: boolean }, cmd: Command) => {
      const d = await clientFrom(cmd).prompts.diff(ref, wholeNumber('from')(from), wholeNumber('to')(to));
      if (opts.json) return printJson(d);
      print(showDiff(d));
    });
}
