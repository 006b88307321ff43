import fs from 'node:fs';
import type { Command } from 'commander';
import { createKey, listKeys, revokeKey, validatePermissions } from '../auth/key-store.js';
import { resolveConfig } from '../client/config.js';
import type { Config } from '../config.js';
import { issueLocalSignInLink, LOCAL_LINK_TTL_MS, localSignInEnabled } from '../dashboard/local-sign-in.js';
import { listeningUrl } from '../dashboard/public-url.js';
import { ApiError } from '../shared/errors.js';
import { runningServer, sqliteFileOf } from '../shared/server-file.js';
import { createProject, ensureProject, findProject, listProjects } from '../tenancy/projects.js';
import { budgetsOf, describeBudget, parseBudget, registerBudgetCommands } from './budgets.js';
import { configFrom, withDatabase } from './context.js';

function print(line: string): void {
  process.stdout.write(`${line}\n`);
}

function cliError(err: unknown): never {
  if (err instanceof ApiError) {
    const extra = err.issues.map((i) => i.msg).join('; ');
    throw new Error(extra || err.message);
  }
  throw err;
}

/**
 * Where the CLI reaches the server (`--base-url`, EVALGATE_BASE_URL, the config file's endpoint), else where
 * the server serving from this data directory said it listens, else the address this configuration would
 * listen on: the link is opened where the server answers.
 */
function dashboardBase(command: Command, config: Config): string {
  const globals = command.optsWithGlobals<{ baseUrl?: string }>();
  try {
    // The key is not needed to know where the server is; a placeholder keeps a keyless setup working.
    const client = resolveConfig({ ...(globals.baseUrl ? { baseURL: globals.baseUrl } : {}), apiKey: '-' });
    if (client.sources.baseURL !== 'default') return client.baseURL;
  } catch (err) {
    // A wrong --base-url is the user's to fix; a broken config file does not stop a local link.
    if (globals.baseUrl || process.env.EVALGATE_BASE_URL) throw err;
  }
  return runningServer(config.dataDir)?.url ?? listeningUrl(config.host, config.port);
}

/**
 * A sign-in link only means something in the database a server already uses: run elsewhere, the command
 * says where it looked instead of creating (and migrating) an empty one the server never reads.
 */
function requireServerDatabase(config: Config): void {
  const file = sqliteFileOf(config.databaseUrl);
  if (file === null || fs.existsSync(file)) return;
  throw new Error(
    `no Evalgate database at ${file} (data directory ${config.dataDir}): run this command in the ` +
      'directory `evalgate serve` runs in, or point --data-dir / EVALGATE_DATA_DIR (or ' +
      "EVALGATE_DATABASE_URL) at the server's; nothing was created",
  );
}

