import fs from 'node:fs';
import type { Command } from 'commander';
import type { CreateEvaluator, Evaluator, PatchEvaluator } from '../client/index.js';
import {
  clientFrom,
  collect,
  deleteByRef,
  keyValues,
  numberOption,
  usage,
  wholeNumber,
} from './client-context.js';
import { countLine, detail, firstItems, print, printJson, snippet, table } from './output.js';

/** `evalgate evaluators …`: LLM judges and code evaluators. */

interface FieldFlags {
  file?: string;
  promptFile?: string;
  sourceFile?: string;
  type?: string;
  name?: string;
  mode?: string;
  model?: string;
  container?: string;
  passThreshold?: string;
  description?: string;
  api?: string;
  requirement: string[];
  param: string[];
  metadata: string[];
  json?: boolean;
}

function readJsonObject(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (err) {
    throw usage(`cannot read ${path}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw usage(`${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw usage(`${path} must hold one JSON object`);
  }
  return value as Record<string, unknown>;
}

function readText(path: string): string {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch (err) {
    throw usage(`cannot read ${path}: ${(err as Error).message}`);
  }
}

/** A parameter value: JSON when it parses (0.2, true, "x", [..]), the text itself otherwise. */
function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The body from `-f FILE`, then the flags on top of it (flags win), then the prompt and source files. */
function fieldsOf(flags: FieldFlags): Record<string, unknown> {
  const body: Record<string, unknown> = flags.file ? readJsonObject(flags.file) : {};
  const set = (key: string, value: unknown) => {
    if (value !== undefined) body[key] = value;
  };
  set('type', flags.type);
  set('name', flags.name);
  set('mode', flags.mode);
  set('model', flags.model);
  set('container', flags.container);
  set('description', flags.description);
  set('api', flags.api);
  if (flags.passThreshold !== undefined)
    body.pass_threshold = numberOption('--pass-threshold', flags.passThreshold);
  if (flags.requirement.length) body.requirements = flags.requirement;
  if (flags.param.length) {
    const params = keyValues('--param', flags.param);
    const current = body.inference_parameters;
    body.inference_parameters = {
      ...(typeof current === 'object' && current !== null ? current : {}),
      ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, jsonOrText(v)])),
    };
  }
  if (flags.metadata.length) body.metadata = keyValues('--metadata', flags.metadata);
  if (flags.promptFile) body.prompt = readText(flags.promptFile);
  if (flags.sourceFile) body.source = readText(flags.sourceFile);
  return body;
}

function fieldOptions(command: Command, file: string): Command {
  return command
    .option('-f, --file <file.json>', file)
    .option('--prompt-file <path>', "the judge prompt, from this file's text")
    .option('--source-file <path>', "the code evaluator's Python source, from this file's text")
    .option('--name <name>', 'unique name in the project')
    .option('--mode <mode>', 'pointwise or pairwise (judges)')
    .option('--model <model>', 'judge model (slug or label)')
    .option('--container <container>', 'container (id or label)')
    .option('--pass-threshold <number>', 'a score at or above it passes')
    .option('--description <text>', 'description')
    .option('--api <api>', 'judge wire API: chat_completions or messages')
    .option('--requirement <package>', 'a Python requirement of a code evaluator (repeatable)', collect, [])
    .option(
      '--param <key=value>',
      'an inference parameter of the judge, e.g. temperature=0 (repeatable)',
      collect,
      [],
    )
    .option('--metadata <key=value>', 'metadata (repeatable)', collect, [])
    .option('--json', 'print the evaluator as JSON');
}

function show(evaluator: Evaluator): void {
  const fields: [string, unknown][] = [
    ['id', evaluator.id],
    ['name', evaluator.name],
    ['type', evaluator.object === 'evaluator.judge' ? 'judge' : 'code'],
    ['mode', evaluator.mode],
    ['container', evaluator.container],
    ['pass threshold', evaluator.pass_threshold],
    ['description', evaluator.description || null],
    ['updated', evaluator.updated_at],
  ];
  if (evaluator.object === 'evaluator.judge') {
    fields.push(
      ['model', evaluator.model],
      ['api', evaluator.api],
      ['parameters', evaluator.inference_parameters],
    );
    print(detail(fields));
    print(`Prompt:\n${evaluator.prompt}`);
  } else {
    fields.push(['requirements', evaluator.requirements.join(', ') || null]);
    print(detail(fields));
    print(`Source:\n${evaluator.source}`);
  }
}

export function registerEvaluatorCommands(program: Command): void {
  const evaluators = program.command('evaluators').description('manage LLM judges and code evaluators');

  evaluators
    .command('list')
    .description('list evaluators, newest first')
    .option('--container <container>', 'evaluators of this container (id or label)')
    .option('--limit <n>', 'how many evaluators', wholeNumber('--limit'), 20)
    .option('--json', 'print the evaluators as a JSON array')
    .action(async (opts: { container?: string; limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const { items, total } = await firstItems(
        (limit) => client.evaluators.list({ container: opts.container, limit }),
        opts.limit,
      );
      if (opts.json) return printJson(items);
      print(
        table(
          ['id', 'name', 'type', 'mode', 'model', 'pass threshold', 'container', 'updated'],
          items.map((e) => [
            e.id,
            e.name,
            e.object === 'evaluator.judge' ? 'judge' : 'code',
            e.mode,
            e.object === 'evaluator.judge' ? snippet(e.model, 40) : '-',
            e.pass_threshold,
            e.container,
            e.updated_at,
          ]),
        ),
      );
      print(countLine(items.length, total, 'evaluators'));
    });

  evaluators
    .command('get <evaluator>')
    .description('show an evaluator (by id or name), with its prompt or source')
    .option('--json', 'print the evaluator as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const evaluator = await clientFrom(cmd).evaluators.get(ref);
      if (opts.json) return printJson(evaluator);
      show(evaluator);
    });

  fieldOptions(
    evaluators
      .command('create')
      .description('create an evaluator from a JSON file (-f) and/or flags (--type judge --name … --model …)')
      .option('--type <type>', 'judge or code'),
    'the evaluator as JSON (the body of POST /v1/evaluators)',
  ).action(async (opts: FieldFlags, cmd: Command) => {
    const body = fieldsOf(opts);
    if (body.type === undefined) throw usage('give --type judge|code, or a "type" in the -f file');
    const evaluator = await clientFrom(cmd).evaluators.create(body as CreateEvaluator);
    if (opts.json) return printJson(evaluator);
    print(
      `Created ${evaluator.object === 'evaluator.judge' ? 'judge' : 'code evaluator'} ${evaluator.name} (${evaluator.id})`,
    );
  });

  fieldOptions(
    evaluators
      .command('update <evaluator>')
      .description('change an evaluator (by id or name); null clears a field'),
    'the changes as JSON (the body of PATCH /v1/evaluators/{evaluator})',
  ).action(async (ref: string, opts: FieldFlags, cmd: Command) => {
    const patch = fieldsOf(opts);
    if (Object.keys(patch).length === 0) throw usage('nothing to change: give -f FILE or field flags');
    const evaluator = await clientFrom(cmd).evaluators.update(ref, patch as PatchEvaluator);
    if (opts.json) return printJson(evaluator);
    print(`Updated ${evaluator.name} (${evaluator.id})`);
  });

  evaluators
    .command('delete <evaluator>')
    .description('delete an evaluator (by id, or by name)')
    .option('--json', 'print the deletion as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const deleted = await deleteByRef(clientFrom(cmd).evaluators, 'evl_', ref);
      if (opts.json) return printJson(deleted);
      print(`Deleted evaluator ${deleted.id}`);
    });
}
