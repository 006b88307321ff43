/** The dashboard's tables: users, their sessions and memberships, invitations and sign-in state. */

/** A dashboard user: one per identity (issuer, subject); the same e-mail at two providers is two users. */
export interface UserTable {
  id: string;
  issuer: string;
  subject: string;
  email: string | null;
  email_verified: number;
  name: string | null;
  created_at: string;
  last_sign_in_at: string;
}

export interface SessionTable {
  /** SHA-256 (hex) of the cookie's token. */
  id: string;
  user_id: string;
  csrf_token: string;
  created_at: string;
  /** Unix ms. */
  expires_at: number;
}

export interface MembershipTable {
  organization_id: string;
  user_id: string;
  /** owner: everything, members and invitations too; member: everything in the projects; reviewer: review only. */
  role: 'owner' | 'member' | 'reviewer';
  created_at: string;
}

export interface InvitationTable {
  id: string;
  organization_id: string;
  /** Lower case. */
  email: string;
  role: 'owner' | 'member' | 'reviewer';
  invited_by: string | null;
  created_at: string;
  /** Unix ms. */
  expires_at: number;
  accepted_at: string | null;
  accepted_by: string | null;
}

export interface SignInTokenTable {
  /** SHA-256 (hex) of the token. */
  hash: string;
  created_at: string;
  /** Unix ms. */
  expires_at: number;
  used_at: string | null;
}

export interface OidcLoginTable {
  state_hash: string;
  provider: string;
  nonce: string;
  code_verifier: string;
  return_to: string;
  /** Unix ms. */
  expires_at: number;
}

/** An invitation by link: whoever opens it (once, before it expires, unless revoked) joins the organization. */
export interface InvitationLinkTable {
  id: string;
  organization_id: string;
  /** Where the invited person lands; null: the organization's page. */
  project_id: string | null;
  /** SHA-256 (hex) of the link's token; the token itself is never stored. */
  token_hash: string;
  role: 'owner' | 'member' | 'reviewer';
  invited_by: string | null;
  created_at: string;
  /** Unix ms. */
  expires_at: number;
  used_at: string | null;
  used_by: string | null;
  revoked_at: string | null;
}

/** A dashboard account of its own (a name and a password), made by an invitation link without providers. */
export interface PasswordAccountTable {
  user_id: string;
  /** Lower case. */
  username: string;
  /** `scrypt$N$r$p$salt$hash`, salt and hash in base64url. */
  password_hash: string;
  created_at: string;
  updated_at: string;
}
