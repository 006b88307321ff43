import type { CreateRun, DataSource } from '../client/index.js';

type PromptPick = NonNullable<DataSource['prompts']>[number];

import { keyValues, usage } from './client-context.js';

/** The flags of `evalgate runs create` that shape the run. */
export interface RunFlags {
  container: string;
  evaluator: string[];
  dataset?: string;
  logs?: boolean;
  generate?: string;
  /** `--prompt NAME[@VERSION|@LABEL]` (repeatable): an experiment, one launch per prompt version × model. */
  prompt?: string[];
  /** `--sessions C`: the sessions of container C are the sample (and the ground truth, unless told otherwise). */
  sessions?: string;
  /** `--tool-steps C [--tool NAME]…`: the tool calls of container C's sessions, one position each. */
  toolSteps?: string;
  tool?: string[];
  /** `--simulate M1,M2`: simulated conversations with these models, driven by `--user-model`. */
  simulate?: string;
  userModel?: string;
  maxTurns?: string;
  groundTruth?: string;
  baseline?: string;
  range?: string;
  environment?: string;
  name?: string;
  metadata: string[];
  /** `--cache [ttl]`: true, or the TTL in seconds of the entries the run writes. */
  cache?: boolean | string;
}

const RANGE = /^(\d+):(\d+)$/;

function models(list: string, flag: string): string[] {
  const names = list
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  if (names.length === 0) throw usage(`${flag} needs at least one model`);
  return names;
}

/** `--prompt qa`, `qa@3` or `qa@staging`: a prompt by name at its latest version, a version or a label. */
export function promptPick(text: string): PromptPick {
  const at = text.lastIndexOf('@');
  const name = at > 0 ? text.slice(0, at) : text;
  const which = at > 0 ? text.slice(at + 1) : '';
  if (name.trim() === '' || (at > 0 && which === '')) {
    throw usage(`--prompt takes NAME, NAME@VERSION or NAME@LABEL, got "${text}"`);
  }
  if (which === '') return { name };
  return /^[1-9]\d*$/.test(which) ? { name, version: Number(which) } : { name, label: which };
}

/** `dataset:D` or `dataset:D@V` (version V), pinned as asked. */
function datasetSide(ref: string): DataSource {
  const at = ref.lastIndexOf('@');
  const version = at > 0 ? ref.slice(at + 1) : '';
  if (at > 0 && /^[1-9]\d*$/.test(version)) {
    return { type: 'dataset', dataset: ref.slice(0, at), version: Number(version) };
  }
  return { type: 'dataset', dataset: ref };
}

/** `dataset:D[@V]`, `logs` and, where allowed, `generate:M` as a data source of the run's container. */
function sideOf(text: string, flag: string, container: string, allowGenerate: boolean): DataSource {
  if (text === 'logs') return { type: 'container', container };
  if (text.startsWith('dataset:') && text.length > 'dataset:'.length) {
    return datasetSide(text.slice('dataset:'.length));
  }
  if (allowGenerate && text.startsWith('generate:')) {
    const list = models(text.slice('generate:'.length), flag);
    if (list.length !== 1) throw usage(`${flag} generate: takes exactly one model`);
    return { type: 'generate', models: list };
  }
  const forms = allowGenerate ? 'dataset:NAME, logs or generate:MODEL' : 'dataset:NAME or logs';
  throw usage(`${flag} takes ${forms}, got "${text}"`);
}

/** `--simulate M1,M2 --user-model U [--max-turns N]` as a simulate side. */
function simulateSide(flags: RunFlags): DataSource {
  if (flags.userModel === undefined || flags.userModel.trim() === '') {
    throw usage('--simulate needs --user-model MODEL (the simulated user)');
  }
  const side: DataSource = {
    type: 'simulate',
    models: models(flags.simulate ?? '', '--simulate'),
    user_model: flags.userModel.trim(),
  };
  if (flags.maxTurns !== undefined) {
    const n = Number(flags.maxTurns);
    if (!Number.isInteger(n) || n < 1)
      throw usage(`--max-turns takes a whole number, got "${flags.maxTurns}"`);
    side.max_turns = n;
  }
  return side;
}

/** `--tool-steps C [--tool NAME]…` as a tool_steps side. */
function toolStepsSide(container: string, tools: string[]): DataSource {
  return tools.length
    ? { type: 'tool_steps', container, filter: { tools } }
    : { type: 'tool_steps', container };
}

/** `--generate M1,M2` and/or `--prompt P` (repeatable): a generate side, an experiment's with prompts. */
function generateSide(flags: RunFlags): DataSource {
  const prompts = (flags.prompt ?? []).map(promptPick);
  const side: DataSource = { type: 'generate' };
  if (flags.generate !== undefined || prompts.length === 0)
    side.models = models(flags.generate ?? '', '--generate');
  if (prompts.length > 0) side.prompts = prompts;
  return side;
}

