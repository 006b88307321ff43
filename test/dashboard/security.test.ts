import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { safeReturnTo } from '../../src/dashboard/auth-routes.js';
import { issueLocalSignInLink } from '../../src/dashboard/local-sign-in.js';
import { startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import {
  CookieJar,
  callback,
  type DashboardSetup,
  dashboardCall,
  ensureWebBuilt,
  loginAtProvider,
  signIn,
  startDashboard,
  startSignIn,
} from './helpers.js';
import { type IdentityProvider, reservePort, startIdentityProvider } from './identity-provider.js';

let s: DashboardSetup;
let h: Harness;
/** An identity provider Evalgate does not know, that sends its users to provider a's callback. */
let rogue: IdentityProvider;

beforeAll(async () => {
  ensureWebBuilt();
  s = await startDashboard();
  h = s.h;
  rogue = await startIdentityProvider({
    reserved: await reservePort(),
    redirectUri: `${h.url}/dashboard/api/auth/callback/a`,
  });
});
afterAll(async () => {
  await s?.close();
  await rogue?.close();
});

const json = (res: Response): Promise<any> => res.json();

const CALLBACK = () => `${h.url}/dashboard/api/auth/callback/`;

/** A refused sign-in: back to the sign-in page with a reason, and no session. */
function expectRefused(res: Response, jar: CookieJar, reason: string) {
  expect(res.status).toBe(302);
  expect(res.headers.get('location')).toBe(`/signin?error=${reason}`);
  expect(jar.get(h.url, 'evalgate_session')).toBeUndefined();
}

describe('signing in with OpenID Connect', () => {
  it('signs in through each configured provider; the same e-mail at two providers is two users', async () => {
    const providers = await json(await fetch(`${h.url}/dashboard/api/auth/providers`));
    expect(providers).toEqual({
      providers: [
        { id: 'a', name: 'Provider A' },
        { id: 'b', name: 'Provider B' },
      ],
      local: false,
    });
    const atA = await signIn(h, 'a', 'carol');
    const atB = await signIn(h, 'b', 'carol');
    expect(atA.user.email).toBe('carol@example.com');
    expect(atB.user.email).toBe('carol@example.com');
    expect(atA.user.id).not.toBe(atB.user.id);
  });

  it('sends PKCE (S256), state and nonce to the provider', async () => {
    const { authorize } = await startSignIn(h, 'a');
    expect(authorize.origin).toBe(s.a.issuer);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('code_challenge')).toBeTruthy();
    expect(authorize.searchParams.get('state')).toBeTruthy();
    expect(authorize.searchParams.get('nonce')).toBeTruthy();
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${h.url}/dashboard/api/auth/callback/a`);
  });

  it('refuses a state that is not the one this browser was given', async () => {
    const { jar, authorize } = await startSignIn(h, 'a');
    const back = await loginAtProvider(jar, authorize, 'mallory', CALLBACK());
    // Another browser (without the login cookie) presenting the same answer.
    const other = new CookieJar();
    expectRefused(await callback(other, back), other, 'state_mismatch');
    // The right browser with a state changed on the way.
    const forged = new URL(back);
    forged.searchParams.set('state', 'forged-state');
    expectRefused(await callback(jar, forged), jar, 'state_mismatch');
  });

  it('refuses an ID token whose nonce is not the one of the login', async () => {
    const { jar, authorize } = await startSignIn(h, 'a');
    const tampered = new URL(authorize);
    tampered.searchParams.set('nonce', 'a-nonce-of-the-attacker');
    const back = await loginAtProvider(jar, tampered, 'mallory', CALLBACK());
    expect(back.searchParams.get('code')).toBeTruthy();
    expectRefused(await callback(jar, back), jar, 'nonce_mismatch');
  });

  it('refuses an answer and a token from an issuer that is not configured', async () => {
    // The login starts at provider a, but the browser is sent to a provider Evalgate does not know.
    for (const keepIss of [true, false]) {
      const { jar, authorize } = await startSignIn(h, 'a');
      const elsewhere = new URL(`${rogue.issuer}/auth${authorize.search}`);
      const back = await loginAtProvider(jar, elsewhere, 'mallory', CALLBACK());
      expect(back.searchParams.get('iss')).toBe(rogue.issuer);
      if (!keepIss) back.searchParams.delete('iss');
      // Named by the check that failed: the answer's `iss` is another issuer's, or missing although
      // provider a says it sends one.
      expectRefused(await callback(jar, back), jar, 'issuer_mismatch');
    }
    // A callback for a provider that is not configured at all.
    const jar = new CookieJar();
    expectRefused(
      await callback(jar, `${h.url}/dashboard/api/auth/callback/zzz?code=x&state=y`),
      jar,
      'unknown_provider',
    );
    expect((await fetch(`${h.url}/dashboard/api/auth/login/zzz`, { redirect: 'manual' })).status).toBe(404);
  });

  it('uses a login state once', async () => {
    const { jar, authorize } = await startSignIn(h, 'b');
    const back = await loginAtProvider(jar, authorize, 'dave', CALLBACK());
    const state = jar.get(h.url, 'evalgate_login') ?? '';
    expect((await callback(jar, back)).status).toBe(302);
    expect(jar.get(h.url, 'evalgate_session')).toBeTruthy();
    const again = new CookieJar();
    again.set(h.url, 'evalgate_login', state);
    expectRefused(await callback(again, back), again, 'state_mismatch');
  });

  it('returns to the page the user came from, and only to a page of this site', async () => {
    const jar = new CookieJar();
    const start = await jar.fetch(
      `${h.url}/dashboard/api/auth/login/b?return_to=${encodeURIComponent('/orgs/x?tab=1')}`,
    );
    const back = await loginAtProvider(
      jar,
      new URL(start.headers.get('location') ?? ''),
      'olivia',
      CALLBACK(),
    );
    const res = await callback(jar, back);
    expect(res.headers.get('location')).toBe('/orgs/x?tab=1');
    for (const [given, kept] of [
      ['/projects/p/runs', '/projects/p/runs'],
      ['//evil.example/x', '/'],
      ['/\\evil.example', '/'],
      ['/\t/evil.example', '/'],
      ['https://evil.example', '/'],
      ['/dashboard/api/auth/logout', '/'],
      [undefined, '/'],
    ] as const) {
      expect(safeReturnTo(given), String(given)).toBe(kept);
    }
  });
});

describe('sessions', () => {
  it('sets the session cookie HttpOnly, SameSite=Lax, on the dashboard API path, with an expiry', async () => {
    const { jar, authorize } = await startSignIn(h, 'a');
    const back = await loginAtProvider(jar, authorize, 'erin', CALLBACK());
    const res = await callback(jar, back);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('evalgate_session='));
    expect(cookie).toBeDefined();
    const attributes = (cookie ?? '').split(';').map((a) => a.trim().toLowerCase());
    expect(attributes).toContain('httponly');
    expect(attributes).toContain('samesite=lax');
    expect(attributes).toContain('path=/dashboard/api');
    expect(attributes).not.toContain('secure');
    expect(attributes).toContain(`max-age=${7 * 24 * 3600}`);
    const expires = Date.parse((cookie ?? '').match(/Expires=([^;]+)/)?.[1] ?? '');
    expect(Math.abs(expires - (Date.now() + 7 * 24 * 3600 * 1000))).toBeLessThan(60_000);
    // The login cookie is cleared once used.
    expect(res.headers.getSetCookie().some((c) => /^evalgate_login=;.*Max-Age=0/i.test(c))).toBe(true);
  });

  it('ends a session at sign-out and when it expires', async () => {
    const first = await signIn(h, 'a', 'frank');
    expect((await dashboardCall(h, first, 'POST', '/auth/logout')).status).toBe(204);
    expect(first.jar.get(h.url, 'evalgate_session')).toBeUndefined();
    expect((await first.jar.fetch(`${h.url}/dashboard/api/me`)).status).toBe(401);

    const second = await signIn(h, 'a', 'frank');
    const token = second.jar.get(h.url, 'evalgate_session') ?? '';
    await h.services.db
      .updateTable('sessions')
      .set({ expires_at: Date.now() - 1 })
      .execute();
    const expired = await fetch(`${h.url}/dashboard/api/me`, {
      headers: { cookie: `evalgate_session=${token}` },
    });
    expect(expired.status).toBe(401);
    expect((await json(expired)).error.code).toBe('not_signed_in');
  });

  it('refuses state-changing requests without the CSRF token or from another origin (403)', async () => {
    const session = await signIn(h, 'a', 'grace');
    const cases: [string, Record<string, string>][] = [
      ['no token', { 'x-csrf-token': '' }],
      ['a wrong token', { 'x-csrf-token': `${session.csrf}x` }],
      ['another origin', { origin: 'http://evil.example' }],
      ['no origin', { origin: '' }],
    ];
    for (const [what, headers] of cases) {
      const res = await dashboardCall(h, session, 'POST', '/orgs', { name: `csrf-${what}` }, headers);
      expect(res.status, what).toBe(403);
      expect(res.body.error.code, what).toBe('csrf_failed');
    }
    const fine = await dashboardCall(h, session, 'POST', '/orgs', { name: 'grace-org' });
    expect(fine.status).toBe(201);
    // A name already taken is a conflict, in the error envelope.
    const again = await dashboardCall(h, session, 'POST', '/orgs', { name: 'grace-org' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
    // Reads need no token.
    const read = await session.jar.fetch(`${h.url}/dashboard/api/orgs`);
    expect(read.status).toBe(200);
  });
});

describe('tenancy', () => {
  it("answers 404 for another organization's projects, keys and runs", async () => {
    const owner = await signIn(h, 'a', 'heidi');
    const org = await dashboardCall(h, owner, 'POST', '/orgs', { name: 'heidi-org' });
    const project = await dashboardCall(h, owner, 'POST', `/orgs/${org.body.id}/projects`, {
      name: 'heidi-app',
    });
    expect(project.status).toBe(201);
    const key = await dashboardCall(h, owner, 'POST', `/projects/${project.body.id}/keys`, {
      name: 'ci',
      permissions: ['*'],
    });
    expect(key.status).toBe(201);

    const stranger = await signIn(h, 'b', 'ivan');
    for (const path of [
      `/projects/${project.body.id}`,
      `/projects/${project.body.id}/keys`,
      `/projects/${project.body.id}/runs`,
      `/projects/${project.body.id}/runs/run_nope`,
      `/projects/${project.body.id}/evaluators`,
      `/orgs/${org.body.id}`,
    ]) {
      const res = await dashboardCall(h, stranger, 'GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const steal = await dashboardCall(h, stranger, 'POST', `/projects/${project.body.id}/keys`, {
      name: 'stolen',
      permissions: ['*'],
    });
    expect(steal.status).toBe(404);
    const revoke = await dashboardCall(
      h,
      stranger,
      'DELETE',
      `/projects/${project.body.id}/keys/${key.body.id}`,
    );
    expect(revoke.status).toBe(404);
    // Budgets: the owner sets and reads them; a stranger can do neither.
    const base = `/projects/${project.body.id}`;
    const keyBudget = await dashboardCall(h, owner, 'PUT', `${base}/keys/${key.body.id}/budget`, {
      budget: { limit_usd: 5, period: 'day' },
    });
    expect(keyBudget.status).toBe(200);
    expect(keyBudget.body).toMatchObject({ budget: { limit_usd: 5, period: 'day' }, spend: { used_usd: 0 } });
    const listed = await dashboardCall(h, owner, 'GET', `${base}/keys`);
    expect(listed.body.data[0]).toMatchObject({ budget: { limit_usd: 5, period: 'day' } });
    const bad = await dashboardCall(h, owner, 'PUT', `${base}/budget`, {
      budget: { limit_usd: -1, period: 'week' },
    });
    expect(bad.status).toBe(422);
    const own = await dashboardCall(h, owner, 'PUT', `${base}/budget`, {
      budget: { limit_usd: 50, period: 'month' },
    });
    expect(own.body.budget).toEqual({ limit_usd: 50, period: 'month' });
    for (const [method, path, body] of [
      ['GET', `${base}/budget`, undefined],
      ['PUT', `${base}/budget`, { budget: null }],
      ['PUT', `${base}/keys/${key.body.id}/budget`, { budget: null }],
    ] as const) {
      expect((await dashboardCall(h, stranger, method, path, body)).status, `${method} ${path}`).toBe(404);
    }
    expect((await dashboardCall(h, owner, 'GET', `${base}/budget`)).body.budget).toEqual({
      limit_usd: 50,
      period: 'month',
    });
    // A project of the harness (made by the CLI-like path) is nobody's in the dashboard either.
    expect((await dashboardCall(h, stranger, 'GET', `/projects/${h.admin.projectId}`)).status).toBe(404);
  });

  it('lets an owner invite by e-mail; only the user with that verified e-mail can accept', async () => {
    const owner = await signIn(h, 'a', 'judy');
    const org = await dashboardCall(h, owner, 'POST', '/orgs', { name: 'judy-org' });
    const invited = await dashboardCall(h, owner, 'POST', `/orgs/${org.body.id}/invitations`, {
      email: 'Kim@Example.com',
      role: 'member',
    });
    expect(invited.status).toBe(201);
    const other = await signIn(h, 'b', 'leo');
    expect((await dashboardCall(h, other, 'GET', '/orgs')).body.invitations).toEqual([]);
    expect((await dashboardCall(h, other, 'POST', `/invitations/${invited.body.id}/accept`)).status).toBe(
      404,
    );

    const kim = await signIn(h, 'b', 'kim');
    const mine = await dashboardCall(h, kim, 'GET', '/orgs');
    expect(mine.body.invitations.map((i: { id: string }) => i.id)).toEqual([invited.body.id]);
    expect((await dashboardCall(h, kim, 'POST', `/invitations/${invited.body.id}/accept`)).status).toBe(200);
    const detail = await dashboardCall(h, kim, 'GET', `/orgs/${org.body.id}`);
    expect(detail.body.role).toBe('member');
    expect(detail.body.invitations).toEqual([]);
    // A member neither invites nor removes; used invitations stay used.
    expect(
      (
        await dashboardCall(h, kim, 'POST', `/orgs/${org.body.id}/invitations`, {
          email: 'x@example.com',
          role: 'owner',
        })
      ).status,
    ).toBe(403);
    expect((await dashboardCall(h, kim, 'POST', `/invitations/${invited.body.id}/accept`)).status).toBe(409);
  });
});

describe('project resources through the dashboard', () => {
  it('creates a container, datasets (JSON and JSON lines), an evaluator and a run, and cancels the run', async () => {
    // A judge that never answers in time: the run stays running until it is cancelled.
    const slow = await startMockUpstream({ latencyMs: 30_000 });
    try {
      const owner = await signIn(h, 'a', 'nina');
      const org = await dashboardCall(h, owner, 'POST', '/orgs', { name: 'nina-org' });
      const project = await dashboardCall(h, owner, 'POST', `/orgs/${org.body.id}/projects`, {
        name: 'nina-app',
      });
      const base = `/projects/${project.body.id}`;
      const key = await dashboardCall(h, owner, 'POST', `${base}/keys`, {
        name: 'setup',
        permissions: ['models:write'],
      });
      const model = await fetch(`${h.url}/v1/models`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.body.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          label: 'slow',
          provider: 'openai-compatible',
          base_url: slow.baseUrl,
          upstream_model: 'm',
        }),
      });
      expect(model.status).toBe(201);

      expect((await dashboardCall(h, owner, 'POST', `${base}/containers`, { label: 'app' })).status).toBe(
        201,
      );
      const items = [1, 2, 3].map((i) => ({ input: `q${i}`, output: `a${i}`, expected: `a${i}` }));
      expect((await dashboardCall(h, owner, 'POST', `${base}/datasets`, { label: 'qa', items })).status).toBe(
        201,
      );
      const lines = await owner.jar.fetch(`${h.url}/dashboard/api${base}/datasets?label=qa-lines`, {
        method: 'POST',
        headers: { origin: h.url, 'x-csrf-token': owner.csrf, 'content-type': 'application/x-ndjson' },
        body: items.map((i) => JSON.stringify(i)).join('\n'),
      });
      expect(lines.status).toBe(201);
      expect((await json(lines)).item_count).toBe(3);
      const rows = await dashboardCall(h, owner, 'GET', `${base}/datasets/qa-lines/items?limit=2`);
      expect(rows.body.total).toBe(3);
      expect(rows.body.data[1].data).toEqual(items[1]);
      // CSV, as the API and the CLI take it; a malformed one is a 422 naming its line.
      const csv = await owner.jar.fetch(`${h.url}/dashboard/api${base}/datasets?label=qa-csv`, {
        method: 'POST',
        headers: { origin: h.url, 'x-csrf-token': owner.csrf, 'content-type': 'text/csv' },
        body: 'input,output,expected\nq1,a1,a1\n"q, 2",a2,a2\n',
      });
      expect(csv.status).toBe(201);
      expect((await json(csv)).item_count).toBe(2);
      const csvRows = await dashboardCall(h, owner, 'GET', `${base}/datasets/qa-csv/items?limit=2`);
      expect(csvRows.body.data[1].data).toMatchObject({ input: 'q, 2', output: 'a2', expected: 'a2' });
      const badCsv = await owner.jar.fetch(`${h.url}/dashboard/api${base}/datasets?label=qa-bad`, {
        method: 'POST',
        headers: { origin: h.url, 'x-csrf-token': owner.csrf, 'content-type': 'text/csv' },
        body: 'input,expected\n"open,4\n',
      });
      expect(badCsv.status).toBe(422);
      expect(JSON.stringify(await json(badCsv))).toMatch(/Line 2 of the CSV/);

      const evaluator = await dashboardCall(h, owner, 'POST', `${base}/evaluators`, {
        type: 'judge',
        name: 'same',
        model: 'slow',
        prompt: 'Same? {{output}} {{expected}}',
      });
      expect(evaluator.status).toBe(201);
      const patched = await dashboardCall(h, owner, 'PATCH', `${base}/evaluators/same`, {
        pass_threshold: 0.5,
      });
      expect(patched.body.pass_threshold).toBe(0.5);

      const run = await dashboardCall(h, owner, 'POST', `${base}/runs`, {
        container: 'app',
        evaluators: ['same'],
        sample: { type: 'dataset', dataset: 'qa' },
      });
      expect(run.status).toBe(201);
      await slow.until(() => slow.requests.length > 0, 10_000);
      const cancelled = await dashboardCall(h, owner, 'POST', `${base}/runs/${run.body.id}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.status).toBe('cancelled');
      const detail = await dashboardCall(h, owner, 'GET', `${base}/runs/${run.body.id}`);
      expect(detail.body).toMatchObject({
        run: { id: run.body.id, status: 'cancelled' },
        container_label: 'app',
        evaluators: [{ id: evaluator.body.id, name: 'same', type: 'judge' }],
        launches: [{ index: 0, model: null }],
      });
      expect(Object.values(detail.body.labels)).toEqual(expect.arrayContaining(['qa']));
      const listed = await dashboardCall(h, owner, 'GET', `${base}/runs?status=cancelled`);
      expect(listed.body.data.map((r: { id: string }) => r.id)).toEqual([run.body.id]);
      // The project's runs are not another project's: the harness's own project does not see it.
      const other = await fetch(`${h.url}/v1/evaluation/runs/${run.body.id}`, {
        headers: { authorization: `Bearer ${h.admin.key}` },
      });
      expect(other.status).toBe(404);
    } finally {
      await slow.close();
    }
  });
});

