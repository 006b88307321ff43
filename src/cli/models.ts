import fs from 'node:fs';
import type { Command } from 'commander';
import type { Model, RegisterModel } from '../client/index.js';
import { clientFrom, numberOption, usage } from './client-context.js';
import { detail, print, printJson, table } from './output.js';

/** `evalgate models …`: the frontier models the operator enabled and the project's registered models. */

interface RegisterFlags {
  file?: string;
  provider?: string;
  url?: string;
  upstreamModel?: string;
  upstreamKeyEnv?: string;
  inputPrice?: string;
  outputPrice?: string;
  cacheTtl?: string;
  json?: boolean;
}

function bodyOf(label: string | undefined, flags: RegisterFlags): Record<string, unknown> {
  let body: Record<string, unknown> = {};
  if (flags.file) {
    try {
      body = JSON.parse(fs.readFileSync(flags.file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw usage(`cannot read ${flags.file}: ${(err as Error).message}`);
    }
  }
  const set = (key: string, value: unknown) => {
    if (value !== undefined) body[key] = value;
  };
  set('label', label);
  set('provider', flags.provider);
  set('base_url', flags.url);
  set('upstream_model', flags.upstreamModel);
  set('input_price_per_mtok', numberOption('--input-price', flags.inputPrice));
  set('output_price_per_mtok', numberOption('--output-price', flags.outputPrice));
  set('cache_ttl_seconds', numberOption('--cache-ttl', flags.cacheTtl));
  if (flags.upstreamKeyEnv) {
    // The key is read from the environment so that it stays out of the shell history and `ps`.
    const key = process.env[flags.upstreamKeyEnv];
    if (!key) throw usage(`--upstream-key-env: the variable ${flags.upstreamKeyEnv} is not set`);
    body.api_key = key;
  }
  return body;
}

const price$ = (v: number | null) => (v === null ? '-' : `$${v}`);

export function registerModelCommands(program: Command): void {
  const models = program.command('models').description('list and register models');

  models
    .command('list')
    .description('every model the project can use: frontier and registered')
    .option('--json', 'print the models as a JSON array')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const { data } = await clientFrom(cmd).models.list();
      if (opts.json) return printJson(data);
      print(
        table(
          ['model', 'kind', 'provider', 'upstream model', 'input $/Mtok', 'output $/Mtok'],
          data.map((m) => [
            m.id,
            m.kind,
            m.provider,
            m.upstream_model,
            price$(m.input_price_per_mtok),
            price$(m.output_price_per_mtok),
          ]),
        ),
      );
    });

  models
    .command('get <model>')
    .description('show a model (registered: id or label; frontier: slug)')
    .option('--json', 'print the model as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const m: Model = await clientFrom(cmd).models.get(ref);
      if (opts.json) return printJson(m);
      print(
        detail([
          ['model', m.id],
          ['kind', m.kind],
          ['registry id', m.model_id],
          ['provider', m.provider],
          ['base url', m.base_url],
          ['upstream model', m.upstream_model],
          ['api key', m.has_api_key ? 'set' : 'none'],
          ['input $/Mtok', m.input_price_per_mtok],
          ['output $/Mtok', m.output_price_per_mtok],
          ['default parameters', m.default_parameters],
          ['fallbacks', m.fallbacks.join(', ') || null],
        ]),
      );
    });

  models
    .command('register [label]')
    .description('register an OpenAI-compatible server, an Anthropic or a Gemini endpoint as a model')
    .option('-f, --file <file.json>', 'the model as JSON (the body of POST /v1/models); flags win')
    .option('--provider <provider>', 'openai-compatible (default), anthropic or gemini')
    .option('--url <url>', 'the API root, e.g. http://127.0.0.1:11434/v1')
    .option('--upstream-model <name>', 'the model name sent upstream (default: the label)')
    .option('--upstream-key-env <variable>', "the environment variable holding the upstream's API key")
    .option('--input-price <usd>', 'USD per million prompt tokens')
    .option('--output-price <usd>', 'USD per million completion tokens')
    .option('--cache-ttl <seconds>', "cache the gateway's calls to the model for this long")
    .option('--json', 'print the model as JSON')
    .action(async (label: string | undefined, opts: RegisterFlags, cmd: Command) => {
      const body = bodyOf(label, opts);
      const model = await clientFrom(cmd).models.register(body as RegisterModel);
      if (opts.json) return printJson(model);
      print(`Registered model ${model.id} (${model.model_id})`);
    });

  models
    .command('delete <model>')
    .description('delete a registered model (by id, or by label)')
    .option('--json', 'print the deletion as JSON')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const id = ref.startsWith('mdl_') ? ref : (await client.models.get(ref)).model_id;
      if (!id) throw usage(`${ref} is a frontier model: only registered models can be deleted`);
      const deleted = await client.models.delete(id);
      if (opts.json) return printJson(deleted);
      print(`Deleted model ${deleted.id}`);
    });
}
