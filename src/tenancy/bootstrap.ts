import type { Kysely } from 'kysely';
import { createKey } from '../auth/key-store.js';
import type { Database } from '../db/schema.js';
import { ensureProject } from './projects.js';

/**
 * On the first start against an empty database: a `default` project and one all-powerful key, so a new
 * user can call the API at once. Returns the key (to print once), or null when projects already exist.
 */
export async function bootstrapIfEmpty(db: Kysely<Database>, pepper: string): Promise<string | null> {
  const existing = await db.selectFrom('projects').select('id').limit(1).executeTakeFirst();
  if (existing) return null;
  const project = await ensureProject(db, 'default');
  const keys = await db
    .selectFrom('api_keys')
    .select('id')
    .where('project_id', '=', project.id)
    .limit(1)
    .executeTakeFirst();
  if (keys) return null;
  const { key } = await createKey(db, pepper, { projectId: project.id, name: 'default', permissions: ['*'] });
  return key;
}
