/**
 * Monitors benchmark: the gateway's throughput with a monitor scoring a sampled share of its calls (a
 * code evaluator, sandboxed) at rate 0.1 and 1.0, against the same load on a container with no monitor,
 * in the same run and the same server; and the scoring lag (call recorded → its score stored) p50/p95.
 *
 *   npm run bench:monitors                                  # a 1 s warm-up round, then 3 rounds of 0.5 s + 2 s each at 50 calls/s
 *   npm run bench:monitors -- --rounds 5 --duration 8000 --rate 200
 *   npm run bench:monitors -- --rate 0 --concurrency 32     # closed loop: as fast as the server answers
 *   npm run bench:monitors -- --evaluator judge     # a judge on the mock instead of sandboxed Python
 *
 * The load is open loop at a fixed rate (`--rate` calls/s, default 50), so that each round selects about
 * the same number of calls whatever the machine's other load, and the scoring it causes stays bounded.
 *
 * At the end, once each monitor has settled, it prints each monitor's accounting (selected, scored,
 * errors, missing = selected − scored − errors, and the rows behind them by status) and exits with
 * status 1, saying so on stderr, when selected != scored + errors for any of them.
 *
 * Targets are loaded in turn within each round; the ratios are the median over rounds of the ratio
 * within a round. CPU per call is the server process's user + system time (and its sandboxed Python
 * children's) from the start of a target's load until the monitors have scored what it selected, over
 * the calls answered: the scoring a target causes is charged to it, and is over before the next target.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../src/db/database.js';
import { api, arg, type BenchServer, cpuSeconds, startMockProcess, startServer } from './lib.js';
import { runLoad } from './load.js';

const rounds = Number(arg('rounds', '3'));
const warmupMs = Number(arg('warmup', '500'));
const durationMs = Number(arg('duration', '2000'));
const concurrency = Number(arg('concurrency', '32'));
/** Calls started per second (open loop); 0: closed loop at `concurrency`. */
const rate = Number(arg('rate', '50'));
/** `code` (sandboxed Python; needs bubblewrap) or `judge` (a judge model on the mock). */
const evaluator = arg('evaluator', 'code');

const TARGETS = [
  { name: 'none', container: 'c-none', rate: null },
  { name: 'rate_0.1', container: 'c-10', rate: 0.1 },
  { name: 'rate_1.0', container: 'c-100', rate: 1 },
] as const;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : Number.NaN;
};
const pct = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : null;

/** utime + stime of the ended children a process has waited for (cutime + cstime), seconds. */
function reapedChildrenCpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // cutime and cstime are fields 16 and 17 of stat, in clock ticks (100 per second on Linux).
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/**
 * CPU seconds of a process and all its descendants, the ended ones included (the sandboxed evaluators
 * are children of the server: a short-lived one's CPU is counted once the server has waited for it).
 */
function treeCpuSeconds(pid: number): number {
  let total = 0;
  let pids: string[] = [];
  try {
    pids = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean);
  } catch {
    // no children
  }
  try {
    total += cpuSeconds(pid) + reapedChildrenCpuSeconds(pid);
  } catch {
    return 0;
  }
  for (const child of pids) total += treeCpuSeconds(Number(child));
  return total;
}

interface Accounting {
  /** What the API says: the monitor's `selected`, its results' `num_scored` and `num_errors`. */
  selected: number;
  scored: number;
  errors: number;
  /** Selected calls neither scored nor errored (selected − scored − errors): 0 when the books balance. */
  missing: number;
  agree: boolean;
  /** The rows behind it, by status (`none`: selected, no row yet), and the container's calls past the mark. */
  rows: Record<string, number>;
  unselected_calls: number;
  waited_ms: number;
}

/**
 * A monitor's final accounting, once it has settled: every call its container recorded considered (the
 * mark at the container's end), every selected call with a row, the API's figures agreeing — or two
 * minutes passed, and what it shows then (a disagreement is reported, never waited away).
 */
