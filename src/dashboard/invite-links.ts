import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../db/database.js';
import type { Database, InvitationLinkTable } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { nowIso } from '../shared/ids.js';
import { findProjectById } from '../tenancy/projects.js';
import { requireOwner } from './orgs.js';
import { hashPassword, PASSWORD_ISSUER } from './passwords.js';
import * as repo from './repository.js';
import { dashboardId, randomToken, sha256 } from './tokens.js';

/**
 * Invitations by link: an owner of an organization makes a one-time link with a role; whoever opens it
 * joins the organization with that role, either as the signed-in user or, on a server without identity
 * providers, as a new account with a name and password. The token (32 random bytes) is shown once, in the
 * answer that makes it; the database keeps its SHA-256 only, and a token is looked up by that hash.
 */

export const LINK_TTL_DAYS = 7;
export const LINK_TTL_MAX_DAYS = 90;
/** The web app's page that opens an invitation link. */
export const INVITE_PAGE = '/invite/';

type LinkRow = Selectable<InvitationLinkTable>;
export type LinkStatus = 'pending' | 'used' | 'revoked' | 'expired';

function statusOf(row: LinkRow, now: number): LinkStatus {
  if (row.used_at !== null) return 'used';
  if (row.revoked_at !== null) return 'revoked';
  return Number(row.expires_at) <= now ? 'expired' : 'pending';
}

/** A link as owners see it: never its token nor its hash. */
function viewOf(row: LinkRow, now = Date.now()) {
  return {
    id: row.id,
    object: 'invitation_link' as const,
    organization_id: row.organization_id,
    project_id: row.project_id,
    role: row.role,
    status: statusOf(row, now),
    invited_by: row.invited_by,
    created_at: row.created_at,
    expires_at: new Date(Number(row.expires_at)).toISOString(),
    used_at: row.used_at,
    used_by: row.used_by,
    revoked_at: row.revoked_at,
  };
}
export type InvitationLinkView = ReturnType<typeof viewOf>;

export interface CreateLink {
  role: repo.Role;
  /** 1 to 90; default 7. */
  expires_in_days?: number;
  /** A project of the organization to land on. */
  project?: string;
}

/** A new link (owners only, a role no higher than their own); the answer holds its URL, once. */
export async function createInvitationLink(
  db: Kysely<Database>,
  userId: string,
  organizationId: string,
  body: CreateLink,
  baseUrl: string,
): Promise<InvitationLinkView & { url: string }> {
  await requireOwner(db, userId, organizationId);
  const own = await repo.findMembership(db, organizationId, userId);
  if (!own || repo.ROLE_RANK[body.role] > repo.ROLE_RANK[own.role]) {
    throw new ApiError('permission_denied', 'An invitation may not give a role above your own', {
      required: body.role,
    });
  }
  if (body.project !== undefined) {
    const project = await findProjectById(db, body.project);
    if (!project || project.organization_id !== organizationId) {
      throw ApiError.invalid(['body', 'project'], `Project '${body.project}' is not in this organization`);
    }
  }
  const token = randomToken();
  const days = body.expires_in_days ?? LINK_TTL_DAYS;
  const row: LinkRow = {
    id: dashboardId('invl'),
    organization_id: organizationId,
    project_id: body.project ?? null,
    token_hash: sha256(token),
    role: body.role,
    invited_by: userId,
    created_at: nowIso(),
    expires_at: Date.now() + days * 86_400_000,
    used_at: null,
    used_by: null,
    revoked_at: null,
  };
  await db.insertInto('invitation_links').values(row).execute();
  return { ...viewOf(row), url: `${baseUrl}${INVITE_PAGE}${token}` };
}

export async function listInvitationLinks(db: Kysely<Database>, userId: string, organizationId: string) {
  await requireOwner(db, userId, organizationId);
  const rows = await db
    .selectFrom('invitation_links')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('created_at', 'desc')
    .limit(200)
    .execute();
  const now = Date.now();
  return { object: 'list' as const, data: rows.map((r) => viewOf(r, now)) };
}

/** Revokes a link of the organization that was not used yet; another organization's is not found. */
export async function revokeInvitationLink(
  db: Kysely<Database>,
  userId: string,
  organizationId: string,
  linkId: string,
): Promise<InvitationLinkView> {
  await requireOwner(db, userId, organizationId);
  const find = () =>
    db
      .selectFrom('invitation_links')
      .selectAll()
      .where('id', '=', linkId)
      .where('organization_id', '=', organizationId)
      .executeTakeFirst();
  const row = await find();
  if (!row) throw ApiError.notFound('Invitation link', linkId);
  const done = await db
    .updateTable('invitation_links')
    .set({ revoked_at: nowIso() })
    .where('id', '=', linkId)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (Number(done.numUpdatedRows) !== 1 && statusOf(row, Date.now()) === 'used') {
    throw new ApiError('conflict', 'This invitation link was already used; remove the member instead', {
      reason: 'used',
    });
  }
  const after = await find();
  return viewOf(after ?? row);
}

