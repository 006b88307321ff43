#!/usr/bin/env node
import { Command } from 'commander';
import { registerAdminCommands } from './admin.js';
import { registerServeCommands } from './serve.js';
import { registerWorkerCommand } from './worker.js';

const program = new Command()
  .name('evalgate')
  .description('Evalgate: an OpenAI-compatible inference gateway with evaluators and evaluation runs')
  .option('--data-dir <dir>', 'directory for the embedded database and secrets (EVALGATE_DATA_DIR)')
  .option('--database-url <url>', 'sqlite:<file> or postgres://… (EVALGATE_DATABASE_URL)')
  .showHelpAfterError();

registerServeCommands(program);
registerWorkerCommand(program);
registerAdminCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`evalgate: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
