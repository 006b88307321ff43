/**
 * `npm run fuzz [-- --seed N --requests N --seconds N --concurrency N]`: malformed requests over every
 * route of the served `/openapi.json` (the generator of test/http/fuzz.test.ts, test/helpers/fuzz-requests.ts)
 * against a server this process starts (SQLite, a mock upstream for the chat route). Prints JSON: counts
 * by status, 5xx (must be 0), responses outside the contract's shapes (must be 0), the RSS of the process
 * (server and fuzzer together) at start, after a warm-up, and at the end after a GC. Exits 1 when a bound fails.
 */

import { startMockUpstream } from '../test/fixtures/mock-upstream.js';
import { createFuzzer, type FuzzRequest, isErrorShape } from '../test/helpers/fuzz-requests.js';
import { startHarness } from '../test/helpers/harness.js';
import { documentedRoutes } from '../test/helpers/routes.js';
import { arg } from './lib.js';

process.env.EVALGATE_TEST_DB = 'sqlite';
const seed = Number(arg('seed', '1'));
const total = Number(arg('requests', '100000'));
const seconds = Number(arg('seconds', '900'));
const concurrency = Number(arg('concurrency', '8'));
const WARMUP = Math.min(10_000, Math.floor(total / 10));

const gc = (globalThis as { gc?: () => void }).gc;
const mb = (bytes: number) => Math.round(bytes / 1024 / 102.4) / 10;
async function settledRss(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((r) => setTimeout(r, 500));
  }
  return mb(process.memoryUsage().rss);
}

const mock = await startMockUpstream();
const h = await startHarness({
  env: {
    OPENAI_API_KEY: 'sk-fuzz',
    OPENAI_BASE_URL: mock.baseUrl,
    EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000',
    EVALGATE_RATE_LIMIT_BURST: '10000000',
  },
});
const routes = await documentedRoutes(h);
await h.call('POST', '/v1/containers', { body: { label: 'x' } });
await h.call('POST', '/v1/evaluators', { body: { type: 'judge', model: 'm', prompt: 'p', name: 'x' } });
const other = (await h.key(['*'], 'fuzz-other')).key;
const foreignIds = [
  (await h.call('POST', '/v1/containers', { key: other, body: { label: 'x' } })).body.id,
  (
    await h.call('POST', '/v1/evaluators', {
      key: other,
      body: { type: 'judge', model: 'm', prompt: 'p', name: 'x' },
    })
  ).body.id,
];
const keys = [
  h.admin.key,
  null,
  (await h.key(['evaluators:read', 'containers:read'])).key,
  `eg_${'Z'.repeat(43)}`,
  'x',
];
const documented = new Set(routes.map((r) => `${r.method} ${r.template}`));
const { generate } = createFuzzer(seed);

const rssStart = await settledRss();
const heapStart = mb(process.memoryUsage().heapUsed);
const statuses: Record<string, number> = {};
const samples: string[] = [];
let sent = 0;
let serverErrors = 0;
let outsideContract = 0;
let clientErrors = 0;
let rssWarm = 0;
const deadline = Date.now() + seconds * 1000;
const started = Date.now();

function note(list: string, r: FuzzRequest, detail: string) {
  if (samples.length < 20)
    samples.push(`${list}: ${r.method} ${r.path.slice(0, 100)} → ${detail.slice(0, 300)}`);
}

async function one(i: number) {
  const r = generate(routes[i % routes.length]!, documented, keys, i, foreignIds);
  try {
    // The contract check of the harness runs on documented requests; its failure is counted below.
    const res = await h.call(r.method, r.path, r);
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    const json = (res.headers.get('content-type') ?? '').includes('application/json');
    if (res.status >= 500) {
      serverErrors++;
      note('5xx', r, `${res.status} ${res.text}`);
    } else if (res.status >= 400 && (!json || !isErrorShape(res.status, res.body, r.path, r.method))) {
      outsideContract++;
      note('shape', r, `${res.status} ${res.text}`);
    }
  } catch (err) {
    const message = (err as Error).message;
    if (/fetch failed|ECONNRESET|other side closed/.test(message)) {
      clientErrors++;
      note('transport', r, message);
    } else {
      outsideContract++;
      note('contract', r, message);
    }
  }
}

async function worker() {
  while (sent < total && Date.now() < deadline) {
    const i = sent++;
    await one(i);
    if (i === WARMUP) rssWarm = await settledRss();
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
const elapsed = (Date.now() - started) / 1000;
const rssEnd = await settledRss();
await h.close();
await mock.close();

const baseline = rssWarm || rssStart;
const result = {
  seed,
  requests: sent,
  seconds: Math.round(elapsed * 10) / 10,
  requests_per_second: Math.round(sent / elapsed),
  statuses,
  server_errors_5xx: serverErrors,
  outside_contract: outsideContract,
  transport_errors: clientErrors,
  rss_mb: { start: rssStart, after_warmup: rssWarm, end_after_gc: rssEnd, gc: gc !== undefined },
  heap_used_mb: { start: heapStart, end_after_gc: mb(process.memoryUsage().heapUsed) },
  rss_within_20_percent_of_warm: rssEnd <= baseline * 1.2,
  samples,
};
console.log(JSON.stringify(result, null, 2));
process.exit(serverErrors === 0 && outsideContract === 0 && result.rss_within_20_percent_of_warm ? 0 : 1);
