import * as client from 'openid-client';
import type { OidcProviderSettings } from '../config.js';

/** What the dashboard keeps of a validated ID token (and, where it lacks them, of the userinfo answer). */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

/** A login just started: where to send the browser, and the secrets its callback is checked against. */
export interface StartedLogin {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** Plain http is accepted only for issuers on this machine (a development or test identity provider). */
function isLoopback(url: URL): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

/** Every provider's discovery timeout, in seconds. */
const DISCOVERY_TIMEOUT_S = 10;

/** How far a token's times may be off this machine's clock (openid-client's default for `exp`, `nbf`). */
const CLOCK_TOLERANCE_S = 30;

/**
 * The configured OpenID Connect providers (`EVALGATE_OIDC_PROVIDERS`). Each is discovered from its issuer
 * on first use (and again after a failure); the authorization code flow uses PKCE (S256), `state` and
 * `nonce`, and openid-client validates the ID token (signature, issuer, audience, expiry, nonce) and the
 * authorization response (state, and `iss` where the provider sends it).
 */
export class OidcProviders {
  readonly #settings: Map<string, OidcProviderSettings>;
  readonly #configurations = new Map<string, Promise<client.Configuration>>();

  constructor(providers: readonly OidcProviderSettings[]) {
    this.#settings = new Map(providers.map((p) => [p.id, p]));
  }

  get size(): number {
    return this.#settings.size;
  }

  list(): { id: string; name: string }[] {
    return [...this.#settings.values()].map((p) => ({ id: p.id, name: p.name }));
  }

  find(id: string): OidcProviderSettings | undefined {
    return this.#settings.get(id);
  }

  /** Discovers every provider now: null for each one that answered, else why it did not. */
  async check(): Promise<Map<string, string | null>> {
    const entries = await Promise.all(
      [...this.#settings.values()].map(async (p): Promise<[string, string | null]> => {
        try {
          await this.#configuration(p);
          return [p.id, null];
        } catch (err) {
          return [p.id, failureText(err)];
        }
      }),
    );
    return new Map(entries);
  }

  #configuration(provider: OidcProviderSettings): Promise<client.Configuration> {
    let found = this.#configurations.get(provider.id);
    if (!found) {
      found = discover(provider);
      // A provider that was down is asked again next time.
      found.catch(() => this.#configurations.delete(provider.id));
      this.#configurations.set(provider.id, found);
    }
    return found;
  }

  async start(provider: OidcProviderSettings, redirectUri: string): Promise<StartedLogin> {
    const configuration = await this.#configuration(provider);
    const state = client.randomState();
    const nonce = client.randomNonce();
    const codeVerifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'openid email profile',
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url, state, nonce, codeVerifier };
  }

  /**
   * The identity of an authorization response (`callbackUrl` as the browser reached it, on the public
   * URL, so that its origin and path are the redirect URI). Throws on any mismatch.
   */
  async finish(
    provider: OidcProviderSettings,
    callbackUrl: URL,
    checks: { state: string; nonce: string; codeVerifier: string },
  ): Promise<OidcIdentity> {
    const configuration = await this.#configuration(provider);
    const tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      pkceCodeVerifier: checks.codeVerifier,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims) throw new Error('The provider returned no ID token');
    // openid-client checks `exp` and `nbf` but not an `iat` in the future: a token from a provider whose
    // clock is ahead (or that was forged) is refused, with the same tolerance openid-client allows.
    const now = Math.floor(Date.now() / 1000);
    if (claims.iat > now + CLOCK_TOLERANCE_S) {
      throw new IdTokenRefused(
        'token_time_invalid',
        `ID token issued in the future (iat ${claims.iat}, now ${now})`,
      );
    }
    let email = typeof claims.email === 'string' ? claims.email : null;
    let verified = claims.email_verified === true;
    let name = typeof claims.name === 'string' ? claims.name : null;
    if (email === null && tokens.access_token) {
      // Some providers leave the e-mail out of the ID token; the userinfo endpoint has it.
      const info = await client
        .fetchUserInfo(configuration, tokens.access_token, claims.sub)
        .catch(() => null);
      if (info && typeof info.email === 'string') {
        email = info.email;
        verified = info.email_verified === true;
        name ??= typeof info.name === 'string' ? info.name : null;
      }
    }
    return { issuer: provider.issuer, subject: claims.sub, email, emailVerified: verified, name };
  }
}

