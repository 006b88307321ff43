import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { SourceRegistry } from '../sources/registry.js';

/** What human review needs of the process: the database, and the app's source kinds (a run sample's needs). */
export interface ReviewPorts {
  db: Kysely<Database>;
  sourceKinds: SourceRegistry;
}
