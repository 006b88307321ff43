import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../shared/errors.js';
import { newId, nowIso } from '../../shared/ids.js';
import { findContainer, insertContainer } from './repository.js';

/** The container that receives calls made without `X-Evalgate-Container`. */
export const DEFAULT_CONTAINER = 'default';

/**
 * The id of the container a recorded call goes to: the one named (by id or label), else the project's
 * `default`, created on first use. A named container the project does not have is a 404.
 */
export async function loadContainer(
  db: Kysely<Database>,
  projectId: string,
  ref: string | null,
): Promise<string> {
  if (ref !== null) {
    const found = await findContainer(db, projectId, ref);
    if (found) return found.id;
    // Said with the fix: most often the container was simply not created yet.
    throw new ApiError(
      'not_found',
      `Container '${ref}' not found: create it with \`evalgate containers create ${ref}\` (or POST ` +
        `/v1/containers {"label": "${ref}"}), or send the call without X-Evalgate-Container to record ` +
        `it in '${DEFAULT_CONTAINER}'`,
      { resource: 'container', ref },
    );
  }
  return ensureContainer(
    db,
    projectId,
    DEFAULT_CONTAINER,
    'Gateway calls made without an X-Evalgate-Container header',
  );
}

/**
 * The id of the project's container labelled `label`, created (with `description`) on first use; two
 * requests creating it at once both get the one that was stored.
 */
export async function ensureContainer(
  db: Kysely<Database>,
  projectId: string,
  label: string,
  description: string,
): Promise<string> {
  const found = await findContainer(db, projectId, label);
  if (found) return found.id;
  const now = nowIso();
  try {
    await insertContainer(db, {
      id: newId('ctr'),
      project_id: projectId,
      label,
      description,
      metadata: '{}',
      created_at: now,
      updated_at: now,
    });
  } catch (err) {
    // Another request created it first: use theirs.
    if (!(err instanceof ApiError && err.code === 'conflict')) throw err;
  }
  const created = await findContainer(db, projectId, label);
  if (!created) throw new Error(`container '${label}' vanished after creation`);
  return created.id;
}
