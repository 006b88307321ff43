/** Helpers shared by the benchmarks: start `evalgate serve` as a child process and read its memory. */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { Pool } from 'undici';

export const ROOT = path.resolve(import.meta.dirname, '..');

export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i !== -1 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

/** Peak (VmHWM) and current (VmRSS) resident set size of a process, MB. */
export function rssMb(pid: number): { peak: number; now: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)\\s+kB`).exec(status)?.[1] ?? 0);
  return { peak: Math.round(kb('VmHWM') / 102.4) / 10, now: Math.round(kb('VmRSS') / 102.4) / 10 };
}

/** `chars` characters of plain prose: a longer answer for the mock upstream to give (and stream). */
export function prose(chars: number): string {
  const words = 'the quick brown fox jumps over a lazy dog while evaluations score every answer'.split(' ');
  let out = '';
  for (let i = 0; out.length < chars; i++) out += `${words[i % words.length]} `;
  return out.slice(0, chars);
}

let built = false;

/** The newest modification time (ms) of the files under `dir`, 0 when there are none. */
function newestMtimeMs(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/**
 * Whether `dist/` was built after every change under `src/` (and the build's settings), so that the
 * bench need not spend its first minute in tsc on a shared machine. `--build` forces a build.
 */
function buildIsFresh(): boolean {
  if (process.argv.includes('--build')) return false;
  const main = path.join(ROOT, BUNDLE);
  if (!fs.existsSync(main)) return false;
  const sources = Math.max(
    newestMtimeMs(path.join(ROOT, 'src')),
    fs.statSync(path.join(ROOT, 'tsconfig.build.json')).mtimeMs,
    fs.statSync(path.join(ROOT, 'tsconfig.json')).mtimeMs,
  );
  return newestMtimeMs(path.join(ROOT, 'dist')) >= sources;
}

/**
 * The Node flags `npm start` gives the server (package.json): a young generation large enough that the
 * objects of requests in flight are not copied again and again by the scavenger.
 */
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=64'];

/** What `npm start` and the `evalgate` command run: the bundled build (`npm run build`). */
const BUNDLE = 'dist/bundle/evalgate.js';

/**
 * The server's Node arguments: `npm start`'s flags, then the build (built once per benchmark process unless it is newer than
 * every source) or the sources
 * through tsx with `--tsx` (tsx adds helpers to hot code, so figures are lower).
 */
export function serverEntry(): string[] {
  if (process.argv.includes('--tsx')) return [...SERVER_NODE_FLAGS, '--import', 'tsx', 'src/cli/main.ts'];
  if (!built && !buildIsFresh()) {
    execFileSync(
      process.execPath,
      [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: ROOT,
        stdio: 'inherit',
      },
    );
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/bundle.mjs')], { cwd: ROOT, stdio: 'inherit' });
    built = true;
  }
  return [...SERVER_NODE_FLAGS, BUNDLE];
}

export interface StartedProcess {
  child: ChildProcess;
  url: string;
}

/**
 * Spawns a node process (stdout read here, stderr passed on) and waits for the first line of its output in
 * which `pick` finds its URL.
 */
export function startProcess(
  args: string[],
  env: Record<string, string>,
  pick: (line: string) => string | null,
): Promise<StartedProcess> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const url = pick(line);
      if (url) resolve({ child, url });
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`${args.join(' ')} exited with ${code ?? signal} before it was ready`)),
    );
  });
}

/** The URL of a `{"url": …}` line (what the mock, the mock cluster and the bare proxy print), else null. */
export function jsonUrl(line: string): string | null {
  try {
    return (JSON.parse(line) as { url?: string }).url ?? null;
  } catch {
    return null;
  }
}

/** SIGTERM, then waits for the exit (at once when the process has already ended). */
export function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** Runs `bench/mock-server.ts` in a process of its own, so the mock does not compete with the caller. */
export function startMockProcess(
  env: Record<string, string>,
): Promise<{ url: string; baseUrl: string; pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/mock-server.ts'], {
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => {
      const { url } = JSON.parse(line) as { url: string };
      resolve({
        url,
        baseUrl: `${url}/v1`,
        pid: child.pid!,
        stop: async () => {
          child.kill('SIGTERM');
          await new Promise((r) => child.once('exit', r));
        },
      });
    });
    child.once('exit', (code) => reject(new Error(`mock server exited with ${code}`)));
  });
}

/** CPU seconds (user + system) of a process or thread so far, from its /proc `stat` file. */
export function cpuSecondsOf(statFile: string): number {
  const stat = fs.readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU microseconds (user + system) of every thread of a process so far, by thread id. */
export function threadCpuUs(pid: number | 'self'): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(tid), cpuSecondsOf(`/proc/${pid}/task/${tid}/stat`) * 1_000_000);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

/**
 * How a process's CPU time between two `threadCpuUs` readings splits: its main thread, its busiest
 * other thread (a worker, such as the log writer's), and all the rest (collector helpers, libuv's pool).
 */
export function threadSplit(
  mainTid: number,
  before: Map<number, number>,
  after: Map<number, number>,
): { main: number; busiest_other: number; rest: number } {
  const used = (tid: number) => (after.get(tid) ?? 0) - (before.get(tid) ?? 0);
  const others = [...after.keys()]
    .filter((tid) => tid !== mainTid)
    .map(used)
    .sort((a, b) => b - a);
  return {
    main: used(mainTid),
    busiest_other: others[0] ?? 0,
    rest: others.slice(1).reduce((a, b) => a + b, 0),
  };
}

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  return cpuSecondsOf(`/proc/${pid}/stat`);
}

export interface BenchServer {
  child: ChildProcess;
  url: string;
  key: string;
  dataDir: string;
  stop(): Promise<void>;
}

/**
 * Starts `evalgate serve` on a fresh data directory (SQLite unless `env` names a database) and waits for
 * the URL and the API key it prints on its first start.
 */
export function startServer(
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
  /** Another checkout's root, whose build (`dist/`, built already) is served instead of this one's. */
  root: string = ROOT,
): Promise<BenchServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-bench-'));
  // Another checkout's build: its bundle when it has one (builds before the bundle have only dist/cli/).
  const other = fs.existsSync(path.join(root, BUNDLE)) ? BUNDLE : 'dist/cli/main.js';
  const entry = root === ROOT ? serverEntry() : [...SERVER_NODE_FLAGS, other];
  const child = spawn(process.execPath, [...nodeArgs, ...entry, 'serve', '--port', '0'], {
    cwd: root,
    env: {
      ...(process.env as Record<string, string>),
      EVALGATE_DATA_DIR: dataDir,
      EVALGATE_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  return new Promise((resolve, reject) => {
    let url = '';
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const listening = /listening on (http:\/\/\S+)/.exec(line);
      if (listening) url = listening[1]!;
      const key = /^\s+(eg_\S+)\s*$/.exec(line);
      if (key && url) resolve({ child, url, key: key[1]!, dataDir, stop });
    });
    child.once('exit', (code) => reject(new Error(`evalgate serve exited with ${code} before it was ready`)));
  });
}

/** A JSON API call with the server's key. */
export async function api<T = any>(
  server: BenchServer,
  method: string,
  route: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(server.url + route, {
    method,
    headers: {
      authorization: `Bearer ${server.key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as T;
  if (res.status >= 400)
    throw new Error(`${method} ${route} answered ${res.status}: ${JSON.stringify(json).slice(0, 500)}`);
  return json;
}

