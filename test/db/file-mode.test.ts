import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { testDbKind } from '../helpers/databases.js';

const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

let root: string;
let umask: number;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-mode-'));
  // The usual umask, which would leave new files world-readable (0644) and directories 0755.
  umask = process.umask(0o022);
});
afterEach(() => {
  process.umask(umask);
  fs.rmSync(root, { recursive: true, force: true });
});

// Issue 15 (10b): the embedded database holds every project's traffic and sealed credentials.
describe.skipIf(testDbKind() !== 'sqlite')('SQLite file permissions', () => {
  it('creates the database, its -wal and -shm files 0600 and the data directory 0700', async () => {
    const dir = path.join(root, 'data', 'nested');
    const file = path.join(dir, 'evalgate.db');
    const handle = await openDatabase(`sqlite:${file}`);
    try {
      await handle.migrate();
      await sql`select count(*) from projects`.execute(handle.db);
      expect(modeOf(file)).toBe(0o600);
      expect(modeOf(`${file}-wal`)).toBe(0o600);
      expect(modeOf(`${file}-shm`)).toBe(0o600);
      expect(modeOf(dir)).toBe(0o700);
      expect(modeOf(path.join(root, 'data'))).toBe(0o700);
    } finally {
      await handle.close();
    }
  });

  it('leaves an existing directory and database file as their operator made them', async () => {
    const dir = path.join(root, 'shared');
    fs.mkdirSync(dir, { mode: 0o750 });
    const file = path.join(dir, 'evalgate.db');
    fs.writeFileSync(file, '', { mode: 0o640 });
    const handle = await openDatabase(`sqlite:${file}`);
    try {
      await handle.migrate();
      expect(modeOf(dir)).toBe(0o750);
      expect(modeOf(file)).toBe(0o640);
    } finally {
      await handle.close();
    }
  });
});
