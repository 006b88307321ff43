/**
 * `npm run bench:gateway` runs the steady per-core method (bench/gateway-steady.ts: CPU per call at a
 * fixed rate, alternating rounds, added latency at concurrency 1, sustained throughput). This file is the
 * closed-loop throughput bench, run with `--closed-loop` or any of its own options (--mode, --concurrency,
 * --cpu-prof, --answer-chars), and the dispatcher of `--workers`.
 *
 * Closed-loop gateway benchmark: one command starts the mock upstream, a bare pass-through proxy and Evalgate
 * (recording on, then off), and loads each of them and the mock directly, at concurrency 1 and 64,
 * streamed and not. Prints one JSON document.
 *
 *   npm run bench:gateway -- --closed-loop        # defaults: 5 rounds of 1 s warm-up + 2.5 s (~5 min)
 *   npm run bench:gateway -- --concurrency 64 --rounds 3 --cpu-prof .profiles
 *   npm run bench:gateway -- --answer-chars 2000   # longer answers (streamed in 8-character pieces)
 *   npm run bench:gateway -- --workers 1,2,4,8     # `serve --workers N` per count (bench/gateway-workers.ts)
 *   npm run bench:gateway -- --mode responses,messages   # translated Responses / Messages calls (plain and
 *                                                       # streamed) beside chat completions, CPU per call
 *   npm run bench:gateway -- --mode cache --concurrency 1   # cache hits (X-Evalgate-Cache: use, one request
 *                                                       # repeated): added p50 over the mock, CPU per call
 *
 * The gateway runs from the build (tsc first; `--tsx` runs the sources). Each setting is measured
 * `--rounds` times, interleaved across targets; the figures per target are the best round's, and the
 * ratios between targets (the targets' summary) are the median of the ratios within each round.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { MOCK_REPLY } from '../test/fixtures/mock-upstream.js';
import {
  arg,
  cpuSeconds,
  jsonUrl,
  ROOT,
  rssMb,
  type StartedProcess,
  serverEntry,
  startProcess,
  stopProcess,
  threadCpuUs,
  threadSplit,
} from './lib.js';
import { type LoadResult, runLoad } from './load.js';

const NODE_TSX = ['--import', 'tsx'];
const PEPPER = 'bench-pepper-0123456789abcdef';

const warmupMs = Number(arg('warmup', '1000'));
const durationMs = Number(arg('duration', '2500'));
const cpuProf = arg('cpu-prof', '');
const concurrencies = arg('concurrency', '1,64').split(',').map(Number);
const rounds = Number(arg('rounds', '5'));
/** `responses` and `messages` stand for their plain and streamed modes, measured beside chat completions. */
const DIALECT_MODES: Record<string, Mode[]> = {
  responses: ['responses', 'responses_stream'],
  messages: ['messages', 'messages_stream'],
  cache: ['cache', 'cache_stream'],
};
const isCacheMode = (m: Mode) => m.startsWith('cache');
const asked = arg('mode', 'plain,stream').split(',');
const modes = [
  ...new Set<Mode>([
    ...(asked.some((m) => DIALECT_MODES[m]) ? (['plain', 'stream'] as Mode[]) : []),
    ...asked.flatMap((m) => DIALECT_MODES[m] ?? [m as Mode]),
  ]),
];
/** The registered model the dialect modes call: its upstream (the mock) speaks chat completions only. */
const CHAT_MODEL = 'bench-chat';
/** The mock's answer: its own short sentence by default, else this many characters of prose. */
const answerChars = Number(arg('answer-chars', '0'));

/** Peak resident set size of a process, MB (VmHWM), or null once it is gone. */
function peakRssMb(pid: number): number | null {
  try {
    return rssMb(pid).peak;
  } catch {
    return null;
  }
}

/** What every gateway command of the bench runs with (on top of the caller's environment): one data directory. */
function gatewayEnv(dataDir: string): Record<string, string> {
  return { EVALGATE_DATA_DIR: dataDir, EVALGATE_KEY_PEPPER: PEPPER };
}

