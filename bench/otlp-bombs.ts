/**
 * OTLP bombs against `evalgate serve` (SQLite): requests built to cost a decoder far more than their size
 * (issue #51), eight at once, while a gateway call to the mock upstream is timed at concurrency 1.
 *
 * For each kind: 8 attackers send it again and again (`spans_100k`, a valid request at the span limit,
 * once each) while `--calls` gateway calls are made one after another; reported are each bomb's answers
 * (status, reason, time to answer), the server's resident memory (peak of the whole process, and the
 * highest sampled during the kind's attack), and the gateway call's p50/p99 during the attack against
 * the same measured idle, before the attacks.
 *
 *   npm run bench:otlp-bombs                 # the build (tsc first when stale); --tsx runs the sources
 *   npm run bench:otlp-bombs -- --calls 300 --only attributes_1m_gzip,deep_nesting
 *
 * Prints one JSON document; progress goes to stderr.
 */
import {
  deepNesting,
  gzip,
  gzipBomb,
  hugeStrings,
  manyAttributes,
  manyAttributesJson,
  manySpans,
} from '../test/traces/bombs.js';
import { api, arg, rssMb, startMockProcess, startServer } from './lib.js';
import { loadAverage } from './method.js';

const calls = Number(arg('calls', '300'));
const attackers = Number(arg('concurrency', '8'));
const only = arg('only', '');

const PROTO = { 'content-type': 'application/x-protobuf' };
const GZIP = { ...PROTO, 'content-encoding': 'gzip' };

interface Bomb {
  name: string;
  what: string;
  body: Uint8Array | string;
  headers: Record<string, string>;
  /** Sent once per attacker, not again and again (a valid request: it is stored). */
  once?: boolean;
}

function bombs(): Bomb[] {
  const all: Bomb[] = [
    {
      name: 'attributes_1m_gzip',
      what: 'one span of 1,000,000 empty attributes, gzipped',
      body: gzip(manyAttributes(1_000_000)),
      headers: GZIP,
    },
    {
      name: 'deep_nesting',
      what: 'one attribute of 50,000 nested arrayValues',
      body: deepNesting(50_000),
      headers: PROTO,
    },
    {
      name: 'spans_150k',
      what: '150,000 spans (past the 100,000 limit)',
      body: manySpans(150_000),
      headers: PROTO,
    },
    {
      name: 'huge_strings',
      what: 'one span of four 2 MiB string attributes, gzipped',
      body: gzip(hugeStrings(4, 2 * 1024 * 1024)),
      headers: GZIP,
    },
    { name: 'gzip_bomb', what: '256 MiB of zeros, gzipped', body: gzipBomb(256 * 1024 ** 2), headers: GZIP },
    {
      name: 'attributes_json',
      what: 'OTLP/JSON, one span of 400,000 empty attributes (8.8 MB)',
      body: manyAttributesJson(400_000),
      headers: { 'content-type': 'application/json' },
    },
    {
      name: 'spans_100k',
      what: '100,000 valid spans (at the limit: taken, stored in parts)',
      body: manySpans(100_000),
      headers: PROTO,
      once: true,
    },
  ];
  const wanted = new Set(only.split(',').filter(Boolean));
  return wanted.size ? all.filter((b) => wanted.has(b.name)) : all;
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

  const send = async (b: Bomb) => {
    const t0 = performance.now();
    try {
      const res = await fetch(`${server.url}/v1/traces`, {
        method: 'POST',
        headers: { ...auth, 'x-evalgate-container': 'bombs', ...b.headers },
        body: b.body,
      });
      const text = Buffer.from(await res.arrayBuffer()).toString('latin1');
      const reason = /(The [ -~]{10,200})/.exec(text)?.[1] ?? '';
      return { status: res.status, ms: performance.now() - t0, reason };
    } catch (err) {
      return { status: 0, ms: performance.now() - t0, reason: (err as Error).message };
    }
  };

  // Warm: the gateway path, the decode thread, the definitions.
  await gatewaySample(50);
  const kinds = bombs();
  for (const b of kinds.filter((k) => !k.once)) await send(b);
  const idle = await gatewaySample(calls);
  const rssIdle = rssMb(pid);
  process.stderr.write(`idle: p50 ${pct(idle, 50)} ms, p99 ${pct(idle, 99)} ms\n`);

  const results = [];
  for (const b of kinds) {
    let stop = false;
    let rssHigh = 0;
    const sampler = setInterval(() => {
      rssHigh = Math.max(rssHigh, rssMb(pid).now);
    }, 50);
    const answers: Awaited<ReturnType<typeof send>>[] = [];
    const attacker = async () => {
      do answers.push(await send(b));
      while (!stop && !b.once);
    };
    const attack = Promise.all(Array.from({ length: attackers }, attacker));
    let attackDone = false;
    void attack.then(() => {
      attackDone = true;
    });
    const during = await gatewaySample(calls, b.once ? () => attackDone : undefined);
    stop = true;
    await attack;
    clearInterval(sampler);
    const statuses: Record<string, number> = {};
    for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    const times = answers.map((a) => a.ms);
    const figure = {
      kind: b.name,
      what: b.what,
      body_bytes: typeof b.body === 'string' ? Buffer.byteLength(b.body) : b.body.length,
      requests: answers.length,
      statuses,
      reason: answers.find((a) => a.reason)?.reason ?? null,
      answer_ms: { p50: pct(times, 50), max: pct(times, 100) },
      all_within_2s: times.every((t) => t < 2_000),
      rss_mb_highest_sampled: rssHigh,
      gateway_ms_during: { p50: pct(during, 50), p99: pct(during, 99), calls: during.length },
      gateway_p99_minus_idle_ms: Math.round((pct(during, 99) - pct(idle, 99)) * 100) / 100,
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
        node: process.version,
        load_average: loadAverage(),
        gateway_ms_idle: { p50: pct(idle, 50), p99: pct(idle, 99), calls: idle.length },
        server_rss_mb: { idle: rssIdle.now, peak: rss.peak },
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