const REFUSALS: Record<Exclude<LinkStatus, 'pending'>, string> = {
  used: 'This invitation link was already used',
  revoked: 'This invitation link was revoked',
  expired: 'This invitation link has expired',
};

/** 404 for a token no link has (a wrong one reads the same), 409 for a link used, revoked or expired. */
function refusal(row: LinkRow | undefined): ApiError {
  if (!row) {
    return new ApiError('not_found', 'This invitation link is not valid', { resource: 'invitation_link' });
  }
  const status = statusOf(row, Date.now());
  const reason = status === 'pending' ? 'used' : status;
  return new ApiError('conflict', REFUSALS[reason], { reason });
}

function findByToken(db: Kysely<Database>, token: string): Promise<LinkRow | undefined> {
  return db
    .selectFrom('invitation_links')
    .selectAll()
    .where('token_hash', '=', sha256(token))
    .executeTakeFirst();
}

/** What an open link invites to (public: the holder of the token may know it), or its refusal. */
export async function inspectInvitationLink(db: Kysely<Database>, token: string) {
  const row = await findByToken(db, token);
  if (!row || statusOf(row, Date.now()) !== 'pending') throw refusal(row);
  const org = await db
    .selectFrom('organizations')
    .select('name')
    .where('id', '=', row.organization_id)
    .executeTakeFirst();
  const project = row.project_id === null ? undefined : await findProjectById(db, row.project_id);
  return {
    organization: org?.name ?? row.organization_id,
    project: project ? { id: project.id, name: project.name } : null,
    role: row.role,
    expires_at: new Date(Number(row.expires_at)).toISOString(),
  };
}

/** Where an invited person lands: the project's page (Review for a reviewer), else the organization's. */
function landingOf(row: LinkRow): string {
  return row.project_id === null ? `/orgs/${row.organization_id}` : `/projects/${row.project_id}`;
}

/** Spends the link for `userId` and makes them a member, in `trx`; the refusal when it cannot. */
async function spend(trx: Kysely<Database>, token: string, userId: string): Promise<LinkRow> {
  const hash = sha256(token);
  const done = await trx
    .updateTable('invitation_links')
    .set({ used_at: nowIso(), used_by: userId })
    .where('token_hash', '=', hash)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', Date.now())
    .executeTakeFirst();
  const row = await findByToken(trx, token);
  if (Number(done.numUpdatedRows) !== 1 || !row) throw refusal(row);
  await repo.addMember(trx, row.organization_id, userId, row.role);
  return row;
}

/** The signed-in user joins (an existing member keeps the higher role). */
export async function acceptInvitationLink(db: Kysely<Database>, userId: string, token: string) {
  const row = await db.transaction().execute((trx) => spend(trx, token, userId));
  return { organization_id: row.organization_id, role: row.role, redirect: landingOf(row) };
}

/**
 * A new account with a name and password, made member by the link, in one transaction: a name taken
 * (409) spends nothing. The password's rules are checked by the caller.
 */
export async function registerWithInvitationLink(
  db: Kysely<Database>,
  token: string,
  account: { username: string; password: string; name?: string },
): Promise<{ userId: string; redirect: string }> {
  const row = await findByToken(db, token);
  if (!row || statusOf(row, Date.now()) !== 'pending') throw refusal(row);
  const username = account.username.toLowerCase();
  const taken = () =>
    new ApiError('conflict', `The name '${username}' is taken; choose another`, { reason: 'username_taken' });
  const exists = await db
    .selectFrom('password_accounts')
    .select('user_id')
    .where('username', '=', username)
    .executeTakeFirst();
  if (exists) throw taken();
  const passwordHash = await hashPassword(account.password);
  const now = nowIso();
  const userId = dashboardId('usr');
  try {
    const spent = await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('users')
        .values({
          id: userId,
          issuer: PASSWORD_ISSUER,
          subject: username,
          email: null,
          email_verified: 0,
          name: account.name?.trim() || username,
          created_at: now,
          last_sign_in_at: now,
        })
        .execute();
      await trx
        .insertInto('password_accounts')
        .values({ user_id: userId, username, password_hash: passwordHash, created_at: now, updated_at: now })
        .execute();
      return spend(trx, token, userId);
    });
    return { userId, redirect: landingOf(spent) };
  } catch (err) {
    if (isUniqueViolation(err)) throw taken();
    throw err;
  }
}

/** The account of a name, for signing in: its user and stored hash, or null. */
export async function passwordAccount(db: Kysely<Database>, username: string) {
  const row = await db
    .selectFrom('password_accounts')
    .innerJoin('users', 'users.id', 'password_accounts.user_id')
    .select(['users.id as user_id', 'users.name', 'password_accounts.password_hash'])
    .where('password_accounts.username', '=', username.toLowerCase())
    .executeTakeFirst();
  return row ?? null;
}
