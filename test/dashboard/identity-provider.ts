/**
 * A real OpenID Connect provider for the dashboard tests: `oidc-provider` on a loopback port, one static
 * confidential client, and a one-field login form (the interaction the tests drive, by browser or by
 * plain HTTP). Every login name is an account: subject = the login, e-mail `<login>@example.com`
 * (verified), name from the login. Consent is granted without a prompt (a first-party client).
 */
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import Provider from 'oidc-provider';

export interface IdentityProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
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
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: login } },
        { mergeWithLastSubmission: false },
      );
    })().catch((err: Error) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(err.message);
    });
  });
  return {
    issuer,
    clientId,
    clientSecret,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
