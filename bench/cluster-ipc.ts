/**
 * What the shared rate limit of `serve --workers N` (no Redis) costs per request: a worker's `take`
 * over cluster IPC to the primary's GCRA against the in-process one. Prints one JSON.
 *
 *   npx tsx bench/cluster-ipc.ts --requests 20000 --concurrency 1,64
 */
import cluster from 'node:cluster';
import { performance } from 'node:perf_hooks';
import { isEvalgateMessage, type ToPrimary } from '../src/cluster/ipc.js';
import { processClusterLink } from '../src/cluster/link.js';
import { answerRateLimit } from '../src/cluster/primary.js';
import { createMemoryLimiter } from '../src/ratelimit/memory.js';
import { arg } from './lib.js';

const params = { rate: 1e9, periodMs: 60_000, burst: 1e9 };
const requests = Number(arg('requests', '20000'));
const concurrencies = arg('concurrency', '1,64').split(',').map(Number);

async function measure(take: (key: string) => Promise<unknown>, concurrency: number) {
  const latencies: number[] = [];
  let left = requests;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      while (left-- > 0) {
        const t = performance.now();
        await take(`key-${i % 8}`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const total = performance.now() - t0;
  latencies.sort((a, b) => a - b);
  const us = (ms: number) => Math.round(ms * 10_000) / 10;
  return {
    p50_us: us(latencies[Math.floor(latencies.length / 2)]!),
    p99_us: us(latencies[Math.floor(latencies.length * 0.99)]!),
    takes_per_s: Math.round((latencies.length / total) * 1000),
  };
}

if (cluster.isPrimary) {
  const limiter = createMemoryLimiter(params);
  const worker = cluster.fork();
  worker.on('message', (message: unknown) => {
    if (isEvalgateMessage<ToPrimary>(message) && message.evalgate === 'rl-take') {
      answerRateLimit(limiter, worker, message);
    } else if (typeof message === 'string') {
      process.stdout.write(`${message}\n`);
      worker.kill();
      process.exit(0);
    }
  });
} else {
  const ipc = processClusterLink().rateLimiter();
  const memory = createMemoryLimiter(params);
  const out: Record<string, unknown> = {};
  for (const c of concurrencies) {
    await measure((k) => ipc.take(k), c); // warm-up
    out[`c${c}`] = {
      memory: await measure((k) => memory.take(k), c),
      ipc: await measure((k) => ipc.take(k), c),
    };
  }
  process.send?.(JSON.stringify(out, null, 2));
}
