import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../db/database.js';
import type {
  Database,
  InvitationTable,
  MembershipTable,
  OidcLoginTable,
  SessionTable,
  UserTable,
} from '../db/schema.js';
import { nowIso } from '../shared/ids.js';
import { dashboardId } from './tokens.js';

export type UserRow = Selectable<UserTable>;
export type Role = MembershipTable['role'];

export interface Identity {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

/** The user of an identity, created at its first sign-in; e-mail and name follow the provider's latest claims. */
export async function upsertUser(db: Kysely<Database>, identity: Identity): Promise<UserRow> {
  const now = nowIso();
  const claims = {
    email: identity.email,
    email_verified: identity.emailVerified ? 1 : 0,
    name: identity.name,
    last_sign_in_at: now,
  };
  const find = () =>
    db
      .selectFrom('users')
      .selectAll()
      .where('issuer', '=', identity.issuer)
      .where('subject', '=', identity.subject)
      .executeTakeFirst();
  const found = await find();
  if (found) {
    await db.updateTable('users').set(claims).where('id', '=', found.id).execute();
    return { ...found, ...claims };
  }
  const row: UserTable = {
    id: dashboardId('usr'),
    issuer: identity.issuer,
    subject: identity.subject,
    created_at: now,
    ...claims,
  };
  try {
    await db.insertInto('users').values(row).execute();
    return row;
  } catch (err) {
    // The same identity signed in twice at once.
    if (!isUniqueViolation(err)) throw err;
    const raced = await find();
    if (!raced) throw err;
    return raced;
  }
}

export async function insertSession(db: Kysely<Database>, row: SessionTable): Promise<void> {
  await db.insertInto('sessions').values(row).execute();
}

export async function findSession(
  db: Kysely<Database>,
  id: string,
  now: number,
): Promise<{ session: Selectable<SessionTable>; user: UserRow } | undefined> {
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select([
      'sessions.id as session_id',
      'sessions.csrf_token',
      'sessions.created_at as session_created_at',
      'sessions.expires_at',
      'users.id',
      'users.issuer',
      'users.subject',
      'users.email',
      'users.email_verified',
      'users.name',
      'users.created_at',
      'users.last_sign_in_at',
    ])
    .where('sessions.id', '=', id)
    .where('sessions.expires_at', '>', now)
    .executeTakeFirst();
  if (!row) return undefined;
  const { session_id, csrf_token, session_created_at, expires_at, ...user } = row;
  return {
    session: {
      id: session_id,
      user_id: user.id,
      csrf_token,
      created_at: session_created_at,
      expires_at: Number(expires_at),
    },
    user,
  };
}

export async function deleteSession(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('sessions').where('id', '=', id).execute();
}

/** Expired sessions, logins and sign-in links: removed now and then, on the way of a new sign-in. */
export async function deleteExpired(db: Kysely<Database>, now: number): Promise<void> {
  await db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
  await db.deleteFrom('oidc_logins').where('expires_at', '<=', now).execute();
  await db.deleteFrom('sign_in_tokens').where('expires_at', '<=', now).execute();
}

export async function insertLogin(db: Kysely<Database>, row: OidcLoginTable): Promise<void> {
  await db.insertInto('oidc_logins').values(row).execute();
}

/** The login of a state, removed as it is read: a state is good for one callback. */
export async function takeLogin(
  db: Kysely<Database>,
  stateHash: string,
): Promise<Selectable<OidcLoginTable> | undefined> {
  const row = await db
    .selectFrom('oidc_logins')
    .selectAll()
    .where('state_hash', '=', stateHash)
    .executeTakeFirst();
  if (!row) return undefined;
  const deleted = await db.deleteFrom('oidc_logins').where('state_hash', '=', stateHash).executeTakeFirst();
  // Two callbacks with the same state at once: only the one that deleted the row goes on.
  return Number(deleted.numDeletedRows) === 1 ? { ...row, expires_at: Number(row.expires_at) } : undefined;
}

export async function insertSignInToken(
  db: Kysely<Database>,
  hash: string,
  expiresAt: number,
): Promise<void> {
  await db
    .insertInto('sign_in_tokens')
    .values({ hash, created_at: nowIso(), expires_at: expiresAt, used_at: null })
    .execute();
}

/** Marks an unused, unexpired sign-in token used; true only for the one request that did. */
export async function spendSignInToken(db: Kysely<Database>, hash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('sign_in_tokens')
    .set({ used_at: nowIso() })
    .where('hash', '=', hash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export interface MembershipView {
  organization_id: string;
  organization: string;
  role: Role;
}

export async function membershipsOf(db: Kysely<Database>, userId: string): Promise<MembershipView[]> {
  return db
    .selectFrom('memberships')
    .innerJoin('organizations', 'organizations.id', 'memberships.organization_id')
    .select(['memberships.organization_id', 'organizations.name as organization', 'memberships.role'])
    .where('memberships.user_id', '=', userId)
    .orderBy('organizations.name')
    .execute();
}

export async function findMembership(
  db: Kysely<Database>,
  organizationId: string,
  userId: string,
): Promise<Selectable<MembershipTable> | undefined> {
  return db
    .selectFrom('memberships')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** The roles in order: each one's rights include those of the roles below it. */
export const ROLE_RANK: Readonly<Record<Role, number>> = { reviewer: 0, member: 1, owner: 2 };
const RANK = ROLE_RANK;

/** Adds a member; an existing member keeps the higher of the two roles (owner, member, reviewer). */
export async function addMember(
  db: Kysely<Database>,
  organizationId: string,
  userId: string,
  role: Role,
): Promise<void> {
  const existing = await findMembership(db, organizationId, userId);
  if (existing) {
    if (RANK[role] > RANK[existing.role]) {
      await db
        .updateTable('memberships')
        .set({ role })
        .where('organization_id', '=', organizationId)
        .where('user_id', '=', userId)
        .execute();
    }
    return;
  }
  try {
    await db
      .insertInto('memberships')
      .values({ organization_id: organizationId, user_id: userId, role, created_at: nowIso() })
      .execute();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
}

export async function removeMember(
  db: Kysely<Database>,
  organizationId: string,
  userId: string,
): Promise<void> {
  await db
    .deleteFrom('memberships')
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .execute();
}

export async function membersOf(db: Kysely<Database>, organizationId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .select([
      'users.id as user_id',
      'users.name',
      'users.email',
      'users.issuer',
      'memberships.role',
      'memberships.created_at',
    ])
    .where('memberships.organization_id', '=', organizationId)
    .orderBy('memberships.created_at')
    .execute();
}

/** What to call each of these users: their name, else their e-mail, else their id (unknown ids left out). */
export async function userNames(db: Kysely<Database>, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const users = await db
    .selectFrom('users')
    .select(['id', 'name', 'email'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(users.map((u) => [u.id, u.name ?? u.email ?? u.id]));
}

/** Whether this user is the only one signed in through an identity provider so far (the first; users of `localIssuers` aside). */
export async function isFirstProviderUser(
  db: Kysely<Database>,
  userId: string,
  localIssuers: readonly string[],
): Promise<boolean> {
  const others = await db
    .selectFrom('users')
    .select('id')
    .where('issuer', 'not in', [...localIssuers])
    .where('id', '<>', userId)
    .limit(1)
    .executeTakeFirst();
  return others === undefined;
}

/** Organizations nobody owns (made by `evalgate projects create --org`, or the bootstrap's `default`). */
export async function ownerlessOrganizations(db: Kysely<Database>): Promise<string[]> {
  const rows = await db
    .selectFrom('organizations')
    .select('id')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('memberships')
            .select('memberships.user_id')
            .whereRef('memberships.organization_id', '=', 'organizations.id')
            .where('memberships.role', '=', 'owner'),
        ),
      ),
    )
    .execute();
  return rows.map((r) => r.id);
}

export async function insertInvitation(db: Kysely<Database>, row: InvitationTable): Promise<void> {
  await db.insertInto('invitations').values(row).execute();
}

export async function pendingInvitations(
  db: Kysely<Database>,
  filter: { organizationId?: string; email?: string },
  now: number,
) {
  let q = db
    .selectFrom('invitations')
    .innerJoin('organizations', 'organizations.id', 'invitations.organization_id')
    .select([
      'invitations.id',
      'invitations.organization_id',
      'organizations.name as organization',
      'invitations.email',
      'invitations.role',
      'invitations.created_at',
      'invitations.expires_at',
    ])
    .where('invitations.accepted_at', 'is', null)
    .where('invitations.expires_at', '>', now);
  if (filter.organizationId !== undefined)
    q = q.where('invitations.organization_id', '=', filter.organizationId);
  if (filter.email !== undefined) q = q.where('invitations.email', '=', filter.email);
  const rows = await q.orderBy('invitations.created_at').execute();
  return rows.map((r) => ({ ...r, expires_at: new Date(Number(r.expires_at)).toISOString() }));
}

export async function findInvitation(
  db: Kysely<Database>,
  id: string,
): Promise<Selectable<InvitationTable> | undefined> {
  return db.selectFrom('invitations').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Marks an invitation accepted; true only for the request that did. */
export async function markAccepted(db: Kysely<Database>, id: string, userId: string): Promise<boolean> {
  const result = await db
    .updateTable('invitations')
    .set({ accepted_at: nowIso(), accepted_by: userId })
    .where('id', '=', id)
    .where('accepted_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function deleteInvitation(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('invitations').where('id', '=', id).execute();
}
