import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { ListResponse, Page } from '../../http/schemas.js';
import { ApiError } from '../../shared/errors.js';
import { newId, nowIso } from '../../shared/ids.js';
import { type JsonObject, parseJson } from '../../shared/json.js';
import * as repo from './repository.js';
import type { Container, CreateContainer, PatchContainer } from './schemas.js';

export function toContainer(row: repo.ContainerRow): Container {
  return {
    object: 'container',
    id: row.id,
    project_id: row.project_id,
    label: row.label,
    description: row.description,
    metadata: parseJson<JsonObject>(row.metadata, {}),
    created_at: row.created_at,
    updated_at: row.updated_at,
    session_continuity: (row.session_continuity ?? 1) !== 0,
  };
}

/** The container of the project by id or label, or 404. */
export async function requireContainer(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<repo.ContainerRow> {
  const row = await repo.findContainer(db, projectId, ref);
  if (!row) throw ApiError.notFound('Container', ref);
  return row;
}

export async function createContainer(
  db: Kysely<Database>,
  projectId: string,
  body: CreateContainer,
): Promise<Container> {
  const now = nowIso();
  const row: repo.ContainerRow = {
    id: newId('ctr'),
    project_id: projectId,
    label: body.label,
    description: body.description ?? null,
    metadata: JSON.stringify(body.metadata ?? {}),
    created_at: now,
    updated_at: now,
    ...(body.session_continuity === false ? { session_continuity: 0 } : {}),
  };
  await repo.insertContainer(db, row);
  return toContainer(row);
}

export async function listContainers(
  db: Kysely<Database>,
  projectId: string,
  page: Page,
): Promise<ListResponse<Container>> {
  const { rows, total } = await repo.listContainers(db, projectId, page);
  return { object: 'list', data: rows.map(toContainer), total };
}

export async function patchContainer(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
  body: PatchContainer,
): Promise<Container> {
  const row = await requireContainer(db, projectId, ref);
  const patch: Parameters<typeof repo.updateContainer>[2] = { updated_at: nowIso() };
  if (body.label !== undefined) patch.label = body.label;
  if (body.description !== undefined) patch.description = body.description;
  if (body.metadata !== undefined) patch.metadata = JSON.stringify(body.metadata ?? {});
  if (body.session_continuity !== undefined) patch.session_continuity = body.session_continuity ? 1 : 0;
  await repo.updateContainer(db, row.id, patch);
  return toContainer({ ...row, ...patch });
}

export async function deleteContainer(
  db: Kysely<Database>,
  projectId: string,
  id: string,
): Promise<{ id: string }> {
  const row = await repo.findContainer(db, projectId, id);
  if (!row || row.id !== id) throw ApiError.notFound('Container', id);
  const refs = await repo.containerReferences(db, row.id);
  if (refs.evaluators > 0 || refs.runs > 0) {
    throw new ApiError(
      'container_in_use',
      `Container '${row.label}' is used by ${refs.evaluators} evaluator(s) and ${refs.runs} run(s); delete or move them first`,
      refs,
    );
  }
  await repo.deleteContainer(db, row.id);
  return { id: row.id };
}
