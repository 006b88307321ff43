import type { Command } from 'commander';
import { grants } from '../auth/permissions.js';
import { createWorker } from '../executor/worker.js';
import { startMetricsServer } from '../observability/server.js';
import { createServices } from '../services.js';
import { ApiError } from '../shared/errors.js';
import { wholeNumber } from './client-context.js';
import { configFrom, onStop, statusLine } from './context.js';

interface WorkerFlags {
  environment: string[];
  concurrency?: string;
  metricsPort?: string;
  metricsHost: string;
}

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('execute evaluation runs of an environment (EVALGATE_EXECUTOR: inline or bullmq)')
    .option(
      '--environment <name>',
      'environment whose runs to execute (repeatable; default: main)',
      (value: string, all: string[]) => [
        ...all,
        ...value
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean),
      ],
      [],
    )
    .option('--concurrency <n>', 'chunks executed at once (EVALGATE_WORKER_CONCURRENCY)')
    .option('--metrics-port <port>', 'serve GET /metrics (Prometheus) on this port; keys need metrics:read')
    .option('--metrics-host <host>', 'address of the metrics server', '127.0.0.1')
    .action(async (opts: WorkerFlags, command: Command) => {
      const config = configFrom(command);
      const concurrency =
        opts.concurrency === undefined ? undefined : wholeNumber('--concurrency')(opts.concurrency);
      const environments = opts.environment.length ? opts.environment : ['main'];
      const services = await createServices(config);
      const worker = await createWorker(services, {
        environments,
        ...(concurrency !== undefined ? { concurrency } : {}),
      });
      await worker.start();
      let metricsUrl = '';
      const metricsPort = opts.metricsPort === undefined ? undefined : Number(opts.metricsPort);
      const metricsServer =
        metricsPort === undefined
          ? null
          : await startMetricsServer({
              host: opts.metricsHost,
              port: metricsPort,
              metrics: services.metrics,
              // The same keys as the API: a key with metrics:read.
              authorize: async (header) => {
                try {
                  const principal = await services.auth.authenticate(header);
                  return grants(principal.permissions, 'metrics:read') ? 'ok' : 'forbidden';
                } catch (err) {
                  if (err instanceof ApiError && err.code === 'invalid_api_key') return 'unauthorized';
                  throw err;
                }
              },
            });
      if (metricsServer) metricsUrl = `, metrics on ${metricsServer.url}/metrics`;
      statusLine(
        `Evalgate worker ${services.workerId} executing environment(s) ${environments.join(', ')} ` +
          `(executor: ${config.runs.executor}, concurrency: ${concurrency ?? config.runs.workerConcurrency}${metricsUrl})`,
        { event: 'worker_started', worker_id: services.workerId, environments },
      );
      onStop(async () => {
        await metricsServer?.close();
        await worker.close();
        await services.close();
      });
    });
}