describe('keys and cookies stay apart', () => {
  it('refuses API keys on dashboard endpoints and the session cookie on the API (401)', async () => {
    const session = await signIn(h, 'a', 'mike');
    const org = await dashboardCall(h, session, 'POST', '/orgs', { name: 'mike-org' });
    const project = await dashboardCall(h, session, 'POST', `/orgs/${org.body.id}/projects`, {
      name: 'mike-app',
    });
    const key = await dashboardCall(h, session, 'POST', `/projects/${project.body.id}/keys`, {
      name: 'ci',
      permissions: ['*'],
    });
    const bearer = `Bearer ${key.body.key}`;
    expect((await fetch(`${h.url}/v1/evaluators`, { headers: { authorization: bearer } })).status).toBe(200);

    for (const path of ['/me', `/projects/${project.body.id}/runs`, '/auth/providers']) {
      const withKey = await fetch(`${h.url}/dashboard/api${path}`, { headers: { authorization: bearer } });
      expect(withKey.status, path).toBe(401);
      expect((await json(withKey)).error.code).toBe('api_key_not_accepted');
    }
    // Not even together with a valid session.
    const both = await dashboardCall(h, session, 'GET', '/me', undefined, { authorization: bearer });
    expect(both.status).toBe(401);

    const cookie = `evalgate_session=${session.jar.get(h.url, 'evalgate_session')}`;
    for (const path of ['/v1/evaluators', `/v1/evaluation/runs`, '/v1/api-keys']) {
      const res = await fetch(`${h.url}${path}`, { headers: { cookie } });
      expect(res.status, path).toBe(401);
      expect((await json(res)).error.code).toBe('invalid_api_key');
    }
    const post = await fetch(`${h.url}/v1/containers`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', origin: h.url, 'x-csrf-token': session.csrf },
      body: JSON.stringify({ label: 'nope' }),
    });
    expect(post.status).toBe(401);
  });
});

