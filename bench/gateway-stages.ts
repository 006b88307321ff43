/**
 * Where a gateway call's CPU goes, by stage: the bare proxy, Evalgate with recording off and Evalgate
 * recorded, each loaded at the same fixed rate under V8's sampling profiler (every thread of the
 * process), and each sample's innermost JavaScript frame mapped through the build's source maps to the
 * source file it came from, then to a stage: the HTTP server (node:http, sockets, streams), the web
 * framework (fastify and its router), authentication and limits, the gateway's route, the provider
 * layer, the upstream client (undici), recording (capture and the spool), the log writer's thread,
 * logging, metrics, garbage collection. A native frame (a system call: `writev`, `read`) counts for the
 * stage of the JavaScript that called it.
 *
 *   npm run build && npx tsx bench/gateway-stages.ts                 # 800 calls/s, 8 s per target, 3 rounds
 *   npx tsx bench/gateway-stages.ts --rate 1000 --duration 6000 --rounds 5 --stream
 *
 * Prints one JSON document: per target, CPU per call from /proc (every thread, the profiler's own cost
 * included), and per stage the profiled µs per call (the median of the rounds and their range), with the
 * functions that spent the most. The profiler counts a thread's time by wall clock while it is not idle:
 * a system call (`writev`) includes the time its thread then waited for one of the cores, so on a
 * loaded machine the HTTP stage (where the sockets are written) reads high in every target alike; the
 * JavaScript stages are what to compare.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { originalPositionFor, TraceMap } from '@jridgewell/trace-mapping';
import type { CallFrame, CpuProfile } from './cpu-profile.js';
import { arg, cpuSeconds, jsonUrl, startMockProcess, startProcess, startServer, stopProcess } from './lib.js';
import { runLoad } from './load.js';
import { median } from './method.js';

const rate = Number(arg('rate', '800'));
const durationMs = Number(arg('duration', '8000'));
const rounds = Number(arg('rounds', '3'));
const stream = process.argv.includes('--stream');
const topFunctions = Number(arg('top', '40'));
const LIMITS = { EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000', EVALGATE_RATE_LIMIT_BURST: '10000000' };

/** Node's own modules other than HTTP's: counted for the stage of the code that called them. */
const NODE_OTHER = 'node, other';

