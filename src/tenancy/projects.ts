import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../db/database.js';
import type { Database, ProjectTable } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';

export interface Project {
  id: string;
  name: string;
  organization: string;
  created_at: string;
}

async function ensureOrganization(db: Kysely<Database>, name: string): Promise<string> {
  const found = await db.selectFrom('organizations').select('id').where('name', '=', name).executeTakeFirst();
  if (found) return found.id;
  const id = newId('org');
  try {
    await db.insertInto('organizations').values({ id, name, created_at: nowIso() }).execute();
    return id;
  } catch (err) {
    // Another process created it in the meantime.
    if (!isUniqueViolation(err)) throw err;
    const again = await db
      .selectFrom('organizations')
      .select('id')
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
    return again.id;
  }
}

function projectQuery(db: Kysely<Database>) {
  return db
    .selectFrom('projects')
    .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
    .select(['projects.id', 'projects.name', 'organizations.name as organization', 'projects.created_at']);
}

export async function findProject(db: Kysely<Database>, name: string): Promise<Project | undefined> {
  return projectQuery(db).where('projects.name', '=', name).executeTakeFirst();
}

export async function listProjects(db: Kysely<Database>): Promise<Project[]> {
  return projectQuery(db).orderBy('projects.created_at').orderBy('projects.id').execute();
}

export async function createProject(
  db: Kysely<Database>,
  name: string,
  organization = 'default',
): Promise<Project> {
  const organizationId = await ensureOrganization(db, organization);
  const row: ProjectTable = { id: newId('prj'), organization_id: organizationId, name, created_at: nowIso() };
  try {
    await db.insertInto('projects').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw new ApiError('conflict', `Project '${name}' already exists`);
    throw err;
  }
  return { id: row.id, name, organization, created_at: row.created_at };
}

/** The project of that name, created (with its organization) when missing. */
export async function ensureProject(
  db: Kysely<Database>,
  name: string,
  organization = 'default',
): Promise<Project> {
  const found = await findProject(db, name);
  if (found) return found;
  try {
    return await createProject(db, name, organization);
  } catch (err) {
    const raced = await findProject(db, name);
    if (raced) return raced;
    throw err;
  }
}

/** A new organization of that name (conflict when one has it); its id. */
export async function insertOrganization(db: Kysely<Database>, name: string): Promise<string> {
  const id = newId('org');
  try {
    await db.insertInto('organizations').values({ id, name, created_at: nowIso() }).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw new ApiError('conflict', `Organization '${name}' already exists`);
    throw err;
  }
  return id;
}

/** An organization by id (its row), else undefined. */
export async function findOrganization(db: Kysely<Database>, id: string) {
  return db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
}

/** An organization's projects by name. */
export async function projectsOf(db: Kysely<Database>, organizationId: string) {
  return db
    .selectFrom('projects')
    .select(['id', 'name', 'created_at'])
    .where('organization_id', '=', organizationId)
    .orderBy('name')
    .execute();
}

/** The projects of several organizations, each organization's by name (as projectsOf lists them). */
export async function projectsOfOrganizations(db: Kysely<Database>, organizationIds: readonly string[]) {
  if (organizationIds.length === 0) return [];
  return db
    .selectFrom('projects')
    .select(['id', 'name', 'created_at', 'organization_id'])
    .where('organization_id', 'in', organizationIds)
    .orderBy('name')
    .execute();
}

/** A project by id with its organization's name, else undefined. */
export async function findProjectById(db: Kysely<Database>, id: string) {
  return db
    .selectFrom('projects')
    .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
    .select([
      'projects.id',
      'projects.name',
      'projects.created_at',
      'projects.organization_id',
      'organizations.name as organization',
    ])
    .where('projects.id', '=', id)
    .executeTakeFirst();
}
