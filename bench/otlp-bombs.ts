/**
 * OTLP bombs against `evalgate serve` (SQLite): requests built to cost a decoder far more than their size
 * (issue #51), eight at once, while a gateway call to the mock upstream is timed at concurrency 1.
 *
 * For each kind: 8 attackers (in a process of their own: `otlp-attacker.ts`) send it again and again (`spans_100k`, a valid request at the span limit,
 * once each) while `--calls` gateway calls are made one after another; reported are each bomb's answers
 * (status, reason, time to answer), the server's resident memory (peak of the whole process, and the
 * highest sampled during the kind's attack), and the gateway call's p50/p99 during the attack against
 * the same measured idle, before the attacks, and the server's own event-loop delay over each window (its
 * /metrics), which tells time the server's loop was blocked from time it waited for one of the 2 cores.
 *
 *   npm run bench:otlp-bombs                 # the build (tsc first when stale); --tsx runs the sources
 *   npm run bench:otlp-bombs -- --calls 300 --only attributes_1m_gzip,deep_nesting
 *   npm run bench:otlp-bombs -- --attacker-nice 19   # the attackers at nice 19 (see below)
 *
 * On a machine of few cores the attackers' own sending (a loopback send runs the receiving side's TCP
 * work too) takes a core the server would not share with remote clients: `--attacker-nice 19` runs them
 * at the lowest priority, so that what is measured is the server's work; the output names the value.
 *
 * Prints one JSON document; progress goes to stderr.
 */
import { fork } from 'node:child_process';
import path from 'node:path';
import { api, arg, ROOT, rssMb, startMockProcess, startServer } from './lib.js';
import { loadAverage } from './method.js';
import type { Answer } from './otlp-attacker.js';
import { bombKinds } from './otlp-bomb-kinds.js';

const calls = Number(arg('calls', '300'));
const attackers = Number(arg('concurrency', '8'));
const only = arg('only', '');
const attackerNice = Number(arg('attacker-nice', '0'));
/** The resident memory the server stays under (docs/traces.md, Limits): checked against each kind's highest sample. */
const rssBoundMb = Number(arg('rss-bound-mb', '1024'));

/** An attacker process armed with one kind: `go` starts it, `stop` ends it with its answers. */
async function armAttacker(
  server: { url: string; key: string },
  kind: string,
  concurrency: number,
): Promise<{ bytes: number; go(): void; stop(): Promise<Answer[]>; done: Promise<Answer[]> }> {
  // The same loader as this process (tsx), so that the attacker runs from the sources too.
  // At a nice value, through nice(1): every thread of the process has it from the start.
  const niced =
    attackerNice === 0
      ? { execArgv: process.execArgv }
      : { execPath: 'nice', execArgv: ['-n', String(attackerNice), process.execPath, ...process.execArgv] };
  const child = fork(path.join(ROOT, 'bench', 'otlp-attacker.ts'), [], niced);
  const done = new Promise<Answer[]>((resolve, reject) => {
    child.on('message', (m: { type: string; answers?: Answer[] }) => {
      if (m.type === 'answers') resolve(m.answers ?? []);
    });
    child.once('exit', (code) => reject(new Error(`the attacker exited with ${code} before answering`)));
  });
  done.catch(() => {});
  const bytes = await new Promise<number>((resolve, reject) => {
    child.on('message', (m: { type: string; bytes?: number }) => {
      if (m.type === 'ready') resolve(m.bytes ?? 0);
    });
    child.once('exit', (code) => reject(new Error(`the attacker exited with ${code} before it was armed`)));
    child.send({ type: 'arm', url: server.url, key: server.key, kind, concurrency });
  });
  return {
    bytes,
    go: () => child.send({ type: 'go' }),
    stop: () => {
      if (child.connected) child.send({ type: 'stop' });
      return done;
    },
    done,
  };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN) * 100) / 100;
};

