import type { Kysely } from 'kysely';
import { listProjectRows } from '../db/paging.js';
import type { ApiKeyTable, Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { displayPrefix, generateKey, hashKey } from './keys.js';
import { permissionError } from './permissions.js';

/** An API key as listings show it: never the secret. */
export interface ApiKeyView {
  object: 'api_key';
  id: string;
  project_id: string;
  name: string;
  prefix: string;
  permissions: string[];
  created_by: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  cache_ttl_seconds: number | null;
}

export function toView(row: ApiKeyTable): ApiKeyView {
  return {
    object: 'api_key',
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    prefix: row.prefix,
    permissions: JSON.parse(row.permissions) as string[],
    created_by: row.created_by,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
    cache_ttl_seconds: row.cache_ttl_seconds ?? null,
  };
}

export function validatePermissions(list: readonly string[], loc: (string | number)[]): void {
  const issues = list.flatMap((p, i) => {
    const msg = permissionError(p);
    return msg ? [{ loc: [...loc, i], msg, type: 'permission_format' }] : [];
  });
  if (issues.length) throw ApiError.validation(issues);
}

export interface NewKey {
  projectId: string;
  name: string;
  permissions: string[];
  createdBy?: string | null;
  /** Default response-cache TTL of the key's calls (seconds); null: none. */
  cacheTtlSeconds?: number | null;
}

export async function createKey(
  db: Kysely<Database>,
  pepper: string,
  input: NewKey,
): Promise<{ view: ApiKeyView; key: string }> {
  validatePermissions(input.permissions, ['body', 'permissions']);
  const key = generateKey();
  const row: ApiKeyTable = {
    id: newId('key'),
    project_id: input.projectId,
    name: input.name,
    prefix: displayPrefix(key),
    hash: hashKey(pepper, key),
    permissions: JSON.stringify([...new Set(input.permissions)]),
    created_by: input.createdBy ?? null,
    created_at: nowIso(),
    last_used_at: null,
    revoked_at: null,
    cache_ttl_seconds: input.cacheTtlSeconds ?? null,
  };
  await db.insertInto('api_keys').values(row).execute();
  return { view: toView(row), key };
}

export async function listKeys(
  db: Kysely<Database>,
  projectId: string,
  page: { limit: number; offset: number },
): Promise<{ data: ApiKeyView[]; total: number }> {
  const { rows, total } = await listProjectRows(db, 'api_keys', projectId, page);
  return { data: rows.map(toView), total };
}

/**
 * Revokes a key; with a project id, only a key of that project (others are not found). `mayRevoke`
 * decides on the key's permissions (a key may not revoke one that holds more than it does).
 */
export async function revokeKey(
  db: Kysely<Database>,
  id: string,
  projectId?: string,
  mayRevoke: (permissions: string[]) => void = () => {},
): Promise<ApiKeyView> {
  let q = db.selectFrom('api_keys').selectAll().where('id', '=', id);
  if (projectId !== undefined) q = q.where('project_id', '=', projectId);
  const row = await q.executeTakeFirst();
  if (!row) throw ApiError.notFound('API key', id);
  mayRevoke(toView(row).permissions);
  if (row.revoked_at === null) {
    row.revoked_at = nowIso();
    await db.updateTable('api_keys').set({ revoked_at: row.revoked_at }).where('id', '=', id).execute();
  }
  return toView(row);
}

/** One key of a project (another project's is not found). */
export async function findKey(db: Kysely<Database>, id: string, projectId: string): Promise<ApiKeyView> {
  const row = await db
    .selectFrom('api_keys')
    .selectAll()
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  if (!row) throw ApiError.notFound('API key', id);
  return toView(row);
}

/** A key by id, of any project (admin commands). */
export async function findKeyById(db: Kysely<Database>, id: string): Promise<ApiKeyView | undefined> {
  const row = await db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toView(row);
}

export async function renameKey(db: Kysely<Database>, id: string, name: string): Promise<void> {
  await db.updateTable('api_keys').set({ name }).where('id', '=', id).execute();
}

export interface KeyRecord {
  id: string;
  project_id: string;
  permissions: string[];
  last_used_at: string | null;
  cache_ttl_seconds: number | null;
}

export async function findActiveKeyByHash(
  db: Kysely<Database>,
  hash: string,
): Promise<KeyRecord | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'project_id', 'permissions', 'last_used_at', 'cache_ttl_seconds'])
    .where('hash', '=', hash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return (
    row && {
      ...row,
      permissions: JSON.parse(row.permissions) as string[],
      cache_ttl_seconds: row.cache_ttl_seconds ?? null,
    }
  );
}

export async function touchKey(db: Kysely<Database>, id: string, at: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
}
