import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** What human review needs of the process: the database. */
export interface ReviewPorts {
  db: Kysely<Database>;
}
