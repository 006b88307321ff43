import type { Command } from 'commander';
import { type Config, type ConfigFlags, loadConfig } from '../config.js';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { loadOrCreateSecret } from '../shared/secrets.js';

export function configFrom(command: Command, extra: ConfigFlags = {}): Config {
  const globals = command.optsWithGlobals<{ dataDir?: string; databaseUrl?: string }>();
  return loadConfig(process.env, { dataDir: globals.dataDir, databaseUrl: globals.databaseUrl, ...extra });
}

/** Opens and migrates the database for an admin command, and closes it afterwards. */
export async function withDatabase<T>(
  config: Config,
  work: (database: DatabaseHandle, pepper: string) => Promise<T>,
): Promise<T> {
  const database = await openDatabase(config.databaseUrl);
  try {
    await database.migrate();
    const pepper = config.keyPepper ?? loadOrCreateSecret(config.dataDir, 'key-pepper');
    return await work(database, pepper);
  } finally {
    await database.close();
  }
}

/** Runs `stop` once on SIGINT or SIGTERM (told which), then exits. */
export function onStop(stop: (signal: NodeJS.Signals) => Promise<void>): void {
  let stopping = false;
  const handler = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    try {
      await stop(signal);
    } finally {
      process.exit(0);
    }
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/**
 * A long-running command's own status line (`worker` started, `migrate` done): plain text, or with
 * EVALGATE_LOG_FORMAT=json (as in the container image) a JSON log line like the logger's, so that a
 * log collector reads every line of a container the same way.
 */
export function statusLine(message: string, fields: Record<string, unknown> = {}): void {
  if (process.env.EVALGATE_LOG_FORMAT === 'json') {
    process.stdout.write(
      `${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, ...fields, msg: message })}\n`,
    );
  } else {
    process.stdout.write(`${message}\n`);
  }
}
