import type { Migration, MigrationProvider } from 'kysely';
import * as m001 from './001_foundation.js';

/** Every migration, in order. One set serves SQLite and PostgreSQL. */
const migrations: Record<string, Migration> = {
  '001_foundation': m001,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