async function settledAccounting(
  server: BenchServer,
  handle: Awaited<ReturnType<typeof openDatabase>>,
  id: string,
): Promise<Accounting> {
  const t0 = Date.now();
  for (;;) {
    const m = await api(server, 'GET', `/v1/monitors/${id}`);
    const totals = (await api(server, 'GET', `/v1/monitors/${id}/results`)).totals as {
      num_scored: number;
      num_errors: number;
    }[];
    const scored = totals.reduce((n, t) => n + t.num_scored, 0);
    const errors = totals.reduce((n, t) => n + t.num_errors, 0);
    const mark = await handle.db
      .selectFrom('monitors as m')
      .leftJoin('task_log_counters as c', 'c.container_id', 'm.container_id')
      .select(['m.selected_through', 'c.last_seq', 'm.run_id'])
      .where('m.id', '=', id)
      .executeTakeFirstOrThrow();
    const unselected = Math.max(0, Number(mark.last_seq ?? 0) - Number(mark.selected_through));
    const agree = m.selected === scored + errors;
    const waited = Date.now() - t0;
    if ((agree && unselected === 0 && m.lag_seconds === 0) || waited > 120_000) {
      const byStatus = await handle.db
        .selectFrom('monitor_selections as ms')
        .leftJoin('run_samples as s', (j) =>
          j.on('s.run_id', '=', mark.run_id).onRef('s.position', '=', 'ms.position'),
        )
        .select(['s.status', (eb) => eb.fn.countAll<number>().as('n')])
        .where('ms.monitor_id', '=', id)
        .groupBy('s.status')
        .execute();
      const rows = Object.fromEntries(byStatus.map((r) => [r.status ?? 'none', Number(r.n)]));
      return {
        selected: m.selected,
        scored,
        errors,
        missing: m.selected - scored - errors,
        agree,
        rows,
        unselected_calls: unselected,
        waited_ms: waited,
      };
    }
    await sleep(200);
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  // A judge's mock answers every call with a verdict (the monitored calls' answers are that JSON's text).
  const mock = await startMockProcess(
    evaluator === 'judge' ? { MOCK_REPLY_JSON: JSON.stringify({ score: 1, reasoning: 'ok' }) } : {},
  );
  const server = await startServer({
    EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000',
    EVALGATE_RATE_LIMIT_BURST: '10000000',
  }).catch(async (err: unknown) => {
    await mock.stop();
    throw err;
  });
  const pid = server.child.pid!;
  try {
    await api(server, 'POST', '/v1/models', {
      label: 'gen',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'mock',
    });
    if (evaluator === 'judge') {
      await api(server, 'POST', '/v1/models', {
        label: 'judge',
        provider: 'openai-compatible',
        base_url: mock.baseUrl,
        upstream_model: 'judge',
      });
      await api(server, 'POST', '/v1/evaluators', {
        type: 'judge',
        name: 'non-empty',
        model: 'judge',
        prompt: 'Is {{output}} a useful answer?',
        pass_threshold: 0.5,
      });
    } else {
      await api(server, 'POST', '/v1/evaluators', {
        type: 'code',
        name: 'non-empty',
        source:
          'def evaluate(sample, ground_truth, baseline):\n    return len(str(sample["output"] or "")) > 3\n',
      });
    }
    const monitors: Record<string, string> = {};
    for (const t of TARGETS) {
      await api(server, 'POST', '/v1/containers', { label: t.container });
      if (t.rate !== null) {
        const m = await api(server, 'POST', '/v1/monitors', {
          name: t.name,
          container: t.container,
          evaluators: ['non-empty'],
          sampling_rate: t.rate,
        });
        monitors[t.name] = m.id;
      }
    }
    const body = JSON.stringify({ model: 'gen', messages: [{ role: 'user', content: 'Say hello.' }] });
    const caughtUp = async () => {
      const until = Date.now() + 120_000;
      for (const id of Object.values(monitors)) {
        while (Date.now() < until && (await api(server, 'GET', `/v1/monitors/${id}`)).lag_seconds > 0)
          await sleep(100);
      }
    };
    const perRound: Record<
      string,
      { rps: number; cpu_us_per_call: number; p50_ms: number; p99_ms: number }[]
    > = {};
    // Round -1 warms the server up (JIT, connections, the sandbox's workers) and is not counted; the
    // order of the targets rotates from round to round, so none is always first after another's load.
    for (let round = -1; round < rounds; round++) {
      const order = TARGETS.map((_, i) => TARGETS[(i + Math.max(0, round)) % TARGETS.length]!);
      for (const t of order) {
        const cpu0 = treeCpuSeconds(pid);
        const r = await runLoad({
          origin: server.url,
          path: '/v1/chat/completions',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${server.key}`,
            'x-evalgate-container': t.container,
          },
          body,
          concurrency,
          warmupMs,
          // The warm-up round (not counted) is short: it only brings the server's code and sandbox up.
          durationMs: round < 0 ? Math.min(durationMs, 1000) : durationMs,
          ...(rate > 0 ? { ratePerS: rate } : {}),
        });
        // The scoring this load selected is finished before the next target is loaded, and its CPU is
        // charged to this target.
        await caughtUp();
        const cpu = treeCpuSeconds(pid) - cpu0;
        if (round < 0) continue;
        const list = perRound[t.name] ?? [];
        perRound[t.name] = list;
        list.push({
          rps: Math.round(r.rps),
          cpu_us_per_call: r.completed ? Math.round((cpu * 1e6) / r.completed) : 0,
          p50_ms: r.p50_ms,
          p99_ms: r.p99_ms,
        });
        if (r.errors) process.stderr.write(`${t.name}: ${r.errors} errors\n`);
      }
    }
    const handle = await openDatabase(`sqlite:${path.join(server.dataDir, 'evalgate.db')}`);
    const lag: Record<string, unknown> = {};
    const accounting: Record<string, Accounting> = {};
    try {
      for (const [name, id] of Object.entries(monitors))
        accounting[name] = await settledAccounting(server, handle, id);
      for (const [name, id] of Object.entries(monitors)) {
        const rows = await handle.db
          .selectFrom('monitor_selections as ms')
          .innerJoin('monitors as m', 'm.id', 'ms.monitor_id')
          .innerJoin('run_samples as s', (j) =>
            j.onRef('s.run_id', '=', 'm.run_id').onRef('s.position', '=', 'ms.position'),
          )
          .select(['ms.log_created_at', 's.created_at', 's.status'])
          .where('ms.monitor_id', '=', id)
          .execute();
        const lags = rows
          .map((r) => Date.parse(r.created_at) - Date.parse(r.log_created_at))
          .sort((a, b) => a - b);
        const selected = await api(server, 'GET', `/v1/monitors/${id}`);
        lag[name] = {
          selected: selected.selected,
          scored: rows.filter((r) => r.status === 'scored').length,
          lag_p50_ms: pct(lags, 50),
          lag_p95_ms: pct(lags, 95),
          lag_max_ms: lags.at(-1) ?? null,
        };
      }
    } finally {
      await handle.close();
    }
    const summary = Object.fromEntries(
      TARGETS.map((t) => {
        const rs = perRound[t.name] ?? [];
        return [
          t.name,
          {
            rps_median: median(rs.map((r) => r.rps)),
            cpu_us_per_call_median: median(rs.map((r) => r.cpu_us_per_call)),
            rounds: rs,
          },
        ];
      }),
    );
    const ratio = (name: string) =>
      median((perRound[name] ?? []).map((r, i) => r.rps / (perRound.none?.[i]?.rps ?? Number.NaN)));
    const load = (await import('node:os')).loadavg();
    process.stdout.write(
      `${JSON.stringify(
        {
          bench: 'monitors',
          cores: (await import('node:os')).availableParallelism(),
          // Other work on the machine during the run (1, 5, 15 min load averages at the end).
          load_average: load.map((l) => Math.round(l * 100) / 100),
          concurrency,
          rate_per_s: rate > 0 ? rate : 'closed loop',
          rounds,
          duration_ms: durationMs,
          evaluator: evaluator === 'judge' ? 'judge (a model on the mock)' : 'code (sandboxed Python)',
          throughput: summary,
          throughput_ratio_vs_none: { 'rate_0.1': ratio('rate_0.1'), 'rate_1.0': ratio('rate_1.0') },
          scoring: lag,
          // Every selected call ends scored or errored: selected = scored + errors, per monitor.
          accounting,
          // The whole bench, server start to the last accounting.
          elapsed_s: Math.round((Date.now() - started) / 1000),
        },
        null,
        2,
      )}\n`,
    );
    const wrong = Object.entries(accounting).filter(([, a]) => !a.agree);
    if (wrong.length > 0) {
      process.stderr.write(
        `\nMONITOR ACCOUNTING MISMATCH: selected != scored + errors for ${wrong
          .map(([name, a]) => `${name} (${a.selected} selected, ${a.scored} scored, ${a.errors} errors)`)
          .join(', ')}\n`,
      );
      process.exitCode = 1;
    }
  } finally {
    await server.stop();
    await mock.stop();
  }
}

await main();
