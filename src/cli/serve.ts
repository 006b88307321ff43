import cluster from 'node:cluster';
import type { Command } from 'commander';
import { createApp } from '../app.js';
import { serveBanner } from '../cluster/banner.js';
import { listeningUrl } from '../dashboard/public-url.js';
import { openDatabase } from '../db/database.js';
import { createWorker, type Worker } from '../executor/worker.js';
import { createServices } from '../services.js';
import { forgetServer, recordServer } from '../shared/server-file.js';
import { bootstrapIfEmpty } from '../tenancy/bootstrap.js';
import { usage } from './client-context.js';
import { configFrom, onStop, statusLine } from './context.js';

/** A start/stop line: plain text beside the banner, a log line in `--log-format json`. */
function announce(json: boolean, logger: { info(message: string): void }, message: string): void {
  if (json) logger.info(message);
  else process.stdout.write(`${message}\n`);
}

export function registerServeCommands(program: Command): void {
  program
    .command('serve')
    .description('serve the HTTP API (applies migrations first); in the inline mode it also executes runs')
    .option('--host <host>', 'address to listen on (EVALGATE_HOST)', undefined)
    .option('--port <port>', 'port to listen on (EVALGATE_PORT)', undefined)
    .option('--workers <n>', 'server processes on one port, or auto (EVALGATE_WORKERS; default 1)')
    .option(
      '--log-format <format>',
      'human: a start-up banner, then JSON logs; json: JSON lines only (EVALGATE_LOG_FORMAT)',
      process.env.EVALGATE_LOG_FORMAT ?? 'human',
    )
    .action(
      async (
        opts: { host?: string; port?: string; workers?: string; logFormat: string },
        command: Command,
      ) => {
        if (opts.logFormat !== 'human' && opts.logFormat !== 'json') {
          throw usage(`--log-format (EVALGATE_LOG_FORMAT) takes human or json, got "${opts.logFormat}"`);
        }
        const json = opts.logFormat === 'json';
        const config = configFrom(command, { host: opts.host, port: opts.port });
        // N processes on one port (src/cluster/): the primary forks and supervises, the workers serve.
        if (cluster.isWorker) {
          const { runClusterWorker } = await import('../cluster/worker.js');
          return runClusterWorker(config);
        }
        const { workerCount } = await import('../cluster/primary.js');
        const workers = workerCount(opts.workers ?? process.env.EVALGATE_WORKERS);
        if (workers > 1) {
          const { runPrimary } = await import('../cluster/primary.js');
          return runPrimary(config, workers, json);
        }
        const services = await createServices(config);
        const app = await createApp(services);
        const key = await bootstrapIfEmpty(services.db, services.pepper);
        // Fastify's own "Server listening" lines would come before the banner: the banner says it instead.
        const level = services.logger.level;
        if (!json && level !== 'silent') services.logger.level = 'warn';
        try {
          await app.server.listen({ host: config.host, port: config.port });
        } finally {
          services.logger.level = level;
        }
        // The embedded mode executes runs here; with BullMQ, `evalgate worker` processes do.
        let worker: Worker | null = null;
        if (config.runs.executor === 'inline' && config.runs.serveExecutes) {
          worker = await createWorker(services);
          await worker.start();
        }
        const address = app.server.server.address();
        const port = typeof address === 'object' && address ? address.port : config.port;
        // One write, so that whoever reads the address also gets the key. In JSON, one log line says it,
        // and the key and the sign-in link are in files of the data directory instead.
        const banner = await serveBanner(services, port, key, { credentialFiles: json });
        // Where this server answers, for the CLI's local commands run beside it (`dashboard link`):
        // recorded before the banner says it listens.
        recordServer(config.dataDir, listeningUrl(config.host, port));
        if (json) services.logger.info({ event: 'listening', port, banner }, 'Evalgate listening');
        else process.stdout.write(banner);
        onStop(async (signal) => {
          forgetServer(config.dataDir);
          announce(json, services.logger, `Evalgate stopping (${signal}): finishing requests in flight`);
          await app.close();
          await worker?.close();
          announce(json, services.logger, 'Evalgate stopped');
          await services.close();
        });
      },
    );

  program
    .command('migrate')
    .description('apply database migrations and exit')
    .action(async (_opts: unknown, command: Command) => {
      const config = configFrom(command);
      const database = await openDatabase(config.databaseUrl);
      try {
        const applied = await database.migrate();
        statusLine(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date', {
          event: 'migrated',
          applied,
        });
      } finally {
        await database.close();
      }
    });
}
