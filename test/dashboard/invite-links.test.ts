/**
 * Invitations by link on a server without identity providers, over HTTP, on the database the run selects
 * (EVALGATE_TEST_DB): an owner makes a one-time link with a role; a new person chooses a name and password
 * with it and is signed in as a member with that role; a signed-in user accepts one. Refusals: unknown,
 * used, revoked and expired tokens, a non-owner making or revoking links, another organization's owner,
 * cross-origin posts, weak passwords, taken names, too many password attempts; the token is never stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueLocalSignInLink } from '../../src/dashboard/local-sign-in.js';
import { sha256 } from '../../src/dashboard/tokens.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { CookieJar, dashboardCall } from './helpers.js';

interface Session {
  jar: CookieJar;
  csrf: string;
}

let h: Harness;
let operator: Session;
let org = '';

async function sessionOf(jar: CookieJar): Promise<Session> {
  const me = await jar.fetch(`${h.url}/dashboard/api/me`);
  expect(me.status).toBe(200);
  return { jar, csrf: ((await me.json()) as { csrf_token: string }).csrf_token };
}

/** A public POST of the sign-in pages, from the dashboard's origin unless told otherwise. */
async function publicPost(path: string, body: unknown, jar = new CookieJar(), origin = h.url) {
  const res = await jar.fetch(`${h.url}/dashboard/api${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers, jar };
}

const tokenOf = (url: string) => url.split('/invite/')[1] ?? '';

async function makeLink(role: string, extra: Record<string, unknown> = {}, as = operator, inOrg = org) {
  const res = await dashboardCall(h, as, 'POST', `/orgs/${inOrg}/invitation-links`, { role, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; url: string; expires_at: string; role: string };
}

async function register(token: string, username: string, password = 'correct horse battery') {
  return publicPost('/auth/invitation/register', { token, username, password });
}

beforeAll(async () => {
  h = await startHarness();
  const jar = new CookieJar();
  const link = await issueLocalSignInLink(h.services.db, h.url);
  expect((await jar.fetch(link)).status).toBe(302);
  operator = await sessionOf(jar);
  const orgs = await dashboardCall(h, operator, 'GET', '/orgs');
  org = orgs.body.data[0].id;
});
afterAll(async () => {
  await h?.close();
});

describe('invitation links', () => {
  it('makes a one-time link whose token is stored only as its hash, listed without it', async () => {
    const before = Date.now();
    const link = await makeLink('reviewer', { project: h.admin.projectId, expires_in_days: 3 });
    expect(link.url).toMatch(new RegExp(`^${h.url}/invite/[\\w-]{43}$`));
    const expires = Date.parse(link.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 3 * 86_400_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3 * 86_400_000 + 1000);
    const token = tokenOf(link.url);
    const rows = await h.services.db.selectFrom('invitation_links').selectAll().execute();
    const row = rows.find((r) => r.id === link.id);
    expect(row?.token_hash).toBe(sha256(token));
    expect(JSON.stringify(rows)).not.toContain(token);
    const listed = await dashboardCall(h, operator, 'GET', `/orgs/${org}/invitation-links`);
    expect(listed.status).toBe(200);
    const entry = listed.body.data.find((l: { id: string }) => l.id === link.id);
    expect(entry).toMatchObject({ role: 'reviewer', status: 'pending', project_id: h.admin.projectId });
    expect(JSON.stringify(listed.body)).not.toContain(token);
    expect(JSON.stringify(listed.body)).not.toContain(row?.token_hash ?? '-');
    // A week by default.
    const plain = await makeLink('member');
    expect(Math.abs(Date.parse(plain.expires_at) - Date.now() - 7 * 86_400_000)).toBeLessThan(60_000);
  });

  it('registers a new account with the role, signs it in, and refuses the link ever after', async () => {
    const link = await makeLink('reviewer', { project: h.admin.projectId });
    const token = tokenOf(link.url);
    const seen = await publicPost('/auth/invitation', { token });
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ organization: 'default', role: 'reviewer', accounts: true });
    expect(seen.body.project).toMatchObject({ id: h.admin.projectId, name: 'main' });

    const weak = await register(token, 'rita', 'short');
    expect(weak.status).toBe(422);
    expect(JSON.stringify(weak.body)).toContain('12 to 200 characters');
    expect((await register(token, 'rita', 'rita')).status).toBe(422);
    expect((await register(token, 'x y', 'correct horse battery')).status).toBe(422);
    const foreign = await publicPost(
      '/auth/invitation/register',
      { token, username: 'rita', password: 'correct horse battery' },
      new CookieJar(),
      'https://attacker.example',
    );
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe('csrf_failed');

    const made = await register(token, 'Rita', 'correct horse battery');
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.redirect).toBe(`/projects/${h.admin.projectId}`);
    const rita = await sessionOf(made.jar);
    const me = await dashboardCall(h, rita, 'GET', '/me');
    expect(me.body.user).toMatchObject({ name: 'rita', provider: 'Name and password' });
    // A reviewer: the project itself and reviewing, nothing else of it.
    const project = await dashboardCall(h, rita, 'GET', `/projects/${h.admin.projectId}`);
    expect(project.status).toBe(200);
    expect(project.body.role).toBe('reviewer');
    expect((await dashboardCall(h, rita, 'GET', `/projects/${h.admin.projectId}/containers`)).status).toBe(
      403,
    );
    const account = await h.services.db.selectFrom('password_accounts').selectAll().executeTakeFirst();
    expect(account?.username).toBe('rita');
    expect(account?.password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(account?.password_hash).not.toContain('correct horse');

    for (const again of [await publicPost('/auth/invitation', { token }), await register(token, 'rita2')]) {
      expect(again.status).toBe(409);
      expect(again.body.error).toMatchObject({
        code: 'conflict',
        message: 'This invitation link was already used',
      });
    }
    const accept = await dashboardCall(h, operator, 'POST', '/invitation-links/accept', { token });
    expect(accept.status).toBe(409);
    const listed = await dashboardCall(h, operator, 'GET', `/orgs/${org}/invitation-links`);
    expect(listed.body.data.find((l: { id: string }) => l.id === link.id)).toMatchObject({ status: 'used' });
  });

  it('answers unknown and wrong tokens alike (404), expired and revoked ones with their reason (409)', async () => {
    const unknown = await publicPost('/auth/invitation', { token: 'x'.repeat(43) });
    const wrong = await publicPost('/auth/invitation', { token: 'nope' });
    expect(unknown.status).toBe(404);
    expect(wrong.body).toEqual(unknown.body);
    expect((await register('x'.repeat(43), 'nobody')).status).toBe(404);
    expect(
      (await dashboardCall(h, operator, 'POST', '/invitation-links/accept', { token: 'nope' })).status,
    ).toBe(404);

    const expired = await makeLink('member');
    await h.services.db
      .updateTable('invitation_links')
      .set({ expires_at: Date.now() - 1 })
      .where('id', '=', expired.id)
      .execute();
    const late = await register(tokenOf(expired.url), 'latecomer');
    expect(late.status).toBe(409);
    expect(late.body.error.message).toBe('This invitation link has expired');

    const revoked = await makeLink('member');
    const gone = await dashboardCall(h, operator, 'DELETE', `/orgs/${org}/invitation-links/${revoked.id}`);
    expect(gone.status).toBe(200);
    expect(gone.body.status).toBe('revoked');
    const refused = await register(tokenOf(revoked.url), 'revokee');
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toBe('This invitation link was revoked');
    expect(
      await h.services.db.selectFrom('password_accounts').select('username').execute(),
    ).not.toContainEqual({
      username: 'revokee',
    });
  });

  it('lets only owners make and revoke links, each in their own organization', async () => {
    const made = await register(tokenOf((await makeLink('member')).url), 'mona');
    const mona = await sessionOf(made.jar);
    expect((await dashboardCall(h, mona, 'GET', '/orgs')).body.data[0]).toMatchObject({ role: 'member' });
    const pending = await makeLink('reviewer');
    for (const role of ['reviewer', 'member', 'owner']) {
      const res = await dashboardCall(h, mona, 'POST', `/orgs/${org}/invitation-links`, { role });
      expect(res.status, role).toBe(403);
    }
    expect((await dashboardCall(h, mona, 'GET', `/orgs/${org}/invitation-links`)).status).toBe(403);
    expect(
      (await dashboardCall(h, mona, 'DELETE', `/orgs/${org}/invitation-links/${pending.id}`)).status,
    ).toBe(403);
    // Mona owns an organization of her own: the default organization's link is not found there.
    const own = await dashboardCall(h, mona, 'POST', '/orgs', { name: 'Monas' });
    const other = await dashboardCall(
      h,
      mona,
      'DELETE',
      `/orgs/${own.body.id}/invitation-links/${pending.id}`,
    );
    expect(other.status).toBe(404);
    expect((await publicPost('/auth/invitation', { token: tokenOf(pending.url) })).status).toBe(200);
    // Her links give roles in her organization only; a project of another organization is refused.
    const bad = await dashboardCall(h, mona, 'POST', `/orgs/${own.body.id}/invitation-links`, {
      role: 'member',
      project: h.admin.projectId,
    });
    expect(bad.status).toBe(422);
    expect(
      (await dashboardCall(h, operator, 'POST', `/orgs/${org}/invitation-links`, { role: 'admin' })).status,
    ).toBe(422);
    expect(
      (
        await dashboardCall(h, operator, 'POST', `/orgs/${org}/invitation-links`, {
          role: 'member',
          expires_in_days: 91,
        })
      ).status,
    ).toBe(422);
    // Without the CSRF token, or from another origin: refused like any other dashboard form.
    const noCsrf = await dashboardCall(
      h,
      { ...operator, csrf: 'wrong' },
      'POST',
      `/orgs/${org}/invitation-links`,
      {
        role: 'member',
      },
    );
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.error.code).toBe('csrf_failed');
  });

  it('lets a signed-in user accept a link into another organization, with its CSRF token', async () => {
    const own = await dashboardCall(h, operator, 'POST', '/orgs', { name: 'Second' });
    const link = await makeLink('member', {}, operator, own.body.id);
    const made = await register(tokenOf((await makeLink('reviewer')).url), 'sam');
    const sam = await sessionOf(made.jar);
    const token = tokenOf(link.url);
    const forged = await dashboardCall(h, { ...sam, csrf: 'x' }, 'POST', '/invitation-links/accept', {
      token,
    });
    expect(forged.status).toBe(403);
    const ok = await dashboardCall(h, sam, 'POST', '/invitation-links/accept', { token });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({
      organization_id: own.body.id,
      role: 'member',
      redirect: `/orgs/${own.body.id}`,
    });
    const orgs = (await dashboardCall(h, sam, 'GET', '/orgs')).body.data;
    expect(orgs.map((o: { name: string; role: string }) => [o.name, o.role])).toEqual([
      ['Second', 'member'],
      ['default', 'reviewer'],
    ]);
  });

  it('lets one of two simultaneous registrations with a link through', async () => {
    const token = tokenOf((await makeLink('member')).url);
    const both = await Promise.all([register(token, 'twin-one'), register(token, 'twin-two')]);
    expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
    const names = await h.services.db
      .selectFrom('password_accounts')
      .select('username')
      .where('username', 'like', 'twin-%')
      .execute();
    expect(names).toHaveLength(1);
  });

  it('keeps a name unique without spending the link', async () => {
    const link = await makeLink('member');
    const taken = await register(tokenOf(link.url), 'RITA');
    expect(taken.status).toBe(409);
    expect(taken.body.error.message).toContain("'rita' is taken");
    expect((await publicPost('/auth/invitation', { token: tokenOf(link.url) })).status).toBe(200);
  });

  it('signs an account in with its name and password; a wrong one reads like an unknown name', async () => {
    await register(tokenOf((await makeLink('member')).url), 'pat', 'pat’s long passphrase');
    const ok = await publicPost('/auth/password', { username: 'Pat', password: 'pat’s long passphrase' });
    expect(ok.status).toBe(200);
    const pat = await sessionOf(ok.jar);
    expect((await dashboardCall(h, pat, 'GET', '/me')).body.user.name).toBe('pat');
    const wrong = await publicPost('/auth/password', { username: 'pat', password: 'not the passphrase' });
    const unknown = await publicPost('/auth/password', {
      username: 'nobody',
      password: 'not the passphrase',
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body.error.code).toBe('sign_in_failed');
    expect(
      wrong.headers.getSetCookie().some((c) => c.startsWith('evalgate_session=') && !c.includes('=;')),
    ).toBe(false);
    const foreign = await publicPost(
      '/auth/password',
      { username: 'pat', password: 'pat’s long passphrase' },
      new CookieJar(),
      'https://attacker.example',
    );
    expect(foreign.status).toBe(403);
  });

  it('limits password attempts for a name (429 with Retry-After)', async () => {
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof publicPost>> | undefined;
    for (let i = 0; i < 12; i++) {
      last = await publicPost('/auth/password', { username: 'victim', password: `guess number ${i}` });
      statuses.push(last.status);
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.slice(10)).toEqual([429, 429]);
    expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('invitation links on a server with identity providers', () => {
  let p: Harness;
  beforeAll(async () => {
    const providers = [
      {
        id: 'a',
        issuer: 'http://127.0.0.1:9',
        client_id: 'evalgate',
        client_secret: 'secret-0123456789abcdef',
        name: 'A',
      },
    ];
    p = await startHarness({ env: { EVALGATE_OIDC_PROVIDERS: JSON.stringify(providers) } });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('makes no accounts and signs nobody in with a password', async () => {
    for (const [path, body] of [
      [
        '/auth/invitation/register',
        { token: 'x'.repeat(43), username: 'someone', password: 'correct horse battery' },
      ],
      ['/auth/password', { username: 'someone', password: 'correct horse battery' }],
    ] as const) {
      const res = await fetch(`${p.url}/dashboard/api${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: p.url },
        body: JSON.stringify(body),
      });
      expect(res.status, path).toBe(403);
      expect(
        ((await res.json()) as { error: { details?: unknown; message: string } }).error.message,
      ).toContain('identity providers');
    }
  });
});
