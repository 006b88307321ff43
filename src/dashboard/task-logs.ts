/**
 * A container's task logs for the dashboard: newest first by default (the API lists them in the order
 * they were recorded, which a range selects from), a page counted from the latest call.
 */
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { ListLogsQuery } from '../catalog/logs/schemas.js';
import * as logs from '../catalog/logs/service.js';
import type { Database } from '../db/schema.js';
import type { ListResponse } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';

export const DashboardLogsQuery = Type.Object({
  ...ListLogsQuery.properties,
  order: Type.Optional(
    Type.Enum(['newest', 'oldest'], { description: 'newest first (default) or in recorded order' }),
  ),
});

type Query = {
  limit?: number;
  offset?: number;
  range?: string;
  model?: string;
  since?: string;
  order?: 'newest' | 'oldest';
};

type TaskLogList = Awaited<ReturnType<typeof logs.listLogs>>;

export async function dashboardLogs(
  db: Kysely<Database>,
  projectId: string,
  container: string,
  query: Query,
): Promise<ListResponse<TaskLogList['data'][number]>> {
  const { order = 'newest', limit = 20, offset = 0, ...filter } = query;
  if (order === 'oldest') return logs.listLogs(db, projectId, container, filter, { limit, offset });
  if (filter.range !== undefined) {
    throw ApiError.invalid(
      ['query', 'range'],
      'A range selects logs in recorded order: use it with order=oldest',
    );
  }
  // The count first (one row read), then the window that ends `offset` calls before the latest.
  const { total } = await logs.listLogs(db, projectId, container, filter, { limit: 1, offset: 0 });
  const to = Math.max(0, total - offset);
  const from = Math.max(0, to - limit);
  if (to === from) return { object: 'list', data: [], total };
  const window = await logs.listLogs(
    db,
    projectId,
    container,
    { ...filter, range: `${from}:${to}` },
    { limit: to - from, offset: 0 },
  );
  return { object: 'list', data: window.data.reverse(), total };
}
