import fs from 'node:fs';
import type { Command } from 'commander';
import type { Evalgate, Run } from '../../client/index.js';
import { CliExit, clientFrom, describeError } from '../client-context.js';
import { print } from '../output.js';
import { watchRun } from '../run-watch.js';
import { findBaseline } from './baseline.js';
import { type CiContext, ciContext } from './ci-env.js';
import { autoProvider, type CommentProvider, githubComment, gitlabComment } from './comments.js';
import { ExperimentFileError, type NamedExperiment, readExperiments } from './experiment-file.js';
import { evaluateGates } from './gates.js';
import { runBodyOf } from './launch.js';
import {
  type CiReport,
  ciReport,
  type ExperimentReport,
  failedToRun,
  overall,
  worstItems,
} from './report.js';
import { junitReport, markdownReport } from './report-formats.js';

/**
 * What `evalgate ci` does (loaded only when it runs: the YAML parser and the schema validator stay out
 * of the other commands' start): runs the experiments of an experiment file against a server, compares each with its
 * baseline, applies the gates and reports. Exit codes: 0 every gate passed, 1 a gate failed, 2 an
 * experiment could not run (a bad file, a server that does not answer, a run that ended in error, a
 * gate on an evaluator the run lacks).
 */

export interface CiFlags {
  file: string;
  experiment: string[];
  report?: string;
  junit?: string;
  json?: string;
  comment?: string | boolean;
  dashboardUrl?: string;
  project?: string;
  commit?: string;
  branch?: string;
  pullRequest?: number;
  targetBranch?: string;
}

interface Links {
  run(id: string): string | null;
  compare(id: string): string | null;
}

/** Dashboard links need the key's project: given, or read from the server (null when neither can say). */
async function links(client: Evalgate, flags: CiFlags): Promise<Links> {
  const base = (flags.dashboardUrl ?? process.env.EVALGATE_DASHBOARD_URL ?? client.baseURL).replace(
    /\/+$/,
    '',
  );
  let project = flags.project ?? process.env.EVALGATE_PROJECT ?? null;
  if (project === null)
    project = await client.projects.retrieveBudget().then(
      (b) => b.project_id,
      () => null,
    );
  if (project === null) return { run: () => null, compare: () => null };
  const page = `${base}/projects/${encodeURIComponent(project)}/runs`;
  return {
    run: (id) => `${page}/${encodeURIComponent(id)}`,
    compare: (id) => `${page}/${encodeURIComponent(id)}?tab=compare`,
  };
}

const errorText = (err: unknown): string => describeError(err).lines.join(' ').replace(/\s+/g, ' ');

async function runExperiment(
  client: Evalgate,
  x: NamedExperiment,
  ctx: CiContext,
  to: Links,
): Promise<ExperimentReport> {
  const started = Date.now();
  let run: Run | null = null;
  try {
    const body = await runBodyOf(client, x, ctx);
    run = await client.runs.create(body);
    print(`Experiment ${x.name}: run ${run.id} created`);
    run = await watchRun(client, run.id, { json: false });
    if (run.status !== 'completed') {
      const reason = run.error ? `: ${run.error.code}: ${run.error.message}` : '';
      return {
        ...failedToRun(x.name, `run ${run.id} ended ${run.status}${reason}`, started, run.id),
        run_status: run.status,
        run_url: to.run(run.id),
      };
    }
    const baseline = await findBaseline(client, x, ctx, run.id);
    const comparison = baseline.run
      ? await client.runs.compare(run.id, { baseline: baseline.run.id, limit: 10 })
      : null;
    const evaluators = evaluateGates(run, baseline.run, comparison, x.experiment.gates ?? {});
    return {
      name: x.name,
      status: evaluators.every((o) => o.passed) ? 'passed' : 'failed',
      run_id: run.id,
      run_status: run.status,
      run_url: to.run(run.id),
      baseline_id: baseline.run?.id ?? null,
      baseline_note: baseline.note,
      compare_url: comparison ? to.compare(run.id) : null,
      error: null,
      evaluators,
      regressions: comparison ? worstItems(comparison, to.compare(run.id)) : [],
      duration_ms: Date.now() - started,
    };
  } catch (err) {
    return {
      ...failedToRun(x.name, errorText(err), started, run?.id ?? null),
      run_status: run?.status ?? null,
    };
  }
}

