import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { CreateRun, DataSource, Evalgate } from '../../client/index.js';
import { promptPick } from '../run-body.js';
import type { CiContext } from './ci-env.js';
import type { NamedExperiment } from './experiment-file.js';

/**
 * What `evalgate ci` sends to the server for one experiment: the run's body, with the job's commit,
 * branch and pull request in its metadata (how the next job finds its baseline), after running the
 * candidate's command when it has one.
 */

/** The run metadata keys `evalgate ci` writes and looks baselines up by. */
export const META = {
  experiment: 'evalgate_ci_experiment',
  commit: 'git_commit',
  branch: 'git_branch',
  pullRequest: 'pull_request',
} as const;

/** A failure of the candidate's command: the job could not run (exit 2). */
export class CandidateCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CandidateCommandError';
  }
}

const DEFAULT_RANGE = '0:100';
const DEFAULT_COMMAND_TIMEOUT_S = 600;

export function runMetadata(name: string, ctx: CiContext): Record<string, string | number> {
  const meta: Record<string, string | number> = { [META.experiment]: name };
  if (ctx.commit) meta[META.commit] = ctx.commit;
  if (ctx.branch) meta[META.branch] = ctx.branch;
  if (ctx.pullRequest !== null) meta[META.pullRequest] = ctx.pullRequest;
  return meta;
}

/** Runs `command` with `input` on stdin; its stdout, or a CandidateCommandError. */
function runCommand(
  command: string,
  input: string,
  timeoutS: number,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, { shell: true, env, stdio: ['pipe', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGTERM'), timeoutS * 1000);
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stdin.on('error', () => undefined);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new CandidateCommandError(`candidate command could not start: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(Buffer.concat(chunks).toString('utf8'));
      const how = signal
        ? `was stopped by ${signal}${signal === 'SIGTERM' ? ` (timeout ${timeoutS} s?)` : ''}`
        : `exited ${code}`;
      reject(new CandidateCommandError(`candidate command ${how}: ${command}`));
    });
    child.stdin.end(input);
  });
}

/** The outputs of the command's stdout: one JSON object with `output` per line, as many as rows. */
function outputsOf(stdout: string, rows: number): unknown[] {
  const lines = stdout.split('\n').filter((l) => l.trim() !== '');
  if (lines.length !== rows) {
    throw new CandidateCommandError(`candidate command wrote ${lines.length} line(s) for ${rows} row(s)`);
  }
  return lines.map((line, i) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new CandidateCommandError(`candidate command, line ${i + 1}: not JSON: ${line.slice(0, 80)}`);
    }
    if (typeof parsed !== 'object' || parsed === null || !('output' in parsed)) {
      throw new CandidateCommandError(`candidate command, line ${i + 1}: an object with "output" expected`);
    }
    return (parsed as { output: unknown }).output;
  });
}

/**
 * Answers the dataset's rows with the candidate's command and uploads them, with their outputs, as a new
 * dataset (rows keep their own fields, `id` included, so that item ids match the baseline's).
 */
async function commandDataset(
  client: Evalgate,
  x: NamedExperiment,
  ctx: CiContext,
): Promise<{ id: string; rows: number }> {
  const { dataset, candidate } = x.experiment;
  const range = dataset.range ?? DEFAULT_RANGE;
  const rows: Record<string, unknown>[] = [];
  for await (const item of client.datasets.items(dataset.name, { range, limit: 100 }))
    rows.push(item.data as Record<string, unknown>);
  const input = rows.map((r) => `${JSON.stringify(r)}\n`).join('');
  const env = { ...process.env, EVALGATE_EXPERIMENT: x.name, EVALGATE_DATASET: dataset.name };
  const stdout = await runCommand(
    candidate.command ?? '',
    input,
    candidate.timeout_seconds ?? DEFAULT_COMMAND_TIMEOUT_S,
    env,
  );
  const outputs = outputsOf(stdout, rows.length);
  const tag = (ctx.commit ?? '').slice(0, 12) || new Date().toISOString().replace(/[-:.]/g, '');
  const created = await client.datasets.upload(
    rows.map((r, i) => ({ ...r, output: outputs[i] })),
    {
      label: `ci-${x.name}-${tag}-${randomBytes(3).toString('hex')}`,
      description: `Outputs of the candidate command of experiment ${x.name}`,
    },
  );
  return { id: created.id, rows: rows.length };
}

/** The run body of an experiment (runs the candidate's command first when it has one). */
export async function runBodyOf(client: Evalgate, x: NamedExperiment, ctx: CiContext): Promise<CreateRun> {
  const { experiment } = x;
  let sample: DataSource;
  let groundTruth: DataSource;
  if (experiment.candidate.command !== undefined) {
    const uploaded = await commandDataset(client, x, ctx);
    const range = `0:${uploaded.rows}`;
    sample = { type: 'dataset', dataset: uploaded.id, range };
    groundTruth = { type: 'dataset', dataset: uploaded.id, range };
  } else {
    const { range, version } = experiment.dataset;
    groundTruth = {
      type: 'dataset',
      dataset: experiment.dataset.name,
      ...(version !== undefined ? { version } : {}),
      ...(range ? { range } : {}),
    };
    // A generate side covers the whole slice it generates from.
    const span = range ? Number(range.split(':')[1]) - Number(range.split(':')[0]) : null;
    const { models, prompts, parameters } = experiment.candidate;
    sample = {
      type: 'generate',
      ...(models !== undefined ? { models } : {}),
      ...(prompts !== undefined ? { prompts: prompts.map(promptPick) } : {}),
      ...(parameters !== undefined ? { parameters } : {}),
      ...(span !== null ? { range: `0:${span}` } : {}),
    };
  }
  const body: CreateRun = {
    container: experiment.container,
    evaluators: experiment.evaluators,
    sample,
    ground_truth: groundTruth,
    name: x.name,
    metadata: runMetadata(x.name, ctx),
  };
  if (experiment.environment !== undefined) body.environment = experiment.environment;
  if (experiment.cache) body.cache = {};
  return body;
}