export function registerAdminCommands(program: Command): void {
  program
    .command('dashboard')
    .description("the dashboard's local sign-in")
    .command('link')
    .description("mint a new one-time sign-in link in the server's database (no identity providers)")
    .option(
      '--url <url>',
      'the address users reach the server at (default EVALGATE_PUBLIC_URL, else the --base-url / EVALGATE_BASE_URL of the API commands, else host:port)',
    )
    .action(async (opts: { url?: string }, command: Command) => {
      const config = configFrom(command);
      if (!localSignInEnabled(config)) {
        throw new Error(
          'identity providers are configured (EVALGATE_OIDC_PROVIDERS): sign in through them; ' +
            'one-time links exist only without providers',
        );
      }
      requireServerDatabase(config);
      const base = (opts.url ?? config.dashboard.publicUrl ?? dashboardBase(command, config)).replace(
        /\/+$/,
        '',
      );
      await withDatabase(config, async ({ db }) => {
        const link = await issueLocalSignInLink(db, base);
        print(
          `Sign in with this one-time link (valid ${LOCAL_LINK_TTL_MS / 60_000} minutes, once):\n\n  ${link}`,
        );
      });
    });

  const projects = program.command('projects').description('manage projects');
  projects
    .command('create <name>')
    .description('create a project (and its organization when missing)')
    .option('--org <org>', 'organization name', 'default')
    .action(async (name: string, opts: { org: string }, command: Command) => {
      await withDatabase(configFrom(command), async ({ db }) => {
        const project = await createProject(db, name, opts.org).catch(cliError);
        print(`${project.id}\t${project.name}\t${project.organization}`);
      });
    });
  projects
    .command('list')
    .description('list projects')
    .action(async (_opts: unknown, command: Command) => {
      await withDatabase(configFrom(command), async ({ db }) => {
        for (const p of await listProjects(db))
          print(`${p.id}\t${p.name}\t${p.organization}\t${p.created_at}`);
      });
    });

  const keys = program.command('keys').description('manage API keys');
  keys
    .command('create')
    .description('create an API key; prints the key alone on the last line')
    .requiredOption('--project <name>', 'project name (created when missing)')
    .option('--name <name>', 'a descriptive name for the key', 'cli')
    .option('--permissions <list>', 'comma-separated <resource>:<action> permissions', '*')
    .option('--org <org>', 'organization of a project created here', 'default')
    .option('--cache-ttl <seconds>', "cache the key's gateway calls for this long (1..2592000)")
    .option(
      '--budget <budget>',
      'what calls through the key may spend: <usd>[/day|/month|/total], e.g. 5/day',
    )
    .action(
      async (
        opts: {
          project: string;
          name: string;
          permissions: string;
          org: string;
          cacheTtl?: string;
          budget?: string;
        },
        command: Command,
      ) => {
        const budget = opts.budget === undefined ? null : parseBudget(opts.budget);
        const permissions = opts.permissions
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean);
        try {
          validatePermissions(permissions, ['permissions']);
        } catch (err) {
          cliError(err);
        }
        const cacheTtl = opts.cacheTtl === undefined ? null : Number(opts.cacheTtl);
        if (cacheTtl !== null && !(Number.isInteger(cacheTtl) && cacheTtl >= 1 && cacheTtl <= 2_592_000)) {
          cliError(new Error(`--cache-ttl must be whole seconds from 1 to 2592000, got "${opts.cacheTtl}"`));
        }
        await withDatabase(configFrom(command), async (database, pepper) => {
          const { db } = database;
          const project = await ensureProject(db, opts.project, opts.org);
          const { view, key } = await createKey(db, pepper, {
            projectId: project.id,
            name: opts.name,
            permissions,
            cacheTtlSeconds: cacheTtl,
          });
          if (budget) await budgetsOf(database).set(project.id, 'key', view.id, budget);
          print(
            `Created key ${view.id} (${view.name}) in project ${project.name} with permissions ${permissions.join(',')}` +
              (budget ? ` and a budget of ${budget.limit_usd} USD per ${budget.period}` : ''),
          );
          print(key);
        });
      },
    );
  keys
    .command('list')
    .description('list the API keys of a project')
    .requiredOption('--project <name>', 'project name')
    .action(async (opts: { project: string }, command: Command) => {
      await withDatabase(configFrom(command), async (database) => {
        const project = await findProject(database.db, opts.project);
        if (!project) throw new Error(`project '${opts.project}' not found`);
        const { data } = await listKeys(database.db, project.id, { limit: 1_000_000, offset: 0 });
        const budgets = await budgetsOf(database).keys(
          project.id,
          data.map((k) => k.id),
        );
        for (const k of data) {
          const state = k.revoked_at ? `revoked ${k.revoked_at}` : 'active';
          const budget = describeBudget(budgets.get(k.id) ?? { budget: null, spend: null });
          print(`${k.id}\t${k.name}\t${k.prefix}…\t${k.permissions.join(',')}\t${state}\t${budget}`);
        }
      });
    });
  keys
    .command('revoke <keyId>')
    .description('revoke an API key')
    .action(async (keyId: string, _opts: unknown, command: Command) => {
      await withDatabase(configFrom(command), async ({ db }) => {
        const view = await revokeKey(db, keyId).catch(cliError);
        print(`Revoked ${view.id} (${view.name})`);
      });
    });
  registerBudgetCommands(keys, projects);
}
