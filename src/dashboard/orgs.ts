import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { nowIso } from '../shared/ids.js';
import {
  createProject,
  findOrganization,
  findProjectById,
  insertOrganization,
  type Project,
  projectsOf,
  projectsOfOrganizations,
} from '../tenancy/projects.js';
import * as repo from './repository.js';
import { dashboardId } from './tokens.js';

/** An invitation is good for this long. */
const INVITATION_TTL_MS = 14 * 24 * 3_600_000;

/**
 * Organizations, their members and invitations, and the projects in them, as a signed-in user sees them.
 * Whatever the user is not a member of does not exist for them (404), as for API keys and projects.
 */

export async function listOrganizations(db: Kysely<Database>, userId: string) {
  const memberships = await repo.membershipsOf(db, userId);
  const projects = new Map<string, { id: string; name: string; created_at: string }[]>();
  const rows = await projectsOfOrganizations(
    db,
    memberships.map((m) => m.organization_id),
  );
  for (const { organization_id, ...project } of rows) {
    const list = projects.get(organization_id);
    if (list) list.push(project);
    else projects.set(organization_id, [project]);
  }
  return memberships.map((m) => ({
    id: m.organization_id,
    name: m.organization,
    role: m.role,
    projects: projects.get(m.organization_id) ?? [],
  }));
}

export async function createOrganization(db: Kysely<Database>, userId: string, name: string) {
  const id = await insertOrganization(db, name);
  await repo.addMember(db, id, userId, 'owner');
  return { id, name, role: 'owner' as const, projects: [] };
}

/** The user's role in the organization; 404 when they are not a member. */
export async function requireMembership(
  db: Kysely<Database>,
  userId: string,
  organizationId: string,
): Promise<repo.Role> {
  const membership = await repo.findMembership(db, organizationId, userId);
  if (!membership) throw ApiError.notFound('Organization', organizationId);
  return membership.role;
}

/** What a `reviewer` member gets on anything but reviewing. */
export function reviewerOnly(): ApiError {
  return new ApiError(
    'permission_denied',
    'A reviewer may only review: claim, score and correct their own reviews',
    {
      required: 'member',
    },
  );
}

/** 404 for a non-member, 403 for a member who is not an owner. */
export async function requireOwner(
  db: Kysely<Database>,
  userId: string,
  organizationId: string,
): Promise<void> {
  const role = await requireMembership(db, userId, organizationId);
  if (role !== 'owner') {
    throw new ApiError('permission_denied', 'Only owners of the organization may do this', {
      required: 'owner',
    });
  }
}

export async function organizationDetail(db: Kysely<Database>, userId: string, organizationId: string) {
  const role = await requireMembership(db, userId, organizationId);
  const org = await findOrganization(db, organizationId);
  if (!org) throw ApiError.notFound('Organization', organizationId);
  return {
    id: org.id,
    name: org.name,
    created_at: org.created_at,
    role,
    members: await repo.membersOf(db, organizationId),
    // Who was invited is for owners to see.
    invitations: role === 'owner' ? await repo.pendingInvitations(db, { organizationId }, Date.now()) : [],
    projects: await projectsOf(db, organizationId),
  };
}

export async function inviteMember(
  db: Kysely<Database>,
  userId: string,
  organizationId: string,
  body: { email: string; role: repo.Role },
) {
  await requireOwner(db, userId, organizationId);
  const row = {
    id: dashboardId('inv'),
    organization_id: organizationId,
    email: body.email.trim().toLowerCase(),
    role: body.role,
    invited_by: userId,
    created_at: nowIso(),
    expires_at: Date.now() + INVITATION_TTL_MS,
    accepted_at: null,
    accepted_by: null,
  };
  await repo.insertInvitation(db, row);
  return { ...row, expires_at: new Date(row.expires_at).toISOString() };
}

export async function revokeInvitation(
  db: Kysely<Database>,
  userId: string,
  organizationId: string,
  invitationId: string,
): Promise<void> {
  await requireOwner(db, userId, organizationId);
  const invitation = await repo.findInvitation(db, invitationId);
  if (!invitation || invitation.organization_id !== organizationId) {
    throw ApiError.notFound('Invitation', invitationId);
  }
  await repo.deleteInvitation(db, invitationId);
}

/** Invitations addressed to the user's e-mail, which must be verified by their identity provider. */
export async function invitationsFor(db: Kysely<Database>, user: repo.UserRow) {
  if (!user.email || user.email_verified !== 1) return [];
  return repo.pendingInvitations(db, { email: user.email.toLowerCase() }, Date.now());
}

export async function acceptInvitation(db: Kysely<Database>, user: repo.UserRow, invitationId: string) {
  const invitation = await repo.findInvitation(db, invitationId);
  const email = user.email?.toLowerCase();
  // Someone else's invitation is as good as none.
  if (!invitation || email === undefined || invitation.email !== email) {
    throw ApiError.notFound('Invitation', invitationId);
  }
  if (user.email_verified !== 1) {
    throw new ApiError('permission_denied', 'Your identity provider has not verified your e-mail address', {
      reason: 'email_not_verified',
    });
  }
  if (invitation.accepted_at !== null || Number(invitation.expires_at) <= Date.now()) {
    throw new ApiError('conflict', 'This invitation was already used or has expired');
  }
  if (!(await repo.markAccepted(db, invitationId, user.id))) {
    throw new ApiError('conflict', 'This invitation was already used or has expired');
  }
  await repo.addMember(db, invitation.organization_id, user.id, invitation.role);
  return { organization_id: invitation.organization_id, role: invitation.role };
}

export async function removeMember(
  db: Kysely<Database>,
  userId: string,
  organizationId: string,
  memberId: string,
): Promise<void> {
  await requireOwner(db, userId, organizationId);
  const members = await repo.membersOf(db, organizationId);
  const member = members.find((m) => m.user_id === memberId);
  if (!member) throw ApiError.notFound('Member', memberId);
  if (member.role === 'owner' && members.filter((m) => m.role === 'owner').length === 1) {
    throw new ApiError('conflict', 'An organization keeps at least one owner');
  }
  await repo.removeMember(db, organizationId, memberId);
}

export async function createProjectIn(
  db: Kysely<Database>,
  userId: string,
  organizationId: string,
  name: string,
): Promise<Project> {
  if ((await requireMembership(db, userId, organizationId)) === 'reviewer') throw reviewerOnly();
  const org = await findOrganization(db, organizationId);
  if (!org) throw ApiError.notFound('Organization', organizationId);
  return createProject(db, name, org.name);
}

export interface ProjectAccess {
  id: string;
  name: string;
  created_at: string;
  organization_id: string;
  organization: string;
  role: repo.Role;
}

/** A project of one of the user's organizations; any other project is not found. */
export async function requireProject(
  db: Kysely<Database>,
  userId: string,
  projectId: string,
): Promise<ProjectAccess> {
  const project = await findProjectById(db, projectId);
  const membership = project && (await repo.findMembership(db, project.organization_id, userId));
  if (!project || !membership) throw ApiError.notFound('Project', projectId);
  return { ...project, role: membership.role };
}

/** The operator signed in by the local link owns every organization that has no owner yet. */
export async function claimOwnerlessOrganizations(db: Kysely<Database>, userId: string): Promise<void> {
  for (const organizationId of await repo.ownerlessOrganizations(db)) {
    await repo.addMember(db, organizationId, userId, 'owner');
  }
}