function commentProvider(flag: string | boolean | undefined): CommentProvider | null {
  if (flag === undefined || flag === false || flag === 'none') return null;
  if (flag === true || flag === 'auto') return autoProvider(process.env);
  if (flag === 'github' || flag === 'gitlab') return flag;
  throw new CliExit(2, [`--comment takes github, gitlab, auto or none, got "${flag}"`]);
}

/** One comment per experiment; a refusal is said on stderr and leaves the exit code as it is. */
async function postComments(provider: CommentProvider, report: CiReport, ctx: CiContext): Promise<void> {
  for (const x of report.experiments) {
    const body = markdownReport({ ...report, ...overall([x]), experiments: [x] });
    try {
      const result =
        provider === 'github'
          ? await githubComment(process.env, ctx.pullRequest, x.name, body)
          : await gitlabComment(process.env, ctx.pullRequest, x.name, body);
      print(`Comment ${result.action}${result.url ? `: ${result.url}` : ''}`);
    } catch (err) {
      process.stderr.write(
        `evalgate: the ${provider} comment was not posted: ${(err as Error).message} (the exit code is unchanged)\n`,
      );
    }
  }
}

function writeOutputs(report: CiReport, flags: CiFlags): void {
  const markdown = markdownReport(report);
  if (flags.report) fs.writeFileSync(flags.report, markdown);
  else print(`\n${markdown}`);
  if (process.env.GITHUB_STEP_SUMMARY) fs.appendFileSync(process.env.GITHUB_STEP_SUMMARY, `${markdown}\n`);
  if (flags.junit) fs.writeFileSync(flags.junit, junitReport(report));
  if (flags.json) fs.writeFileSync(flags.json, `${JSON.stringify(report, null, 2)}\n`);
}

/** The lines said last, on stderr: each failed rule and each experiment that could not run. */
function verdictLines(report: CiReport): string[] {
  const lines: string[] = [];
  for (const x of report.experiments) {
    if (x.error) lines.push(`experiment ${x.name} could not run: ${x.error}`);
    for (const o of x.evaluators) {
      for (const r of o.rules.filter((r) => r.status === 'failed')) {
        lines.push(`experiment ${x.name}: ${o.evaluator} (launch ${o.launch}) ${r.rule}: ${r.text}`);
      }
    }
  }
  return lines;
}

function selected(all: NamedExperiment[], names: string[], file: string): NamedExperiment[] {
  if (names.length === 0) return all;
  const unknown = names.filter((n) => !all.some((x) => x.name === n));
  if (unknown.length > 0) {
    throw new CliExit(2, [
      `${file} has no experiment ${unknown.join(', ')} (it has ${all.map((x) => x.name).join(', ')})`,
    ]);
  }
  return all.filter((x) => names.includes(x.name));
}

export async function ci(flags: CiFlags, cmd: Command): Promise<void> {
  let experiments: NamedExperiment[];
  try {
    experiments = selected(readExperiments(flags.file), flags.experiment, flags.file);
  } catch (err) {
    if (err instanceof ExperimentFileError) throw new CliExit(2, err.lines());
    throw err;
  }
  const ctx = ciContext(process.env, {
    ...(flags.commit ? { commit: flags.commit } : {}),
    ...(flags.branch ? { branch: flags.branch } : {}),
    ...(flags.pullRequest !== undefined ? { pullRequest: flags.pullRequest } : {}),
    ...(flags.targetBranch ? { targetBranch: flags.targetBranch } : {}),
  });
  // auto comments where there is a pull request to comment on, and says nothing elsewhere.
  const auto = flags.comment === true || flags.comment === 'auto';
  const provider = auto && ctx.pullRequest === null ? null : commentProvider(flags.comment);
  let client: Evalgate;
  try {
    client = clientFrom(cmd);
  } catch (err) {
    throw new CliExit(2, describeError(err).lines);
  }
  const to = await links(client, flags);
  const reports: ExperimentReport[] = [];
  for (const x of experiments) reports.push(await runExperiment(client, x, ctx, to));
  const report = ciReport(ctx, reports);
  writeOutputs(report, flags);
  if (provider) await postComments(provider, report, ctx);
  if (report.exit_code !== 0) throw new CliExit(report.exit_code, verdictLines(report));
}
