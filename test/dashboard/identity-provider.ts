/**
 * A real OpenID Connect provider for the dashboard tests: `oidc-provider` on a loopback port, one static
 * confidential client, and a one-field login form (the interaction the tests drive, by browser or by
 * plain HTTP). Every login name is an account: subject = the login, e-mail `<login>@example.com`
 * (verified), name from the login. Consent is granted without a prompt (a first-party client).
 *
 * `misbehave(login, fault)` makes the next sign-in of that login go wrong the way a broken or hostile
 * provider would: the login form answers `access_denied`, the token endpoint refuses the code, or the
 * ID token it issues is re-signed with one claim changed or with a key the provider does not publish.
 */
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import http from 'node:http';
import Provider from 'oidc-provider';

/** How one sign-in goes wrong at the provider. */
export type ProviderFault =
  /** The authorization endpoint sends the browser back with `error=access_denied`. */
  | 'deny_access'
  /** The token endpoint answers 400 `invalid_grant` to the code exchange. */
  | 'refuse_code'
  /** The ID token names another issuer. */
  | 'wrong_issuer'
  /** The ID token is for another client. */
  | 'wrong_audience'
  /** The ID token carries a nonce other than the one of the authorization request. */
  | 'wrong_nonce'
  /** The ID token expired an hour ago. */
  | 'expired'
  /** The ID token says it was issued an hour from now. */
  | 'issued_in_future'
  /** The ID token's `nbf` is an hour from now. */
  | 'not_yet_valid'
  /** The ID token is signed with another key under the provider's own key id. */
  | 'foreign_key'
  /** The ID token is signed with a key of an id the provider does not publish. */
  | 'unknown_key'
  /** The token endpoint answers without an ID token. */
  | 'no_id_token';

export interface IdentityProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The next sign-in of `login` fails with `fault` (later ones are fine again). */
  misbehave(login: string, fault: ProviderFault): void;
  close(): Promise<void>;
}

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact JWS (RS256) of `payload` under `header`, signed with `key`. */
function signJwt(header: Record<string, unknown>, payload: Record<string, unknown>, key: KeyObject): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

/** The ID token `fault` turns `idToken` into, signed with the provider's key unless the fault is the key. */
function tamper(idToken: string, fault: ProviderFault, own: KeyObject, other: KeyObject): string {
  const [head = '', body = ''] = idToken.split('.');
  const header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as Record<string, unknown>;
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
  const now = Math.floor(Date.now() / 1000);
  let key = own;
  switch (fault) {
    case 'wrong_issuer':
      claims.iss = 'http://127.0.0.1:9/another-issuer';
      break;
    case 'wrong_audience':
      claims.aud = 'another-client';
      break;
    case 'wrong_nonce':
      claims.nonce = 'a-nonce-of-another-login';
      break;
    case 'expired':
      Object.assign(claims, { iat: now - 7200, exp: now - 3600 });
      break;
    case 'issued_in_future':
      Object.assign(claims, { iat: now + 3600, exp: now + 7200 });
      break;
    case 'not_yet_valid':
      claims.nbf = now + 3600;
      break;
    case 'foreign_key':
      key = other;
      break;
    case 'unknown_key':
      key = other;
      header.kid = 'a-key-nobody-published';
      break;
  }
  return signJwt(header, claims, key);
}

/**
 * A loopback port held by a listening server until a provider takes it over: the providers' issuers
 * must be known before the server under test starts, and a port closed and reopened later could be
 * taken by another test in between.
 */
export interface ReservedPort {
  port: number;
  server: http.Server;
}

export async function reservePort(): Promise<ReservedPort> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return { port: address.port, server };
}

function loginPage(uid: string, issuer: string): string {
  return `<!doctype html><html><head><title>Sign in at ${issuer}</title></head><body>
<h1>Test identity provider</h1><p>${issuer}</p>
<form method="post" action="/interaction/${uid}">
<label>Login <input name="login" autofocus></label>
<button type="submit">Continue</button>
</form></body></html>`;
}

/** The faults the token endpoint plays (the others are the login form's). */
const TOKEN_FAULTS: readonly ProviderFault[] = [
  'refuse_code',
  'no_id_token',
  'wrong_issuer',
  'wrong_audience',
  'wrong_nonce',
  'expired',
  'issued_in_future',
  'not_yet_valid',
  'foreign_key',
  'unknown_key',
];

async function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export async function startIdentityProvider(options: {
  reserved: ReservedPort;
  redirectUri: string;
  clientId?: string;
  clientSecret?: string;
}): Promise<IdentityProvider> {
  const { port, server } = options.reserved;
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = options.clientId ?? 'evalgate';
  const clientSecret = options.clientSecret ?? `secret-${port}-0123456789abcdef`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: `k${port}`, use: 'sig', alg: 'RS256' };
  // A key of someone else's, for the tokens the provider does not sign with its own.
  const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const faults = new Map<string, ProviderFault>();
  /** The fault pending for `login` among `kinds`, taken (a fault applies to one sign-in). */
  const take = (login: string, kinds: readonly ProviderFault[]): ProviderFault | undefined => {
    const fault = faults.get(login);
    if (fault === undefined || !kinds.includes(fault)) return undefined;
    faults.delete(login);
    return fault;
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: [`cookie-key-${port}`] },
    ttl: {
      AccessToken: 3600,
      AuthorizationCode: 600,
      Grant: 3600,
      IdToken: 3600,
      Interaction: 3600,
      Session: 3600,
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx: unknown, sub: string) => ({
      accountId: sub,
      claims: async () => ({
        sub,
        email: `${sub}@example.com`,
        email_verified: true,
        name: sub.charAt(0).toUpperCase() + sub.slice(1),
      }),
    }),
    // A first-party client: the consent prompt is answered by a grant of everything it asks for.
    loadExistingGrant: async (ctx: any) => {
      const grantId =
        ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope('openid email profile');
      grant.addOIDCClaims(['email', 'email_verified', 'name']);
      await grant.save();
      return grant;
    },
  } as any);
  // The token endpoint's answer, as the pending fault of the token's subject changes it.
  provider.use(async (ctx: any, next: () => Promise<void>) => {
    await next();
    if (ctx.path !== '/token' || ctx.status !== 200 || typeof ctx.body?.id_token !== 'string') return;
    const [, body = ''] = (ctx.body.id_token as string).split('.');
    const sub = String(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')).sub);
    const fault = take(sub, TOKEN_FAULTS);
    if (fault === 'refuse_code') {
      ctx.status = 400;
      ctx.body = { error: 'invalid_grant', error_description: 'grant request is invalid' };
    } else if (fault === 'no_id_token') {
      const { id_token: _left, ...rest } = ctx.body;
      ctx.body = rest;
    } else if (fault !== undefined) {
      ctx.body = { ...ctx.body, id_token: tamper(ctx.body.id_token, fault, privateKey, otherKey) };
    }
  });
  const callback = provider.callback();
  server.on('request', (req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    if (!url.pathname.startsWith('/interaction/')) {
      callback(req, res);
      return;
    }
    (async () => {
      const details = await provider.interactionDetails(req, res);
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(loginPage(details.uid, issuer));
        return;
      }
      const login = (await readForm(req)).get('login')?.trim() || 'nobody';
      const result = take(login, ['deny_access'])
        ? { error: 'access_denied', error_description: 'The user did not allow the sign-in' }
        : { login: { accountId: login } };
      await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
    })().catch((err: Error) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(err.message);
    });
  });
  return {
    issuer,
    clientId,
    clientSecret,
    misbehave(login, fault) {
      faults.set(login, fault);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