/**
 * The Node arguments of `evalgate` child processes other than `serve`: the build when its bundle
 * is there (as `serverEntry`, which builds once per benchmark process), the sources through tsx otherwise.
 */
function evalgateEntry(): string[] {
  if (process.argv.includes('--tsx') || !fs.existsSync(path.join(ROOT, BUNDLE))) {
    return [...SERVER_NODE_FLAGS, '--import', 'tsx', 'src/cli/main.ts'];
  }
  return serverEntry();
}

export interface BenchWorker {
  child: ChildProcess;
  pid: number;
  /** The last 64 kB of what the process wrote (stdout and stderr). */
  output(): string;
  /** SIGTERM and wait for the exit (no-op once it has exited). */
  stop(): Promise<void>;
}

/**
 * Starts `evalgate worker <args>` with `env` on top of this process's environment and waits for its banner
 * ("Evalgate worker …"). Its stderr lines are passed on to this process's stderr, after `label`.
 */
export function startWorker(
  env: Record<string, string>,
  args: string[] = ['--environment', 'main'],
  nodeArgs: string[] = [],
  label = 'worker',
  timeoutMs = 60_000,
): Promise<BenchWorker> {
  const child = spawn(process.execPath, [...nodeArgs, ...evalgateEntry(), 'worker', ...args], {
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), EVALGATE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const keep = (chunk: string) => {
    text = (text + chunk).slice(-64 * 1024);
  };
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  createInterface({ input: child.stderr! }).on('line', (line) => {
    keep(`${line}\n`);
    process.stderr.write(`[${label}] ${line}\n`);
  });
  const worker: BenchWorker = {
    child,
    pid: child.pid!,
    output: () => text,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void worker.stop();
      reject(new Error(`evalgate worker did not print its banner in ${timeoutMs} ms:\n${text}`));
    }, timeoutMs);
    let ready = false;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      keep(`${line}\n`);
      if (!ready && line.includes('Evalgate worker')) {
        ready = true;
        clearTimeout(timer);
        resolve(worker);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`evalgate worker exited (${code ?? signal}) before its banner:\n${text}`));
    });
  });
}