/** An error and its causes in one line (`fetch failed: connect ECONNREFUSED 127.0.0.1:9`). */
function failureText(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current.message && !parts.includes(current.message)) parts.push(current.message);
    current = current.cause;
  }
  return parts.join(': ') || String(err);
}

async function discover(provider: OidcProviderSettings): Promise<client.Configuration> {
  const issuer = new URL(provider.issuer);
  const insecure = issuer.protocol === 'http:';
  if (insecure && !isLoopback(issuer)) {
    throw new Error(`Issuer ${provider.issuer} must use https (plain http only on localhost)`);
  }
  const execute = insecure ? [client.allowInsecureRequests] : [];
  const discovered = await client.discovery(issuer, provider.clientId, provider.clientSecret, undefined, {
    execute,
    timeout: DISCOVERY_TIMEOUT_S,
  });
  // client_secret_basic is the protocol's default; _post only where the provider supports nothing else.
  const methods = discovered.serverMetadata().token_endpoint_auth_methods_supported;
  const auth =
    methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
      ? client.ClientSecretPost(provider.clientSecret)
      : client.ClientSecretBasic(provider.clientSecret);
  const configuration = new client.Configuration(
    discovered.serverMetadata(),
    provider.clientId,
    provider.clientSecret,
    auth,
  );
  configuration.timeout = DISCOVERY_TIMEOUT_S;
  if (insecure) client.allowInsecureRequests(configuration);
  // The ID token's signature is checked against the provider's published keys (jwks_uri): without this,
  // openid-client trusts a token from the token endpoint on the strength of the connection alone.
  client.enableNonRepudiationChecks(configuration);
  return configuration;
}

/** Why a provider's answer was refused: the check that failed, as the sign-in page names it. */
export type RefusalReason =
  | 'issuer_mismatch'
  | 'audience_mismatch'
  | 'nonce_mismatch'
  | 'state_mismatch'
  | 'token_expired'
  | 'token_time_invalid'
  | 'signature_invalid'
  | 'code_rejected'
  | 'provider_refused'
  | 'sign_in_failed';

/** A check of the ID token the dashboard makes itself (beyond openid-client's), with its reason. */
export class IdTokenRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'IdTokenRefused';
  }
}

/** The claim or check an openid-client (oauth4webapi) error names, read from its chain of causes. */
export function refusalReason(err: unknown): RefusalReason {
  if (err instanceof IdTokenRefused) return err.reason;
  let claim: unknown;
  let code: unknown;
  const messages: string[] = [];
  let current: unknown = err;
  const names: string[] = [];
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    const e = current as {
      name?: unknown;
      message?: unknown;
      code?: unknown;
      cause?: unknown;
      claim?: unknown;
    };
    if (typeof e.name === 'string') names.push(e.name);
    if (typeof e.message === 'string') messages.push(e.message);
    if (typeof e.code === 'string' && e.code.startsWith('OAUTH_')) code ??= e.code;
    if (e.claim !== undefined) claim ??= e.claim;
    current = e.cause;
  }
  const text = messages.join(' | ');
  if (names.includes('AuthorizationResponseError')) return 'provider_refused';
  if (names.includes('ResponseBodyError')) return 'code_rejected';
  if (claim === 'iss' || text.includes('"iss" (issuer)') || text.includes('"issuer"'))
    return 'issuer_mismatch';
  if (claim === 'aud' || claim === 'azp') return 'audience_mismatch';
  if (claim === 'nonce') return 'nonce_mismatch';
  if (text.includes('"state" response parameter')) return 'state_mismatch';
  if (code === 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED')
    return claim === 'exp' ? 'token_expired' : 'token_time_invalid';
  // Signed with another key: one the provider publishes under that key id, or none it publishes.
  if (text.includes('signature verification failed') || code === 'OAUTH_KEY_SELECTION_FAILED')
    return 'signature_invalid';
  return 'sign_in_failed';
}
