import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import { SIGN_IN_LINK_FILE, writeCredentialFile } from '../shared/credential-files.js';
import { OidcProviders } from './oidc.js';
import * as repo from './repository.js';
import { randomToken, sha256 } from './tokens.js';

/** Where a provider sends the browser back: this path and the provider's id, on the public URL. */
const DASHBOARD_CALLBACK = '/dashboard/api/auth/callback/';

/** The identity of the operator signed in by the one-time link. */
export const LOCAL_ISSUER = 'local';
export const LOCAL_SUBJECT = 'operator';
/** A printed link is good once, for this long. */
export const LOCAL_LINK_TTL_MS = 15 * 60_000;

/** Only a deployment without identity providers signs anybody in by link. */
export function localSignInEnabled(config: Pick<Config, 'dashboard'>): boolean {
  return config.dashboard.providers.length === 0;
}

/** A new one-time sign-in link on `baseUrl`; the database keeps only the token's hash. */
export async function issueLocalSignInLink(db: Kysely<Database>, baseUrl: string): Promise<string> {
  const token = randomToken();
  await repo.insertSignInToken(db, sha256(token), Date.now() + LOCAL_LINK_TTL_MS);
  return `${baseUrl}/dashboard/api/auth/local?token=${token}`;
}

/** Spends a sign-in token: true once, for an unexpired token, false ever after. */
export function redeemLocalSignIn(db: Kysely<Database>, token: string): Promise<boolean> {
  return repo.spendSignInToken(db, sha256(token), Date.now());
}

/**
 * With identity providers: each one with the redirect URI to register at it, and whether its discovery
 * document answered now (a wrong issuer shows here, not at the first sign-in; the server starts anyway).
 */
async function providersBanner(settings: Config['dashboard'], base: string): Promise<string> {
  const checked = await new OidcProviders(settings.providers).check();
  let out = `Dashboard: ${base}/ — sign in through an identity provider:\n`;
  for (const p of settings.providers) {
    const failure = checked.get(p.id) ?? null;
    const status = failure === null ? 'discovery ok' : `DISCOVERY FAILED: ${failure}`;
    out += `  ${p.name} (${p.id}): redirect URI ${base}${DASHBOARD_CALLBACK}${p.id} — ${status}\n`;
  }
  return out;
}

/**
 * The lines `evalgate serve` adds to its banner: the dashboard's address, and without identity providers
 * a one-time sign-in link for the operator (like a notebook server's token). With `linkDir`, the link is
 * written to a file there (readable by its owner only) and the banner names the file instead.
 */
export async function dashboardBanner(
  services: { config: Pick<Config, 'dashboard'>; db: Kysely<Database> },
  listening: string,
  linkDir?: string,
): Promise<string> {
  const base = services.config.dashboard.publicUrl ?? listening;
  if (!localSignInEnabled(services.config)) return providersBanner(services.config.dashboard, base);
  const link = await issueLocalSignInLink(services.db, base);
  const minutes = LOCAL_LINK_TTL_MS / 60_000;
  if (linkDir !== undefined) {
    const file = writeCredentialFile(linkDir, SIGN_IN_LINK_FILE, link);
    return (
      `Dashboard: ${base}/ — a one-time sign-in link (valid ${minutes} minutes, once) is in ${file}; ` +
      '`evalgate dashboard link` prints a new one\n'
    );
  }
  return `Dashboard: ${base}/ — sign in with this one-time link (valid ${minutes} minutes, once):\n\n  ${link}\n`;
}