/** Busy CPU seconds of the whole machine so far (every CPU's non-idle time, from /proc/stat). */
export function machineCpuSeconds(): number {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user).
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / 100;
}

/**
 * Closed-loop load of exactly `requests` requests: `concurrency` callers, each sending the next request as
 * soon as the last one's body has been read. From a cold pool, so its wall time includes opening the
 * connections, as a run's does. Returns the successful requests per second over the whole time.
 */
export async function runRequests(spec: {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  concurrency: number;
  requests: number;
}): Promise<{ requests: number; errors: number; seconds: number; rps: number }> {
  const pool = new Pool(spec.origin, { connections: spec.concurrency, pipelining: 1 });
  let next = 0;
  let ok = 0;
  let errors = 0;
  async function caller(): Promise<void> {
    while (next < spec.requests) {
      next++;
      try {
        const res = await pool.request({
          method: 'POST',
          path: spec.path,
          headers: spec.headers,
          body: spec.body,
        });
        for await (const _chunk of res.body) {
          // Read to the end.
        }
        if (res.statusCode === 200) ok++;
        else errors++;
      } catch {
        errors++;
      }
    }
  }
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(spec.concurrency, spec.requests) }, () => caller()));
  const seconds = (performance.now() - t0) / 1000;
  await pool.close();
  return { requests: ok, errors, seconds: Math.round(seconds * 1000) / 1000, rps: Math.round(ok / seconds) };
}

/** Uploads `positions` question/answer rows as a JSON-lines dataset, streamed in 256 KB pieces. */
async function uploadQaDataset(server: BenchServer, label: string, positions: number): Promise<void> {
  function* lines() {
    let chunk = '';
    for (let i = 0; i < positions; i++) {
      chunk += `${JSON.stringify({ input: `Question ${i}`, output: `Answer ${i}`, expected: `Answer ${i}` })}\n`;
      if (chunk.length > 256 * 1024) {
        yield Buffer.from(chunk);
        chunk = '';
      }
    }
    if (chunk) yield Buffer.from(chunk);
  }
  const res = await fetch(`${server.url}/v1/datasets?label=${label}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/x-ndjson' },
    body: Readable.toWeb(Readable.from(lines())) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  if (res.status !== 201) throw new Error(`dataset upload answered ${res.status}: ${await res.text()}`);
}

/**
 * What the run benches judge: a priced judge model on the mock, a container, a dataset of `positions`
 * question/answer rows and a pointwise judge comparing output with expected. Returns the evaluator's id.
 */
export async function setUpJudgeRun(
  server: BenchServer,
  mockBaseUrl: string,
  positions: number,
): Promise<string> {
  await api(server, 'POST', '/v1/models', {
    label: 'judge',
    provider: 'openai-compatible',
    base_url: mockBaseUrl,
    upstream_model: 'judge',
    input_price_per_mtok: 0.15,
    output_price_per_mtok: 0.6,
  });
  await api(server, 'POST', '/v1/containers', { label: 'bench' });
  await uploadQaDataset(server, 'bench', positions);
  const judge = await api<{ id: string }>(server, 'POST', '/v1/evaluators', {
    type: 'judge',
    name: 'bench-judge',
    model: 'judge',
    prompt: 'Is {{output}} equal to {{expected}}?',
    pass_threshold: 0.5,
  });
  return judge.id;
}

/** The system prompt of Evalgate's pointwise judge (src/scoring/judge/scorer.ts). */
export const JUDGE_SYSTEM_PROMPT =
  'You are an impartial evaluator. Follow the instructions, then reply with only a JSON object ' +
  '{"score": <number>, "reasoning": "<one or two sentences>"}.';

/**
 * The body of a judge request like the ones a run of `setUpJudgeRun`'s evaluator sends, for a bare client
 * to send straight to the mock (the machine's own ceiling). `systemPrompt` defaults to the judge's own.
 */
export function judgeRequestBody(systemPrompt: string = JUDGE_SYSTEM_PROMPT): string {
  return JSON.stringify({
    model: 'judge',
    messages: [
      { role: 'system', content: systemPrompt },
      { role: 'user', content: 'Is Answer 1 equal to Answer 1?' },
    ],
    response_format: { type: 'json_schema', json_schema: { name: 'verdict', strict: true, schema: {} } },
  });
}

/**
 * The judge call latency as the executor saw it: the mean `latency_ms` of 5 samples at each of about 20
 * offsets spread over the run's `positions`.
 */
export async function meanCallLatencyMs(
  server: BenchServer,
  runId: string,
  positions: number,
): Promise<number> {
  const latencies: number[] = [];
  for (let offset = 0; offset < positions; offset += Math.max(1, Math.floor(positions / 20))) {
    const page = await api(server, 'GET', `/v1/evaluation/runs/${runId}/samples?limit=5&offset=${offset}`);
    for (const s of page.data) latencies.push(s.latency_ms);
  }
  return latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length);
}