describe('the local sign-in link (no provider configured)', () => {
  let local: Harness;
  beforeAll(async () => {
    local = await startHarness({
      env: { EVALGATE_PUBLIC_URL: 'https://evalgate.example.test', EVALGATE_SESSION_TTL_MS: '3600000' },
    });
  });
  afterAll(async () => {
    await local?.close();
  });

  it('signs the operator in once; the cookie is Secure behind an https public URL', async () => {
    const link = await issueLocalSignInLink(local.services.db, 'https://evalgate.example.test');
    expect(link).toMatch(/^https:\/\/evalgate\.example\.test\/dashboard\/api\/auth\/local\?token=[\w-]{43}$/);
    const path = link.slice('https://evalgate.example.test'.length);
    const first = await fetch(`${local.url}${path}`, { redirect: 'manual' });
    expect(first.status).toBe(302);
    expect(first.headers.get('location')).toBe('/');
    const cookie = first.headers.getSetCookie().find((c) => c.startsWith('evalgate_session=')) ?? '';
    const attributes = cookie.split(';').map((a) => a.trim().toLowerCase());
    expect(attributes).toEqual(
      expect.arrayContaining(['httponly', 'samesite=lax', 'secure', 'path=/dashboard/api', 'max-age=3600']),
    );
    const second = await fetch(`${local.url}${path}`, { redirect: 'manual' });
    expect(second.status).toBe(302);
    expect(second.headers.get('location')).toBe('/signin?error=link_invalid');
    expect(
      second.headers
        .getSetCookie()
        .some((c) => c.startsWith('evalgate_session=') && !c.startsWith('evalgate_session=;')),
    ).toBe(false);

    // The operator owns the organizations nobody owned (the harness's `default`).
    const session = cookie.split(';')[0] ?? '';
    const orgs = await fetch(`${local.url}/dashboard/api/orgs`, { headers: { cookie: session } });
    const body = await json(orgs);
    expect(body.data.map((o: { name: string; role: string }) => [o.name, o.role])).toEqual([
      ['default', 'owner'],
    ]);
    // Behind the https public URL, only that origin may change state.
    const refused = await fetch(`${local.url}/dashboard/api/orgs`, {
      method: 'POST',
      headers: { cookie: session, origin: local.url, 'content-type': 'application/json' },
      body: '{"name":"x"}',
    });
    expect(refused.status).toBe(403);
  });

  it('refuses a wrong or expired token, and is off when providers are configured', async () => {
    const wrong = await fetch(`${local.url}/dashboard/api/auth/local?token=nope`, { redirect: 'manual' });
    expect(wrong.headers.get('location')).toBe('/signin?error=link_invalid');
    const link = await issueLocalSignInLink(local.services.db, local.url);
    await local.services.db
      .updateTable('sign_in_tokens')
      .set({ expires_at: Date.now() - 1 })
      .execute();
    const expired = await fetch(link, { redirect: 'manual' });
    expect(expired.headers.get('location')).toBe('/signin?error=link_invalid');

    const withProviders = await issueLocalSignInLink(h.services.db, h.url);
    const off = await fetch(withProviders, { redirect: 'manual' });
    expect(off.headers.get('location')).toBe('/signin?error=local_sign_in_disabled');
  });
});