/** The stage of a source file (a path from the repository's root, or a node: module). */
function stageOf(source: string): string {
  if (source.startsWith('node:internal/worker') || source.includes('writer-thread'))
    return 'log writer thread';
  if (/^node:(_http|http|net|internal\/(streams|stream_base|http|net))/.test(source))
    return 'node http, sockets';
  if (source.startsWith('node:')) return NODE_OTHER;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source)?.[1];
  if (pkg) {
    if (pkg === 'undici') return 'upstream client (undici)';
    if (
      /^(fastify|find-my-way|avvio|@fastify\/|light-my-request|fast-json-stringify|ajv|toad-cache|process-warning)/.test(
        pkg,
      )
    )
      return 'framework (fastify)';
    if (/^(pino|thread-stream|sonic-boom)/.test(pkg)) return 'logging (pino)';
    if (pkg === 'prom-client') return 'metrics (prom-client)';
    if (/^(better-sqlite3|kysely|pg|ioredis)/.test(pkg)) return 'database client';
    return `package ${pkg}`;
  }
  const src = /(?:^|\/)src\/(.+)$/.exec(source)?.[1];
  if (!src) {
    if (source.startsWith('wasm')) return 'upstream client (undici)';
    // What the bundle adds that maps to no source: its module wrappers and helpers.
    return source.includes('/dist/') ? 'bundle runtime' : `other ${source}`;
  }
  if (/^(auth|ratelimit|budgets|tenancy)\//.test(src)) return 'auth, limits, budget';
  if (/^capture\//.test(src)) return 'recording (capture, spool)';
  if (/^(llm|catalog)\//.test(src)) return 'provider layer (llm)';
  if (/^gateway\//.test(src)) return 'gateway routes';
  if (/^http\//.test(src)) return 'http edge (hooks, errors)';
  if (/^observability\//.test(src)) return 'metrics (prom-client)';
  if (/^(traces|sessions)\//.test(src)) return 'traces, sessions';
  return `src ${src.split('/')[0]}`;
}

const maps = new Map<string, TraceMap | null>();
function traceMapOf(url: string): TraceMap | null {
  if (!maps.has(url)) {
    let map: TraceMap | null = null;
    try {
      const file = new URL(url).pathname;
      if (fs.existsSync(`${file}.map`)) map = new TraceMap(fs.readFileSync(`${file}.map`, 'utf8'));
    } catch {
      map = null;
    }
    maps.set(url, map);
  }
  return maps.get(url) ?? null;
}

/** The source a frame's code came from: through the bundle's source map, else its URL. */
function sourceOf(frame: CallFrame): string {
  if (!frame.url.startsWith('file:')) return frame.url;
  const map = traceMapOf(frame.url);
  if (!map) return new URL(frame.url).pathname;
  const at = originalPositionFor(map, {
    line: frame.lineNumber + 1,
    column: Math.max(0, frame.columnNumber),
  });
  return at.source ? path.normalize(at.source) : new URL(frame.url).pathname;
}

/**
 * µs of busy samples by stage, over every profile of one process (its threads), counting the samples of
 * the `durationMs` before the last `tailMs` of each profile (the measured window: the process was stopped
 * `tailMs` after it ended, and its profile ends at its exit).
 */
function stagesOf(files: string[], tailMs: number, functions: Map<string, number>): Map<string, number> {
  const sums = new Map<string, number>();
  for (const file of files) {
    const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
    const thread = /\.\d+\.0\.\d+\.cpuprofile$/.test(file) ? null : 'other threads (log writer)';
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const stage = new Map<number, string>();
    const stageOfNode = (id: number): string => {
      const known = stage.get(id);
      if (known) return known;
      const node = byId.get(id)!;
      const { functionName, url } = node.callFrame;
      const up = parent.get(id);
      const atRoot = up === undefined || byId.get(up)!.callFrame.functionName === '(root)';
      let value: string;
      if (functionName === '(garbage collector)') value = 'garbage collection';
      else if (functionName === '(program)' || functionName === '(root)') value = 'program (V8, native)';
      else {
        // A native frame, or one of node's own modules other than HTTP's: the stage of its caller.
        const own = url ? stageOf(sourceOf(node.callFrame)) : NODE_OTHER;
        if (own !== NODE_OTHER) value = own;
        else if (atRoot) value = url ? 'node event loop (ticks, timers)' : 'program (V8, native)';
        else value = stageOfNode(up);
      }
      stage.set(id, value);
      return value;
    };
    const to = profile.endTime - tailMs * 1000;
    const from = to - durationMs * 1000;
    let t = profile.startTime;
    for (let i = 0; i < profile.samples.length; i++) {
      t += profile.timeDeltas[i] ?? 0;
      if (t < from || t > to) continue;
      const id = profile.samples[i]!;
      if (byId.get(id)!.callFrame.functionName === '(idle)') continue;
      const key = thread ?? stageOfNode(id);
      const us = profile.timeDeltas[i + 1] ?? 0;
      sums.set(key, (sums.get(key) ?? 0) + us);
      const frame = byId.get(id)!.callFrame;
      const where = frame.url.startsWith('file:')
        ? sourceOf(frame).replace(/^.*?(node_modules\/|src\/)/, '$1')
        : frame.url;
      const fn = `${key} | ${frame.functionName || '(anonymous)'} ${where}`;
      functions.set(fn, (functions.get(fn) ?? 0) + us);
    }
  }
  return sums;
}

interface Result {
  cpuUs: number[];
  profiled: number[];
  stages: Map<string, number[]>;
  functions: Map<string, number>;
}

interface Target {
  name: string;
  start(dir: string): Promise<{
    origin: string;
    headers: Record<string, string>;
    model: string;
    pid: number;
    stop(): Promise<void>;
  }>;
}

async function main(): Promise<void> {
  const mock = await startMockProcess({});
  const prof = (dir: string) => ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  const evalgate =
    (env: Record<string, string>): Target['start'] =>
    async (dir) => {
      const s = await startServer(
        { ...LIMITS, OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: `${mock.url}/v1`, ...env },
        prof(dir),
      );
      return {
        origin: s.url,
        headers: { authorization: `Bearer ${s.key}` },
        model: 'openai/gpt-4o-mini',
        pid: s.child.pid!,
        stop: s.stop,
      };
    };
  const targets: Target[] = [
    {
      name: 'bare_proxy',
      start: async (dir) => {
        const p = await startProcess(
          [...prof(dir), '--import', 'tsx', 'bench/bare-proxy.ts', mock.url],
          {},
          jsonUrl,
        );
        return {
          origin: p.url,
          headers: { authorization: 'Bearer sk-bench' },
          model: 'gpt-4o-mini',
          pid: p.child.pid!,
          stop: () => stopProcess(p.child),
        };
      },
    },
    { name: 'evalgate_unrecorded', start: evalgate({ EVALGATE_RECORDING: '0' }) },
    { name: 'evalgate_recorded', start: evalgate({}) },
  ];
  const results = new Map<string, Result>();
  for (let round = 0; round < rounds; round++) {
    for (const target of targets) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-stages-'));
      const t = await target.start(dir);
      const spec = {
        origin: t.origin,
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', ...t.headers },
        body: JSON.stringify({
          model: t.model,
          messages: [{ role: 'user', content: 'Say hello.' }],
          ...(stream ? { stream: true } : {}),
        }),
        concurrency: 16,
        warmupMs: 0,
        ratePerS: rate,
      };
      // A warm-up, left out of the figures (the profile is read over the measured window only).
      await runLoad({ ...spec, durationMs: 2000 });
      const cpu0 = cpuSeconds(t.pid);
      const load = await runLoad({ ...spec, durationMs });
      const cpuUs = ((cpuSeconds(t.pid) - cpu0) * 1e6) / load.completed;
      const ended = performance.now();
      await t.stop();
      const tailMs = performance.now() - ended;
      const files = fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => path.join(dir, f));
      const entry: Result = results.get(target.name) ?? {
        cpuUs: [],
        profiled: [],
        stages: new Map(),
        functions: new Map(),
      };
      const functions = new Map<string, number>();
      const sums = stagesOf(files, tailMs, functions);
      const calls = load.requests;
      // Each function's self time, µs per call, summed over the rounds (divided by their count below).
      for (const [fn, us] of functions) entry.functions.set(fn, (entry.functions.get(fn) ?? 0) + us / calls);
      entry.cpuUs.push(cpuUs);
      entry.profiled.push([...sums.values()].reduce((a, b) => a + b, 0) / calls);
      for (const [stage, us] of sums) {
        const list = entry.stages.get(stage) ?? [];
        list.push(us / calls);
        entry.stages.set(stage, list);
      }
      results.set(target.name, entry);
      fs.rmSync(dir, { recursive: true, force: true });
      process.stderr.write(
        `round ${round + 1}/${rounds} ${target.name}: ${cpuUs.toFixed(0)} µs/call, errors ${load.errors}\n`,
      );
    }
  }
  await mock.stop();
  const round2 = (x: number) => Math.round(x * 10) / 10;
  const out = Object.fromEntries(
    [...results].map(([name, r]) => [
      name,
      {
        cpu_us_per_call_proc: {
          median: round2(median(r.cpuUs)),
          range: [round2(Math.min(...r.cpuUs)), round2(Math.max(...r.cpuUs))],
        },
        profiled_us_per_call: round2(median(r.profiled)),
        stages_us_per_call: Object.fromEntries(
          [...r.stages]
            .map(([s, xs]) => [s, xs.concat(Array<number>(rounds - xs.length).fill(0))] as const)
            .sort((a, b) => median(b[1]) - median(a[1]))
            .map(([s, xs]) => [
              s,
              { median: round2(median(xs)), range: [round2(Math.min(...xs)), round2(Math.max(...xs))] },
            ]),
        ),
        // The functions that spend the most, by their self time (µs per call, the mean of the rounds).
        top_functions: [...r.functions]
          .sort((a, b) => b[1] - a[1])
          .slice(0, topFunctions)
          .map(([fn, us]) => `${round2(us / rounds)} µs  ${fn}`),
      },
    ]),
  );
  process.stdout.write(
    `${JSON.stringify({ bench: 'gateway-stages', node: process.version, rate, duration_ms: durationMs, rounds, stream, load_average: os.loadavg().map(round2), targets: out }, null, 2)}\n`,
  );
  process.exit(0);
}

void main();
