/**
 * No slower than before: an older commit's build against the current build, in alternating rounds
 * (bench/method.ts), on the same mock.
 *
 * The older commit (`--base`, default 465fb84, the commit before the registry reshaping) is checked out
 * in a temporary git worktree (kept under the system's temp folder, keyed by commit, so a second run
 * reuses it), given this checkout's node_modules when every package its lock names is locked at the
 * same version here (else `npm ci` there), and built (`tsc -p tsconfig.build.json`, the server's
 * build). This checkout is built as the other benches build it. Then both servers start on fresh data
 * folders against one mock, and in each of `--rounds` rounds (default 5; the order rotates) each
 * answers:
 *
 * - gateway calls at a fixed rate (`--rate`, default 1,000 calls/s, open loop) for `--duration` ms,
 *   plain and streamed: CPU per call (the server process's utime + stime until it is idle again);
 * - a judge run over `--positions` positions (default 3,000): CPU per scored judge sample.
 *
 * Each figure is the median of the per-round ratios new ÷ old with their range, refused when the rounds
 * spread by more than `--max-spread` (default 0.25); `meets_target` says whether the median is at most
 * `--target` (default 1.0: no slower). The load average is printed beside.
 *
 *   npm run bench:compare
 *   npm run bench:compare -- --base 465fb84 --rounds 7 --rate 500 --positions 5000
 *   npm run bench:compare -- --prepare          # only check out and build the older commit
 *   npm run bench:compare -- --base 465fb84 --head 0a4a46d --parts plain,stream
 *
 * `--head` measures another commit's build (checked out and built the same way) in place of this
 * checkout's: one change between two commits, apart from what came after it. `--parts` picks the figures
 * (plain, stream, judge_run; all by default).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  api,
  arg,
  type BenchServer,
  ROOT,
  serverEntry,
  setUpJudgeRun,
  startMockProcess,
  startServer,
} from './lib.js';
import { runLoad } from './load.js';
import { alternate, cpuPerCall, loadAverage, median, perRound, ratioFigure } from './method.js';

const base = arg('base', '465fb84');
const rounds = Math.max(1, Number(arg('rounds', '5')));
const rate = Number(arg('rate', '1000'));
const warmupMs = Number(arg('warmup', '1000'));
const durationMs = Number(arg('duration', '3000'));
const positions = Number(arg('positions', '3000'));
const concurrency = Number(arg('concurrency', '128'));
const maxSpread = Number(arg('max-spread', '0.25'));
const target = Number(arg('target', '1.0'));
const head = arg('head', '');
const parts = new Set(arg('parts', 'plain,stream,judge_run').split(','));

const log = (line: string) => process.stderr.write(`${line}\n`);
const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();

/** The version of every package a lock file names (its `packages` map, minus the root). */
function lockedVersions(lockText: string): Map<string, string> {
  const lock = JSON.parse(lockText) as { packages?: Record<string, { version?: string }> };
  return new Map(
    Object.entries(lock.packages ?? {})
      .filter(([p]) => p !== '')
      .map(([p, v]) => [p, v.version ?? '']),
  );
}

/**
 * The older commit's checkout, built: a git worktree under the temp folder (made once per commit), with
 * node_modules linked to this checkout's when its lock is covered by this one's, else installed by
 * `npm ci`.
 */
function checkoutBuilt(commit: string): string {
  const dir = path.join(os.tmpdir(), `evalgate-compare-${commit}`);
  if (!fs.existsSync(path.join(dir, 'package.json'))) {
    fs.rmSync(dir, { recursive: true, force: true });
    try {
      git('worktree', 'prune');
    } catch {
      // nothing to prune
    }
    log(`checking out ${commit} in ${dir}`);
    git('worktree', 'add', '--detach', dir, commit);
  }
  if (!fs.existsSync(path.join(dir, 'node_modules'))) {
    const theirs = lockedVersions(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8'));
    const ours = lockedVersions(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
    const differing = [...theirs].filter(([p, v]) => ours.get(p) !== v);
    if (differing.length === 0) {
      log(`${commit}: every locked package equal here; linking node_modules`);
      fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    } else {
      log(`${commit}: ${differing.length} locked packages differ (${differing[0]![0]}…); npm ci`);
      // Its output on stderr: stdout is the report's.
      execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], {
        cwd: dir,
        stdio: ['ignore', 2, 2],
      });
      // Without install scripts better-sqlite3 has no addon: this checkout's, when the versions agree.
      const addon = 'node_modules/better-sqlite3/build';
      if (ours.get('node_modules/better-sqlite3') === theirs.get('node_modules/better-sqlite3')) {
        fs.cpSync(path.join(ROOT, addon), path.join(dir, addon), { recursive: true });
      } else {
        execFileSync('npm', ['rebuild', 'better-sqlite3'], { cwd: dir, stdio: ['ignore', 2, 2] });
      }
    }
  }
  // The server serves the dashboard's files from web/dist; the bench never asks for them.
  fs.mkdirSync(path.join(dir, 'web/dist'), { recursive: true });
  if (!fs.existsSync(path.join(dir, 'dist/cli/main.js'))) {
    log(`building ${commit}`);
    execFileSync(
      process.execPath,
      [path.join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      { cwd: dir, stdio: ['ignore', 2, 2] },
    );
  }
  return dir;
}

const LIMITS = { EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000', EVALGATE_RATE_LIMIT_BURST: '10000000' };

function gatewayBody(stream: boolean): string {
  return JSON.stringify({
    model: 'openai/gpt-4o-mini',
    messages: [{ role: 'user', content: 'Say hello.' }],
    ...(stream ? { stream: true } : {}),
  });
}

/** CPU per gateway call of `server` at the fixed rate. */
async function gatewayCpu(server: BenchServer, stream: boolean) {
  return cpuPerCall([server.child.pid!], async () => {
    const r = await runLoad({
      origin: server.url,
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
      body: gatewayBody(stream),
      concurrency: 64,
      warmupMs,
      durationMs,
      ratePerS: rate,
    });
    return { calls: r.completed, rps: Math.round(r.rps), errors: r.errors };
  });
}

/** CPU per scored sample of a judge run of `positions` on `server`. */
async function judgeRunCpu(server: BenchServer, judgeId: string) {
  const src = { type: 'dataset', dataset: 'bench', range: `0:${positions}` };
  return cpuPerCall([server.child.pid!], async () => {
    const run = await api(server, 'POST', '/v1/evaluation/runs', {
      container: 'bench',
      evaluators: [judgeId],
      sample: src,
      ground_truth: src,
    });
    let status = run.status as string;
    const t0 = performance.now();
    while (!['completed', 'error', 'cancelled'].includes(status)) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await api(server, 'GET', `/v1/evaluation/runs/${run.id}`)).status;
    }
    const seconds = (performance.now() - t0) / 1000;
    const done = await api(server, 'GET', `/v1/evaluation/runs/${run.id}`);
    const perEval = done.results.per_model[0].per_eval[judgeId];
    return {
      calls: perEval.num_scored as number,
      errors: perEval.num_errors as number,
      status,
      samples_per_s: Math.round(perEval.num_scored / seconds),
    };
  });
}

