import fs from 'node:fs';
import path from 'node:path';
import { writeCredentialFile } from './credential-files.js';

/**
 * Where a running `evalgate serve` listens, recorded in its data directory so that the CLI's local
 * commands run beside it (`evalgate dashboard link`) name the address it really answers at, whatever
 * port it was given.
 */

const FILE = 'server.json';

export interface ServerRecord {
  url: string;
  pid: number;
  started_at: string;
}

/** Records the serving process's address (replaced atomically, readable by its owner only). */
export function recordServer(dataDir: string, url: string): void {
  const record: ServerRecord = { url, pid: process.pid, started_at: new Date().toISOString() };
  writeCredentialFile(dataDir, FILE, JSON.stringify(record));
}

/** Forgets the record at a clean stop, if it is still this process's. */
export function forgetServer(dataDir: string): void {
  const target = path.join(dataDir, FILE);
  if (readRecord(target)?.pid === process.pid) fs.rmSync(target, { force: true });
}

function readRecord(file: string): ServerRecord | null {
  try {
    const value = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<ServerRecord>;
    if (typeof value.url !== 'string' || typeof value.pid !== 'number') return null;
    return { url: value.url, pid: value.pid, started_at: String(value.started_at ?? '') };
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists, another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The server serving from this data directory, when one is running (a record left by a kill is ignored). */
export function runningServer(dataDir: string): ServerRecord | null {
  const record = readRecord(path.join(dataDir, FILE));
  return record && alive(record.pid) ? record : null;
}

/**
 * The embedded database file a `sqlite:` URL names, or null for another database. Local commands that
 * act on a running server's data check that it exists instead of creating an empty one.
 */
export function sqliteFileOf(databaseUrl: string): string | null {
  return databaseUrl.startsWith('sqlite:') ? databaseUrl.slice('sqlite:'.length) : null;
}
