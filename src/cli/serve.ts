import type { Command } from 'commander';
import { createApp } from '../app.js';
import { openDatabase } from '../db/database.js';
import { bootstrapIfEmpty } from '../tenancy/bootstrap.js';
import { configFrom } from './context.js';

export function registerServeCommands(program: Command): void {
  program
    .command('serve')
    .description('serve the HTTP API (applies migrations first)')
    .option('--host <host>', 'address to listen on (EVALGATE_HOST)', undefined)
    .option('--port <port>', 'port to listen on (EVALGATE_PORT)', undefined)
    .action(async (opts: { host?: string; port?: string }, command: Command) => {
      const config = configFrom(command, { host: opts.host, port: opts.port });
      const app = await createApp(config);
      const key = await bootstrapIfEmpty(app.deps.db, app.deps.pepper);
      await app.server.listen({ host: config.host, port: config.port });
      const address = app.server.server.address();
      const port = typeof address === 'object' && address ? address.port : config.port;
      const db = config.databaseUrl.startsWith('sqlite:') ? config.databaseUrl : 'postgres';
      // One write, so that whoever reads the address also gets the key.
      let banner = `Evalgate listening on http://${config.host}:${port} (database: ${db})\n`;
      if (key) {
        banner +=
          `Created project 'default' with an API key. It is shown only once; keep it:\n\n  ${key}\n\n` +
          `Try: curl -H 'Authorization: Bearer ${key}' http://${config.host}:${port}/v1/evaluators\n`;
      }
      process.stdout.write(banner);
      let stopping = false;
      const stop = async () => {
        if (stopping) return;
        stopping = true;
        await app.close();
        process.exit(0);
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });

  program
    .command('migrate')
    .description('apply database migrations and exit')
    .action(async (_opts: unknown, command: Command) => {
      const config = configFrom(command);
      const database = await openDatabase(config.databaseUrl);
      try {
        const applied = await database.migrate();
        process.stdout.write(
          applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date\n',
        );
      } finally {
        await database.close();
      }
    });
}
