#!/usr/bin/env node
import { Command } from 'commander';
import { registerCatalogCommands } from './catalog.js';
import { registerCiCommand } from './ci/command.js';
import { describeError } from './client-context.js';
import { registerDatasetCommands } from './datasets.js';
import { registerEvaluatorCommands } from './evaluators.js';
import { registerGuardCommands } from './guards.js';
import { registerMcpCommand } from './mcp.js';
import { registerModelCommands } from './models.js';
import { registerMonitorCommands } from './monitors.js';
import { registerPromptCommands } from './prompts.js';
import { registerQueueCommands } from './queues.js';
import { registerReviewCommand } from './review.js';
import { registerAgreementCommand } from './review-agreement.js';
import { registerRunCommands } from './runs.js';
import { registerSessionCommands } from './sessions.js';
import { registerTraceCommands } from './traces.js';

const program = new Command()
  .name('evalgate')
  .description('Evalgate: an OpenAI-compatible inference gateway with evaluators and evaluation runs')
  .option('--data-dir <dir>', 'directory for the embedded database and secrets (EVALGATE_DATA_DIR)')
  .option('--database-url <url>', 'sqlite:<file> or postgres://… (EVALGATE_DATABASE_URL)')
  .option('--base-url <url>', 'server of the API commands (EVALGATE_BASE_URL, else the config file)')
  .option('--api-key <key>', 'API key of the API commands (EVALGATE_API_KEY, else the config file)')
  .showHelpAfterError();

// The API commands talk to a server through the client; the server and admin commands load the server
// itself (database drivers, Fastify, …), which costs a second and tens of MB: they are loaded only when
// the command line may need them.
const API_COMMANDS = ['runs', 'evaluators', 'datasets', 'containers', 'logs', 'models', 'monitors', 'traces'];
API_COMMANDS.push('queues', 'review', 'sessions', 'ci', 'prompts', 'guards', 'mcp');
const GLOBAL_OPTIONS_WITH_VALUE = ['--data-dir', '--database-url', '--base-url', '--api-key'];

function commandName(args: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (GLOBAL_OPTIONS_WITH_VALUE.includes(arg)) i += 1;
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

/** The commands that load the server, by the module that defines them (in the order help lists them). */
const SERVER_MODULES = {
  serve: async () => (await import('./serve.js')).registerServeCommands,
  worker: async () => (await import('./worker.js')).registerWorkerCommand,
  sandboxRunner: async () => (await import('./sandbox-runner.js')).registerSandboxRunnerCommand,
  admin: async () => (await import('./admin.js')).registerAdminCommands,
};
const SERVER_COMMANDS = new Map<string, keyof typeof SERVER_MODULES>([
  ['serve', 'serve'],
  ['migrate', 'serve'],
  ['worker', 'worker'],
  ['sandbox-runner', 'sandboxRunner'],
  ['dashboard', 'admin'],
  ['projects', 'admin'],
  ['keys', 'admin'],
]);

const name = commandName(process.argv.slice(2));
if (name === undefined || !API_COMMANDS.includes(name)) {
  // A server command loads only its own module (`serve` need not load the sandbox runner's); help, or a
  // name that is no command (answered with suggestions), loads them all.
  const known = name === undefined ? undefined : SERVER_COMMANDS.get(name);
  const modules = known ? [SERVER_MODULES[known]] : Object.values(SERVER_MODULES);
  for (const register of await Promise.all(modules.map((load) => load()))) register(program);
}
registerRunCommands(program);
registerEvaluatorCommands(program);
registerMonitorCommands(program);
registerDatasetCommands(program);
registerCatalogCommands(program);
registerModelCommands(program);
registerTraceCommands(program);
registerQueueCommands(program);
registerReviewCommand(program);
registerAgreementCommand(program);
registerSessionCommands(program);
registerCiCommand(program);
registerPromptCommands(program);
registerGuardCommands(program);
registerMcpCommand(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  const { exitCode, lines } = describeError(err);
  const [first, ...rest] = lines;
  process.stderr.write(`evalgate: ${first}\n${rest.map((line) => `${line}\n`).join('')}`);
  process.exit(exitCode);
});
