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
  prompt?: string;
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
  input?: string;
  inputFile?: string;
  reference?: string;
  operation?: string;
  metric?: string;
  embeddingModel?: string;
  range?: string;
  label: string[];
  passingLabel: string[];
  sampling: string[];
}

/** `--range 0,10` → [0, 10]. */
function rangeOption(text: string): number[] {
  const parts = text.split(',').map((p) => numberOption('--range', p.trim()));
  if (parts.length !== 2) throw usage('--range takes two numbers: MIN,MAX');
  return parts;
}

/** The grader types' flags (string_check, text_similarity, score_model, label_model). */
function graderFieldsOf(flags: FieldFlags, body: Record<string, unknown>): void {
  const set = (key: string, value: unknown) => {
    if (value !== undefined) body[key] = value;
  };
  set('input', flags.input);
  if (flags.inputFile) {
    const messages = jsonOrText(readText(flags.inputFile));
    if (!Array.isArray(messages)) throw usage(`${flags.inputFile} must hold a JSON array of messages`);
    body.input = messages;
  }
  set('reference', flags.reference);
  set('operation', flags.operation);
  set('evaluation_metric', flags.metric);
  set('embedding_model', flags.embeddingModel);
  if (flags.range !== undefined) body.range = rangeOption(flags.range);
  if (flags.label.length) body.labels = flags.label;
  if (flags.passingLabel.length) body.passing_labels = flags.passingLabel;
  if (flags.sampling.length) {
    const params = keyValues('--sampling', flags.sampling);
    body.sampling_params = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, jsonOrText(v)]));
  }
}

/** The evaluator's type as the API names it: `evaluator.string_check` → `string_check`. */
function typeOf(evaluator: Evaluator): string {
  return evaluator.object.slice('evaluator.'.length);
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
  if (flags.prompt !== undefined && flags.promptFile) throw usage('give --prompt or --prompt-file, not both');
  if (flags.prompt !== undefined) body.prompt = flags.prompt;
  if (flags.promptFile) body.prompt = readText(flags.promptFile);
  if (flags.sourceFile) body.source = readText(flags.sourceFile);
  graderFieldsOf(flags, body);
  return body;
}

function fieldOptions(command: Command, file: string): Command {
  return command
    .option('-f, --file <file.json>', file)
    .option('--prompt <text>', 'the judge prompt, inline: "Rate {{output}} against {{expected}}"')
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
    .option(
      '--input <template>',
      'string_check / text_similarity: the text template, e.g. {{sample.output_text}}',
    )
    .option('--input-file <messages.json>', 'score_model / label_model: the input messages, a JSON array')
    .option('--reference <template>', 'string_check / text_similarity: the reference template')
    .option('--operation <op>', 'string_check: eq, ne, like or ilike')
    .option(
      '--metric <metric>',
      'text_similarity: fuzzy_match, bleu, gleu, meteor, cosine, rouge_1..rouge_5, rouge_l',
    )
    .option('--embedding-model <model>', 'text_similarity cosine: the embeddings model')
    .option('--range <min,max>', 'score_model: the score range, e.g. 0,10')
    .option('--label <label>', 'label_model: a label the model may give (repeatable)', collect, [])
    .option('--passing-label <label>', 'label_model: a label that passes (repeatable)', collect, [])
    .option(
      '--sampling <key=value>',
      'score_model: a sampling parameter, e.g. temperature=0 (repeatable)',
      collect,
      [],
    )
    .option('--json', 'print the evaluator as JSON');
}

function show(evaluator: Evaluator): void {
  const fields: [string, unknown][] = [
    ['id', evaluator.id],
    ['name', evaluator.name],
    ['type', typeOf(evaluator)],
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
  } else if ('match_mode' in evaluator) {
    const t = evaluator;
    fields.push(
      ['match mode', t.match_mode],
      ['arguments', t.arguments_match],
      ['expected field', t.expected_field],
      ['tool schemas', t.tool_schemas],
      ['length of', t.length_of],
      ['min length', t.min_length],
      ['max length', t.max_length],
    );
    print(detail(fields.filter(([, v]) => v !== null)));
  } else if ('operation' in evaluator) {
    const g = evaluator;
    fields.push(
      ['model', g.model],
      ['operation', g.operation],
      ['metric', g.evaluation_metric],
      ['embedding model', g.embedding_model],
      ['range', g.range],
      ['labels', g.labels?.join(', ') ?? null],
      ['passing labels', g.passing_labels?.join(', ') ?? null],
      ['reference', g.reference],
      ['sampling', g.sampling_params],
    );
    print(detail(fields.filter(([, v]) => v !== null)));
    print(`Input:\n${typeof g.input === 'string' ? g.input : JSON.stringify(g.input, null, 2)}`);
  } else {
    fields.push(['requirements', evaluator.requirements.join(', ') || null]);
    print(detail(fields));
    print(`Source:\n${evaluator.source}`);
  }
}

export function registerEvaluatorCommands(program: Command): void {
  const evaluators = program
    .command('evaluators')
    .description('manage LLM judges, code evaluators and graders');

  evaluators
    .command('list')
    .description('list evaluators, newest first')
    .option(
      '--container <container>',
      'evaluators of this container (id or label) and the project-wide ones its runs may use',
    )
    .option('--limit <n>', 'how many evaluators', wholeNumber('--limit'), 20)
    .option('--json', 'print the evaluators as a JSON array')
    .action(async (opts: { container?: string; limit: number; json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const { items, total } = await firstItems(
        (limit) =>
          client.evaluators.list(
            opts.container === undefined
              ? { limit }
              : { container: opts.container, include_project_wide: true, limit },
          ),
        opts.limit,
      );
      if (opts.json) return printJson(items);
      print(
        table(
          ['id', 'name', 'type', 'mode', 'model', 'pass threshold', 'container', 'updated'],
          items.map((e) => [
            e.id,
            e.name,
            typeOf(e),
            e.mode,
            'model' in e && e.model ? snippet(e.model, 40) : '-',
            e.pass_threshold,
            e.container ?? '(project-wide)',
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
      .option('--type <type>', 'judge, code, string_check, text_similarity, score_model or label_model'),
    'the evaluator as JSON (the body of POST /v1/evaluators)',
  ).action(async (opts: FieldFlags, cmd: Command) => {
    const body = fieldsOf(opts);
    if (body.type === undefined) {
      throw usage(
        'give --type judge|code|string_check|text_similarity|score_model|label_model, or a "type" in the -f file',
      );
    }
    const evaluator = await clientFrom(cmd).evaluators.create(body as CreateEvaluator);
    if (opts.json) return printJson(evaluator);
    print(
      `Created ${evaluator.object === 'evaluator.code' ? 'code evaluator' : typeOf(evaluator)} ${evaluator.name} (${evaluator.id})`,
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