async function startEvalgate(mockUrl: string, recording: boolean, dataDir: string): Promise<StartedProcess> {
  const env = {
    ...gatewayEnv(dataDir),
    EVALGATE_PORT: '0',
    EVALGATE_LOG_LEVEL: 'warn',
    EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000',
    EVALGATE_RATE_LIMIT_BURST: '10000000',
    EVALGATE_RECORDING: recording ? '1' : '0',
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: `${mockUrl}/v1`,
  };
  const prof = cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(cpuProf)}`] : [];
  return startProcess([...prof, ...serverEntry(), 'serve'], env, (line) => {
    const m = /listening on (http:\/\/\S+)/.exec(line);
    return m ? m[1]! : null;
  });
}

interface Target {
  name: string;
  origin: string;
  headers: Record<string, string>;
  model: string;
  /** The server process whose CPU time is charged to the requests (none for the mock itself). */
  pid: number | null;
}

type Mode =
  | 'plain'
  | 'stream'
  | 'responses'
  | 'responses_stream'
  | 'messages'
  | 'messages_stream'
  | 'cache'
  | 'cache_stream';

/** The path and body of one call in a mode (dialect modes call the registered chat-only model). */
function callOf(target: Target, mode: Mode): { path: string; body: string; headers: Record<string, string> } {
  const stream = mode.endsWith('stream') ? { stream: true } : {};
  if (mode.startsWith('responses'))
    return {
      path: '/v1/responses',
      body: JSON.stringify({ model: CHAT_MODEL, input: 'Say hello.', ...stream }),
      headers: {},
    };
  if (mode.startsWith('messages')) {
    const body = {
      model: CHAT_MODEL,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Say hello.' }],
      ...stream,
    };
    // The Anthropic SDK's header.
    const key = (target.headers.authorization ?? '').replace(/^Bearer /, '');
    return {
      path: '/v1/messages',
      body: JSON.stringify(body),
      headers: { 'x-api-key': key, authorization: '' },
    };
  }
  const messages = [{ role: 'user', content: 'Say hello.' }];
  return {
    path: '/v1/chat/completions',
    body: JSON.stringify({ model: target.model, messages, ...stream }),
    // The same request every time: after the first call, every one is a hit.
    headers: isCacheMode(mode) ? { 'x-evalgate-cache': 'use' } : {},
  };
}
export interface Measured extends LoadResult {
  /**
   * CPU time (user + system) the server process spent per request, microseconds, until it was idle
   * again: work left over when the load stopped (the log writer's backlog) is counted.
   */
  cpu_us_per_req: number | null;
  /** The same, by thread: the main one, the busiest other (the log writer's, when recording), the rest. */
  cpu_us_per_req_by_thread: { main: number; busiest_other: number; rest: number } | null;
  /** How long the server stayed busy after the load stopped (storing what it had recorded), ms. */
  settle_ms: number;
}

/** A process is idle when it used under this share of a core over SETTLE_QUIET_MS. */
const IDLE_SHARE = 0.05;
const SETTLE_POLL_MS = 50;
const SETTLE_QUIET_MS = 300;
const SETTLE_MAX_MS = 120_000;

/**
 * Waits until a process is idle, so that what it still does for one measurement does not slow down the
 * next target's; returns how long it stayed busy.
 */
async function settle(pid: number | null): Promise<number> {
  const t0 = performance.now();
  let last = cpuUs(pid);
  let busyUntil = t0;
  while (last !== null && performance.now() - t0 < SETTLE_MAX_MS) {
    await sleep(SETTLE_POLL_MS);
    const now = cpuUs(pid);
    if (now === null) break;
    if (now - last > SETTLE_POLL_MS * 1000 * IDLE_SHARE) busyUntil = performance.now();
    else if (performance.now() - busyUntil >= SETTLE_QUIET_MS) break;
    last = now;
  }
  return Math.round(busyUntil - t0);
}

/** CPU time of each thread of a process so far (microseconds), or null once it is gone. */
function threadsUs(pid: number | null): Map<number, number> | null {
  if (pid === null) return null;
  try {
    return threadCpuUs(pid);
  } catch {
    return null;
  }
}

/** User + system CPU time of a process so far, in microseconds. */
function cpuUs(pid: number | null): number | null {
  if (pid === null) return null;
  try {
    return cpuSeconds(pid) * 1_000_000;
  } catch {
    return null;
  }
}

async function measureOnce(target: Target, concurrency: number, mode: Mode): Promise<Measured> {
  const call = callOf(target, mode);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...target.headers,
    ...call.headers,
  };
  if (headers.authorization === '') delete headers.authorization;
  const before = cpuUs(target.pid);
  const threadsBefore = threadsUs(target.pid);
  const result = await runLoad({
    origin: target.origin,
    path: call.path,
    headers,
    body: call.body,
    concurrency,
    warmupMs,
    durationMs,
  });
  // A profiled process is never idle (the profiler samples it), so it is not waited for.
  const settleMs = cpuProf ? 0 : await settle(target.pid);
  const after = cpuUs(target.pid);
  const total = result.completed;
  const cpu = before !== null && after !== null && total > 0 ? Math.round((after - before) / total) : null;
  const threadsAfter = threadsUs(target.pid);
  let byThread: Measured['cpu_us_per_req_by_thread'] = null;
  if (target.pid !== null && threadsBefore && threadsAfter && total > 0) {
    const split = threadSplit(target.pid, threadsBefore, threadsAfter);
    const per = (us: number) => Math.round(us / total);
    byThread = { main: per(split.main), busiest_other: per(split.busiest_other), rest: per(split.rest) };
  }
  return { ...result, cpu_us_per_req: cpu, cpu_us_per_req_by_thread: byThread, settle_ms: settleMs };
}

/** Task logs in the gateways' database (the one their configuration names). */
async function storedLogs(dataDir: string): Promise<number> {
  const { databaseUrl } = loadConfig({ ...process.env, ...gatewayEnv(dataDir) });
  const handle = await openDatabase(databaseUrl);
  try {
    const row = await handle.db
      .selectFrom('task_logs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  } finally {
    await handle.close();
  }
}

/** Keeps, for each target and setting, the best of the rounds (the one least disturbed by other load). */
function better(a: Measured | undefined, b: Measured): Measured {
  if (!a) return b;
  return b.rps > a.rps ? b : a;
}

const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;
const diff = (a: number, b: number) => Math.round((a - b) * 1000) / 1000;

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-bench-'));
  if (cpuProf) fs.mkdirSync(cpuProf, { recursive: true });
  const children: ChildProcess[] = [];
  try {
    const mockEnv: Record<string, string> = answerChars > 0 ? { MOCK_REPLY_CHARS: String(answerChars) } : {};
    const mock = await startProcess([...NODE_TSX, 'bench/mock-server.ts'], mockEnv, jsonUrl);
    children.push(mock.child);
    const proxy = await startProcess([...NODE_TSX, 'bench/bare-proxy.ts', mock.url], {}, jsonUrl);
    children.push(proxy.child);
    const keyOutput = execFileSync(
      process.execPath,
      [...serverEntry(), 'keys', 'create', '--project', 'bench', '--name', 'bench'],
      { cwd: ROOT, env: { ...process.env, ...gatewayEnv(dataDir) } },
    ).toString();
    const apiKey = keyOutput.trim().split('\n').at(-1)!.trim();

    const withRecording = await startEvalgate(mock.url, true, dataDir);
    children.push(withRecording.child);
    const withoutRecording = await startEvalgate(mock.url, false, dataDir);
    children.push(withoutRecording.child);
    const auth = { authorization: `Bearer ${apiKey}` };
    const targets: Target[] = [
      { name: 'direct', origin: mock.url, headers: {}, model: 'gpt-4o-mini', pid: null },
      { name: 'bare_proxy', origin: proxy.url, headers: {}, model: 'gpt-4o-mini', pid: proxy.child.pid! },
      {
        name: 'evalgate',
        origin: withRecording.url,
        headers: auth,
        model: 'openai/gpt-4o-mini',
        pid: withRecording.child.pid!,
      },
      {
        name: 'evalgate_no_recording',
        origin: withoutRecording.url,
        headers: auth,
        model: 'openai/gpt-4o-mini',
        pid: withoutRecording.child.pid!,
      },
    ];
    if (modes.some((m) => m !== 'plain' && m !== 'stream' && !isCacheMode(m))) {
      // The dialect modes' model: the mock behind it speaks chat completions only, so every call is translated.
      const res = await fetch(`${withRecording.url}/v1/models`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({
          label: CHAT_MODEL,
          base_url: `${mock.url}/v1`,
          upstream_model: 'gpt-4o-mini',
          api: 'chat',
          input_price_per_mtok: 0.15,
          output_price_per_mtok: 0.6,
        }),
      });
      if (res.status !== 201) throw new Error(`registering ${CHAT_MODEL}: ${res.status} ${await res.text()}`);
    }
    // Rounds interleave the targets so that a burst of outside load does not favour one of them.
    const results: Record<string, Record<string, Partial<Record<Mode, Measured>>>> = {};
    // Requests/s of every round, per setting and target: ratios are taken within a round, where the
    // targets were measured one right after the other, so slow spells of a shared machine cancel out.
    const perRound = new Map<string, number[]>();
    let servedRecorded = 0;
    for (let round = 0; round < rounds; round++) {
      for (const concurrency of concurrencies) {
        for (const mode of modes) {
          for (const target of targets) {
            // The upstream and the bare proxy speak chat completions only.
            if (target.pid === null || target.name === 'bare_proxy') {
              if (mode !== 'plain' && mode !== 'stream') continue;
            }
            results[target.name] ??= {};
            const byTarget = results[target.name]!;
            byTarget[`c${concurrency}`] ??= {};
            const row = byTarget[`c${concurrency}`]!;
            const measured = await measureOnce(target, concurrency, mode);
            row[mode] = better(row[mode], measured);
            const key = `${target.name} c${concurrency} ${mode}`;
            perRound.set(key, [...(perRound.get(key) ?? []), measured.rps]);
            if (target.name === 'evalgate') servedRecorded += measured.completed;
          }
        }
      }
    }
    /** The median over rounds of a/b, each round's figures divided within that round. */
    const roundRatio = (a: string, b: string, c: string, mode: Mode) => {
      const xs = perRound.get(`${a} ${c} ${mode}`) ?? [];
      const ys = perRound.get(`${b} ${c} ${mode}`) ?? [];
      const ratios = xs.map((x, i) => x / ys[i]!).sort((p, q) => p - q);
      const mid = ratios.length / 2;
      const median = ratios.length % 2 ? ratios[Math.floor(mid)]! : (ratios[mid - 1]! + ratios[mid]!) / 2;
      return Math.round(median * 1000) / 1000;
    };
    const rss = {
      bare_proxy: peakRssMb(proxy.child.pid!),
      evalgate: peakRssMb(withRecording.child.pid!),
      evalgate_no_recording: peakRssMb(withoutRecording.child.pid!),
    };

    // Stopping the server flushes its log writer: then every call it served should be a stored task log.
    await stopProcess(withRecording.child);
    const summary: Record<string, unknown> = {
      gateway_peak_rss_mb: rss,
      recorded_calls: { served: servedRecorded, stored: await storedLogs(dataDir) },
    };

    const rpsOf = (name: string, c: string, mode: Mode) => results[name]?.[c]?.[mode]?.rps ?? Number.NaN;
    /** a's best round's requests/s over b's, at c=64. */
    const bestRatio = (a: string, b: string, mode: Mode) =>
      ratio(rpsOf(a, 'c64', mode), rpsOf(b, 'c64', mode));
    const cpuOf = (name: string, c: string, mode: Mode) =>
      results[name]?.[c]?.[mode]?.cpu_us_per_req ?? Number.NaN;
    const c1 = results.evalgate!.c1;
    const c64 = results.evalgate!.c64;
    if (c64) {
      summary.throughput_vs_bare_proxy_c64 = {
        plain: roundRatio('evalgate', 'bare_proxy', 'c64', 'plain'),
        stream: roundRatio('evalgate', 'bare_proxy', 'c64', 'stream'),
        best_rounds: {
          plain: bestRatio('evalgate', 'bare_proxy', 'plain'),
          stream: bestRatio('evalgate', 'bare_proxy', 'stream'),
        },
        target: '>= 0.8',
      };
      summary.recording_cost_c64 = {
        plain: diff(1, roundRatio('evalgate', 'evalgate_no_recording', 'c64', 'plain')),
        stream: diff(1, roundRatio('evalgate', 'evalgate_no_recording', 'c64', 'stream')),
        best_rounds: {
          plain: diff(1, bestRatio('evalgate', 'evalgate_no_recording', 'plain')),
          stream: diff(1, bestRatio('evalgate', 'evalgate_no_recording', 'stream')),
        },
        target: '< 0.10',
      };
      // Under outside load, throughput mostly tells who got the cores; CPU per request does not.
      summary.cpu_us_per_req_c64 = {
        bare_proxy: {
          plain: cpuOf('bare_proxy', 'c64', 'plain'),
          stream: cpuOf('bare_proxy', 'c64', 'stream'),
        },
        evalgate: { plain: cpuOf('evalgate', 'c64', 'plain'), stream: cpuOf('evalgate', 'c64', 'stream') },
        evalgate_no_recording: {
          plain: cpuOf('evalgate_no_recording', 'c64', 'plain'),
          stream: cpuOf('evalgate_no_recording', 'c64', 'stream'),
        },
        recording_share: {
          plain: diff(
            1,
            ratio(cpuOf('evalgate_no_recording', 'c64', 'plain'), cpuOf('evalgate', 'c64', 'plain')),
          ),
          stream: diff(
            1,
            ratio(cpuOf('evalgate_no_recording', 'c64', 'stream'), cpuOf('evalgate', 'c64', 'stream')),
          ),
        },
      };
    }
    // Translated dialects against chat completions, same gateway, same run.
    const dialectModes = modes.filter((m) => m !== 'plain' && m !== 'stream' && !isCacheMode(m));
    if (dialectModes.length > 0) {
      const per: Record<string, unknown> = {};
      for (const c of concurrencies.map((n) => `c${n}`)) {
        const cpu = (mode: Mode) => cpuOf('evalgate', c, mode);
        const rows: Record<string, unknown> = { chat: { plain: cpu('plain'), stream: cpu('stream') } };
        for (const mode of dialectModes) {
          const base = mode.endsWith('stream') ? 'stream' : 'plain';
          rows[mode] = { cpu_us_per_req: cpu(mode), vs_chat: ratio(cpu(mode), cpu(base)) };
        }
        per[c] = rows;
      }
      summary.dialects_cpu_us_per_req = { ...per, target: 'vs_chat <= 1.15' };
    }
    // Cache hits against the mock answering directly (latency) and against a chat call that goes upstream (CPU).
    if (modes.includes('cache')) {
      const per: Record<string, unknown> = {};
      for (const c of concurrencies.map((n) => `c${n}`)) {
        const hit = results.evalgate?.[c];
        const direct = results.direct?.[c];
        if (!hit?.cache || !hit.cache_stream || !direct?.plain || !direct.stream) continue;
        per[c] = {
          added_p50_ms_vs_direct: {
            plain: diff(hit.cache.p50_ms, direct.plain.p50_ms),
            stream: diff(hit.cache_stream.p50_ms, direct.stream.p50_ms),
          },
          cpu_us_per_req: {
            hit: cpuOf('evalgate', c, 'cache'),
            hit_stream: cpuOf('evalgate', c, 'cache_stream'),
            upstream: cpuOf('evalgate', c, 'plain'),
            upstream_stream: cpuOf('evalgate', c, 'stream'),
          },
        };
      }
      summary.cache_hit = { ...per, target: 'added_p50_ms_vs_direct.plain <= 0.3' };
    }
    // The latency summary needs both modes.
    if (c1?.plain && c1.stream) {
      const direct = results.direct!.c1!;
      const bare = results.bare_proxy!.c1!;
      summary.added_p50_ms_c1 = {
        vs_direct: {
          plain: diff(c1.plain.p50_ms, direct.plain!.p50_ms),
          stream: diff(c1.stream.p50_ms, direct.stream!.p50_ms),
        },
        vs_bare_proxy: {
          plain: diff(c1.plain.p50_ms, bare.plain!.p50_ms),
          stream: diff(c1.stream.p50_ms, bare.stream!.p50_ms),
        },
        target: '< 0.5',
      };
      summary.added_ttfb_p50_ms_c1 = {
        vs_direct: diff(c1.stream.ttfb_p50_ms, direct.stream!.ttfb_p50_ms),
        vs_bare_proxy: diff(c1.stream.ttfb_p50_ms, bare.stream!.ttfb_p50_ms),
        target: '< 1',
      };
    }
    const report = {
      benchmark: 'gateway',
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '', node: process.version },
      settings: {
        warmup_ms: warmupMs,
        duration_ms: durationMs,
        rounds,
        concurrencies,
        upstream_latency_ms: 0,
        answer_chars: answerChars > 0 ? answerChars : MOCK_REPLY.length,
      },
      summary,
      results,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await Promise.all(children.map(stopProcess));
    fs.rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }
}

// `--workers 1,2,4,8`: the gateway as a cluster of server processes (bench/gateway-workers.ts).
// `--closed-loop` (or one of its own options: --mode, --concurrency, --cpu-prof, --answer-chars): the
// closed-loop throughput bench above. Otherwise the steady per-core method (bench/gateway-steady.ts).
const CLOSED_LOOP_OPTIONS = ['--closed-loop', '--mode', '--concurrency', '--cpu-prof', '--answer-chars'];
if (process.argv.includes('--workers')) await import('./gateway-workers.js');
else if (CLOSED_LOOP_OPTIONS.some((o) => process.argv.includes(o))) await main();
else await import('./gateway-steady.js');