describe('the web app', () => {
  it('is served at / and its pages, with local assets only, never shadowing the API', async () => {
    for (const path of ['/', '/signin', '/projects/prj_x/runs', '/orgs/org_x', '/invite/abc']) {
      const res = await fetch(`${h.url}${path}`, { headers: { accept: 'text/html' } });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      const html = await res.text();
      const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
      expect(refs.length).toBeGreaterThan(0);
      for (const ref of refs) expect(ref, ref).toMatch(/^(\/assets\/|data:)/);
      for (const ref of refs.filter((r) => r.startsWith('/assets/'))) {
        const asset = await fetch(`${h.url}${ref}`, { headers: { 'accept-encoding': 'br' } });
        expect(asset.status, ref).toBe(200);
        expect(asset.headers.get('content-encoding')).toBe('br');
        expect(asset.headers.get('cache-control')).toContain('immutable');
      }
    }
    expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${h.url}/openapi.json`)).status).toBe(200);
    const doc = await json(await fetch(`${h.url}/openapi.json`));
    // The API lives under /v1/ (and /v1beta/, the path Google's SDK calls Gemini's dialect at), none of
    // it under a page of the app.
    expect(
      Object.keys(doc.paths).filter(
        (p) => !p.startsWith('/v1/') && !p.startsWith('/v1beta/') && !['/healthz', '/metrics'].includes(p),
      ),
    ).toEqual([]);
    // A page load there gets the API's answer (its route takes POST only), never the app.
    const gemini = await fetch(`${h.url}/v1beta/models/nope`, { headers: { accept: 'text/html' } });
    expect(gemini.status).toBe(405);
    expect(gemini.headers.get('content-type')).toMatch(/json/);
    for (const path of ['/nope', '/v1/nope', '/assets/nope.js', '/dashboard/api/nope']) {
      const res = await fetch(`${h.url}${path}`, { headers: { accept: 'text/html' } });
      expect(res.status, path).toBe(404);
      expect((await json(res)).error.code).toBe('not_found');
    }
    expect((await fetch(`${h.url}/v1/evaluators`)).status).toBe(401);
    expect((await fetch(`${h.url}/metrics`)).status).toBe(401);
  });
});