async function main(): Promise<void> {
  const loadBefore = loadAverage();
  const baseCommit = git('rev-parse', base);
  const headCommit = git('rev-parse', head || 'HEAD');
  const dirty = head ? false : git('status', '--porcelain', '--untracked-files=no', 'src').length > 0;
  const oldRoot = checkoutBuilt(baseCommit);
  const newRoot = head ? checkoutBuilt(headCommit) : undefined;
  if (process.argv.includes('--prepare')) return; // the older builds only, measured later
  if (!newRoot) serverEntry(); // this checkout's build, before any server starts
  const mock = await startMockProcess({ MOCK_REPLY_JSON: JSON.stringify({ score: 1, reasoning: 'ok' }) });
  const env = {
    ...LIMITS,
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    EVALGATE_MODEL_CONCURRENCY: String(concurrency),
    EVALGATE_UPSTREAM_CONNECTIONS: String(concurrency),
  };
  const servers: BenchServer[] = [];
  try {
    const old = await startServer(env, [], oldRoot);
    servers.push(old);
    const cur = await startServer(env, [], newRoot);
    servers.push(cur);
    const judging = parts.has('judge_run');
    const oldJudge = judging ? await setUpJudgeRun(old, mock.baseUrl, positions) : '';
    const curJudge = judging ? await setUpJudgeRun(cur, mock.baseUrl, positions) : '';
    const arms = [
      { name: 'old_plain', run: () => gatewayCpu(old, false) },
      { name: 'new_plain', run: () => gatewayCpu(cur, false) },
      { name: 'old_stream', run: () => gatewayCpu(old, true) },
      { name: 'new_stream', run: () => gatewayCpu(cur, true) },
      { name: 'old_judge_run', run: () => judgeRunCpu(old, oldJudge) },
      { name: 'new_judge_run', run: () => judgeRunCpu(cur, curJudge) },
    ].filter((a) => parts.has(a.name.slice(4)));
    const results = await alternate<Record<string, unknown> & { cpu_us_per_call: number }>(rounds, arms);
    const cpu = (r: { cpu_us_per_call: number }) => r.cpu_us_per_call;
    const medianOf = (name: string) => median((results.get(name) ?? []).map(cpu));
    const figure = (what: string) => ({
      old_us_median: medianOf(`old_${what}`),
      new_us_median: medianOf(`new_${what}`),
      ...ratioFigure(perRound(results, `new_${what}`, `old_${what}`, cpu), maxSpread, target),
    });
    const report = {
      benchmark: 'compare-builds',
      method: 'alternating rounds (bench/method.ts); ratios new ÷ old',
      old: { commit: baseCommit, checkout: oldRoot },
      new: { commit: headCommit, checkout: newRoot ?? ROOT, uncommitted_src_changes: dirty },
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '', node: process.version },
      load_average: { before: loadBefore, after: loadAverage() },
      settings: {
        rounds,
        rate_per_s: rate,
        duration_ms: durationMs,
        positions,
        concurrency,
        max_spread: maxSpread,
      },
      gateway_cpu_per_call: {
        ...(parts.has('plain') ? { plain: figure('plain') } : {}),
        ...(parts.has('stream') ? { stream: figure('stream') } : {}),
      },
      ...(judging ? { judge_run_cpu_per_sample: figure('judge_run') } : {}),
      per_round: Object.fromEntries(results),
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    for (const s of servers) await s.stop();
    await mock.stop();
  }
}

await main();
