import type { Kysely, Selectable } from 'kysely';
import type { Database } from './schema.js';

/** One page of a list: how many rows, after how many. */
export interface Page {
  limit: number;
  offset: number;
}

/** Tables of project-owned resources listed newest first: a `project_id`, `created_at` and a time-ordered `id`. */
export type ProjectListTable = 'containers' | 'datasets' | 'api_keys';

/** One page of a project's rows, newest first, and how many there are in all. */
export async function listProjectRows<T extends ProjectListTable>(
  db: Kysely<Database>,
  table: T,
  projectId: string,
  page: Page,
): Promise<{ rows: Selectable<Database[T]>[]; total: number }> {
  // Widened to one table for the query builder; every listed table has these columns.
  const q = db as unknown as Kysely<{ t: Database['containers'] }>;
  const from = table as unknown as 't';
  const [rows, count] = await Promise.all([
    q
      .selectFrom(from)
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    q
      .selectFrom(from)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('project_id', '=', projectId)
      .executeTakeFirstOrThrow(),
  ]);
  return { rows: rows as unknown as Selectable<Database[T]>[], total: Number(count.n) };
}