async function main(): Promise<void> {
  const mock = await startMockProcess({});
  const server = await startServer({
    EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000',
    EVALGATE_RATE_LIMIT_BURST: '10000000',
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: mock.baseUrl,
  });
  const pid = server.child.pid as number;
  const auth = { authorization: `Bearer ${server.key}` };
  await api(server, 'POST', '/v1/containers', { label: 'bombs' });

  const gatewayCall = async (): Promise<number> => {
    const t0 = performance.now();
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'Say hello.' }],
      }),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`gateway call answered ${res.status}`);
    return performance.now() - t0;
  };
  const gatewaySample = async (n: number, until?: () => boolean): Promise<number[]> => {
    const out: number[] = [];
    while (out.length < n || (until !== undefined && !until())) out.push(await gatewayCall());
    return out;
  };

  /** The server's event-loop delay since the last scrape (prom-client resets its histogram on each). */
  const loopDelay = async (): Promise<{ p99_ms: number; max_ms: number }> => {
    const res = await fetch(`${server.url}/metrics`, { headers: auth });
    const text = await res.text();
    const read = (name: string) =>
      Math.round(
        Number(new RegExp(`^evalgate_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1]) *
          1e5,
      ) / 100;
    return { p99_ms: read('p99'), max_ms: read('max') };
  };
  /** The server's major (mark-compact) collections so far: their count and total milliseconds. */
  const majorGcs = async (): Promise<{ count: number; ms: number }> => {
    const text = await (await fetch(`${server.url}/metrics`, { headers: auth })).text();
    const read = (what: string) =>
      Number(
        new RegExp(`^evalgate_nodejs_gc_duration_seconds_${what}\\{kind="major"\\} (\\S+)$`, 'm').exec(
          text,
        )?.[1] ?? 0,
      );
    return { count: read('count'), ms: Math.round(read('sum') * 1e5) / 100 };
  };

  // Warm: the gateway path, the decode thread, the definitions (each bomb once).
  await gatewaySample(50);
  const kinds = bombKinds(only);
  for (const b of kinds.filter((k) => !k.once)) {
    const warm = await armAttacker(server, b.name, 1);
    warm.go();
    await warm.stop();
  }
  await loopDelay();
  const idle = await gatewaySample(calls);
  const idleLoop = await loopDelay();
  const rssIdle = rssMb(pid);
  process.stderr.write(
    `idle: p50 ${pct(idle, 50)} ms, p99 ${pct(idle, 99)} ms, server loop delay ${JSON.stringify(idleLoop)}\n`,
  );

  const results = [];
  for (const b of kinds) {
    let rssHigh = 0;
    const attack = await armAttacker(server, b.name, attackers);
    const sampler = setInterval(() => {
      rssHigh = Math.max(rssHigh, rssMb(pid).now);
    }, 50);
    let attackDone = false;
    void attack.done.then(() => {
      attackDone = true;
    });
    await loopDelay();
    const gcBefore = await majorGcs();
    attack.go();
    const during = await gatewaySample(calls, b.once ? () => attackDone : undefined);
    const answers = await attack.stop();
    const loop = await loopDelay();
    const gcAfter = await majorGcs();
    clearInterval(sampler);
    const statuses: Record<string, number> = {};
    for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    const times = answers.map((a) => a.ms);
    const figure = {
      kind: b.name,
      what: b.what,
      body_bytes: attack.bytes,
      requests: answers.length,
      statuses,
      /** Answered 429: the OTLP bytes in flight were at their bound (exporters retry these). */
      busy_429: statuses['429'] ?? 0,
      reason:
        (answers.find((a) => a.reason && a.status !== 429) ?? answers.find((a) => a.reason))?.reason ?? null,
      answer_ms: { p50: pct(times, 50), max: pct(times, 100) },
      all_within_2s: times.every((t) => t < 2_000),
      rss_mb_highest_sampled: rssHigh,
      rss_within_bound: rssHigh <= rssBoundMb,
      gateway_ms_during: { p50: pct(during, 50), p99: pct(during, 99), calls: during.length },
      gateway_p99_minus_idle_ms: Math.round((pct(during, 99) - pct(idle, 99)) * 100) / 100,
      p99_within_10ms: pct(during, 99) - pct(idle, 99) <= 10,
      server_loop_delay_ms: loop,
      server_major_gcs: {
        count: gcAfter.count - gcBefore.count,
        ms: Math.round((gcAfter.ms - gcBefore.ms) * 100) / 100,
      },
    };
    process.stderr.write(`${JSON.stringify(figure)}\n`);
    results.push(figure);
  }
  const rss = rssMb(pid);
  console.log(
    JSON.stringify(
      {
        bench: 'otlp-bombs',
        database: 'sqlite',
        attackers,
        attacker_nice: attackerNice,
        rss_bound_mb: rssBoundMb,
        node: process.version,
        load_average: loadAverage(),
        gateway_ms_idle: { p50: pct(idle, 50), p99: pct(idle, 99), calls: idle.length },
        server_loop_delay_ms_idle: idleLoop,
        server_rss_mb: { idle: rssIdle.now, peak: rss.peak, peak_within_bound: rss.peak <= rssBoundMb },
        bombs: results,
      },
      null,
      2,
    ),
  );
  await server.stop();
  await mock.stop();
}

await main();