/**
 * The body of `POST /v1/evaluation/runs` from the flags (see docs/runs.md for how sides work):
 *
 * - `--dataset D`: the sample and, unless `--ground-truth` says otherwise, the ground truth are dataset D;
 * - `--logs`: the container's task logs are the sample (and the ground truth, unless told otherwise);
 * - `--generate M1,M2`: fresh completions from each model (one launch each), their inputs taken from the
 *   ground truth (`--ground-truth`, default: the container's task logs).
 * - `--prompt qa@3 --prompt qa@staging` (with or without `--generate`): an experiment, each prompt version
 *   rendered over the ground truth's items, one launch per version × model (without `--generate`, each
 *   version's own model).
 * - `--sessions C`: the sessions of container C, one position each (the ground truth too, unless told
 *   otherwise: then no reference).
 * - `--tool-steps C [--tool NAME]…`: the tool calls of container C's sessions (of these tools), one
 *   position each (the ground truth too, unless told otherwise: then no reference).
 * - `--simulate M1,M2 --user-model U [--max-turns N]`: simulated conversations with each model (one launch
 *   each), their scenarios taken from the ground truth (`--ground-truth dataset:NAME`).
 *
 * `--range a:b` selects the same slice of every non-generate side; a generate side then covers that whole
 * slice (its own range is relative to the slice it generates from).
 */
export function runBody(flags: RunFlags): CreateRun {
  const { container } = flags;
  const chosen = [
    flags.dataset !== undefined,
    flags.logs === true,
    flags.generate !== undefined || (flags.prompt ?? []).length > 0,
    flags.sessions !== undefined,
    flags.toolSteps !== undefined,
    flags.simulate !== undefined,
  ].filter(Boolean).length;
  if (chosen !== 1) {
    throw usage(
      'give exactly one of --dataset NAME, --logs, --generate MODELS (and/or --prompt), --sessions CONTAINER, --tool-steps CONTAINER and --simulate MODELS',
    );
  }
  if (flags.toolSteps === undefined && (flags.tool ?? []).length > 0)
    throw usage('--tool goes with --tool-steps');
  if (flags.simulate === undefined && (flags.userModel !== undefined || flags.maxTurns !== undefined)) {
    throw usage('--user-model and --max-turns go with --simulate');
  }
  if (flags.evaluator.length === 0) throw usage('give at least one --evaluator');
  let range: string | undefined;
  let span = 0;
  if (flags.range !== undefined) {
    const m = RANGE.exec(flags.range);
    if (!m) throw usage(`--range takes start:end (0-based, end exclusive), got "${flags.range}"`);
    span = Number(m[2]) - Number(m[1]);
    if (span < 0) throw usage(`--range start must not be greater than its end, got "${flags.range}"`);
    range = flags.range;
  }
  // A generate side (one with models) covers the whole slice it generates from.
  const ranged = (side: DataSource): DataSource => {
    if (range === undefined) return side;
    return side.models || side.prompts ? { ...side, range: `0:${span}` } : { ...side, range };
  };

  let sample: DataSource;
  if (flags.dataset !== undefined) sample = { type: 'dataset', dataset: flags.dataset };
  else if (flags.logs) sample = { type: 'container', container };
  else if (flags.sessions !== undefined) sample = { type: 'sessions', container: flags.sessions };
  else if (flags.toolSteps !== undefined) sample = toolStepsSide(flags.toolSteps, flags.tool ?? []);
  else if (flags.simulate !== undefined) sample = simulateSide(flags);
  else sample = generateSide(flags);

  let groundTruth: DataSource;
  if (flags.groundTruth !== undefined)
    groundTruth = sideOf(flags.groundTruth, '--ground-truth', container, false);
  else if (flags.dataset !== undefined || flags.sessions !== undefined || flags.toolSteps !== undefined)
    groundTruth = { ...sample };
  else groundTruth = { type: 'container', container };

  const body: CreateRun = {
    container,
    evaluators: flags.evaluator,
    sample: ranged(sample),
    ground_truth: ranged(groundTruth),
  };
  if (flags.baseline !== undefined) {
    const baseline = sideOf(flags.baseline, '--baseline', container, true);
    // A generate baseline generates for the run's positions: it has no range of its own.
    body.baseline = baseline.models || range === undefined ? baseline : { ...baseline, range };
  }
  if (flags.environment !== undefined) body.environment = flags.environment;
  if (flags.name !== undefined) body.name = flags.name;
  if (flags.cache !== undefined && flags.cache !== false) {
    const ttl = flags.cache === true ? undefined : Number(flags.cache);
    if (ttl !== undefined && !(Number.isInteger(ttl) && ttl >= 1)) {
      throw usage(`--cache takes a TTL in whole seconds, got "${flags.cache}"`);
    }
    body.cache = ttl === undefined ? {} : { ttl_seconds: ttl };
  }
  if (flags.metadata.length > 0) body.metadata = keyValues('--metadata', flags.metadata);
  return body;
}
