import cluster, { type Worker } from 'node:cluster';
import fs from 'node:fs';
import os from 'node:os';
import type { Config } from '../config.js';
import { ConfigError } from '../config.js';
import { listeningUrl } from '../dashboard/public-url.js';
import { perMinuteParams, type RateLimiter } from '../ratelimit/limiter.js';
import { createMemoryLimiter } from '../ratelimit/memory.js';
import { createServices } from '../services.js';
import { forgetServer, recordServer } from '../shared/server-file.js';
import { bootstrapIfEmpty } from '../tenancy/bootstrap.js';
import { serveBanner } from './banner.js';
import { isEvalgateMessage, type ToPrimary, type ToWorker, WORKER_INDEX_ENV } from './ipc.js';

/** The CPUs this process may use: the cgroup quota (cgroup v2 `cpu.max`) when lower than the cores. */
export function availableCpus(cpuMaxPath = '/sys/fs/cgroup/cpu.max'): number {
  const cores = os.availableParallelism();
  try {
    const [quota, period] = fs.readFileSync(cpuMaxPath, 'utf8').trim().split(/\s+/);
    if (quota && quota !== 'max' && period) {
      const cpus = Math.floor(Number(quota) / Number(period));
      if (Number.isFinite(cpus)) return Math.max(1, Math.min(cores, cpus));
    }
  } catch {
    // No cgroup v2 file: the cores are the answer.
  }
  return cores;
}

/** `--workers` / `EVALGATE_WORKERS`: a positive count or `auto`; absent is 1 (one process, no cluster). */
export function workerCount(value: string | undefined): number {
  if (value === undefined || value === '') return 1;
  if (value === 'auto') return availableCpus();
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1024) {
    throw new ConfigError(`--workers / EVALGATE_WORKERS must be a count from 1 or auto, got "${value}"`);
  }
  return Number(value);
}

/** Answers a worker's `rl-take` from the primary's limiter (the budget every worker shares). */
export function answerRateLimit(
  limiter: RateLimiter,
  worker: Worker,
  message: Extract<ToPrimary, { evalgate: 'rl-take' }>,
): void {
  const { id } = message;
  void limiter.take(message.key).then((decision) => {
    if (worker.isConnected()) worker.send({ evalgate: 'rl-decision', id, decision } satisfies ToWorker);
  });
}

/** A worker that dies within this time of its start counts as a crash loop: its restart waits longer. */
const HEALTHY_AFTER_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;

/**
 * The primary of `evalgate serve --workers N`: migrates and creates the first project (printing its key
 * once) before forking, then forks N workers on one port and serves nothing itself. It holds the
 * shared rate limits (no Redis), relays key revocations, restarts a worker that dies (backing off when
 * one keeps dying at start) and on SIGTERM/SIGINT stops every worker gracefully and exits when all did.
 */
export async function runPrimary(config: Config, count: number, json = false): Promise<void> {
  // Migrations, secrets (pepper, secret key) and the first key are made once, here, before any worker.
  const services = await createServices(config);
  const key = await bootstrapIfEmpty(services.db, services.pepper);
  const limiter = createMemoryLimiter(perMinuteParams(config.rateLimit));
  const slots: { worker: Worker | null; startedAt: number; failures: number }[] = [];
  let stopping = false;
  let printed = false;
  const listening = new Set<number>();

  const onMessage = (worker: Worker, message: unknown) => {
    if (!isEvalgateMessage<ToPrimary>(message)) return;
    if (message.evalgate === 'rl-take') answerRateLimit(limiter, worker, message);
    else if (message.evalgate === 'forget-key') {
      for (const slot of slots) {
        if (slot.worker && slot.worker !== worker && slot.worker.isConnected()) {
          slot.worker.send({ evalgate: 'forget-key', keyId: message.keyId } satisfies ToWorker);
        }
      }
    } else if (message.evalgate === 'listening') {
      listening.add(worker.id);
      // Started after the stop was asked for: it stops now.
      if (stopping) worker.send({ evalgate: 'stop' } satisfies ToWorker);
      if (!printed && listening.size >= count) {
        printed = true;
        void printBanner(message.port);
      }
    }
  };

  const printBanner = async (port: number) => {
    const banner = await serveBanner(services, port, key, { workers: count, credentialFiles: json });
    // Where the workers answer, for the CLI's local commands run beside them (`dashboard link`): recorded
    // before the banner says they listen.
    recordServer(config.dataDir, listeningUrl(config.host, port));
    if (json) services.logger.info({ event: 'listening', port, banner }, 'Evalgate listening');
    else process.stdout.write(banner);
    // The primary serves nothing: its own database connection and writer are not needed any more.
    await services.close();
  };

  const fork = (index: number) => {
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index) });
    const slot = slots[index] ?? { worker: null, startedAt: 0, failures: 0 };
    slot.worker = worker;
    slot.startedAt = Date.now();
    slots[index] = slot;
    worker.on('message', (message: unknown) => onMessage(worker, message));
  };

  cluster.on('exit', (worker, code, signal) => {
    const index = slots.findIndex((slot) => slot.worker === worker);
    if (index < 0) return;
    const slot = slots[index]!;
    slot.worker = null;
    listening.delete(worker.id);
    if (stopping) {
      if (slots.every((s) => s.worker === null)) {
        void limiter.close().then(() => process.exit(0));
      }
      return;
    }
    slot.failures = Date.now() - slot.startedAt < HEALTHY_AFTER_MS ? slot.failures + 1 : 0;
    const delay = slot.failures === 0 ? 0 : Math.min(MAX_BACKOFF_MS, 250 * 2 ** (slot.failures - 1));
    process.stderr.write(
      `evalgate: worker ${worker.process.pid} exited (${signal ?? `code ${code}`}); restarting in ${delay} ms\n`,
    );
    setTimeout(() => {
      if (!stopping) fork(index);
    }, delay);
  });

  const stop = () => {
    if (stopping) return;
    stopping = true;
    forgetServer(config.dataDir);
    const alive = slots.filter((slot) => slot.worker !== null);
    if (alive.length === 0) process.exit(0);
    for (const { worker } of alive) {
      if (!worker) continue;
      // A worker still starting may not listen to messages yet (they would be lost): SIGTERM, which it
      // either handles (stops once started) or dies of (it serves nothing yet).
      if (listening.has(worker.id) && worker.isConnected())
        worker.send({ evalgate: 'stop' } satisfies ToWorker);
      else worker.process.kill('SIGTERM');
    }
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  for (let i = 0; i < count; i++) fork(i);
}
