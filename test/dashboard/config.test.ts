// Database-independent: the dashboard's configuration, parsed from the environment.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const provider = (extra: Record<string, unknown> = {}) => ({
  id: 'corp',
  issuer: 'https://sso.example.com/realms/staff',
  client_id: 'evalgate',
  client_secret: 's3cret',
  name: 'Example SSO',
  ...extra,
});
const load = (env: Record<string, string>) =>
  loadConfig({ EVALGATE_DATA_DIR: '/tmp/evalgate-config-test', ...env });

describe('dashboard settings', () => {
  it('defaults to no providers, no public URL and a 7-day session', () => {
    expect(load({}).dashboard).toEqual({
      providers: [],
      publicUrl: null,
      sessionTtlMs: 604_800_000,
      adminEmail: null,
    });
  });

  it('reads EVALGATE_ADMIN_EMAIL as one lower-cased address', () => {
    expect(load({ EVALGATE_ADMIN_EMAIL: ' Ops@Example.com ' }).dashboard.adminEmail).toBe('ops@example.com');
  });

  it('parses two providers, keeping each issuer exactly as given', () => {
    const google = {
      id: 'google',
      issuer: 'https://accounts.google.com/',
      client_id: 'g',
      client_secret: 'x',
      name: 'Google',
    };
    const config = load({
      EVALGATE_OIDC_PROVIDERS: JSON.stringify([provider(), google]),
      EVALGATE_PUBLIC_URL: 'https://evalgate.example.com/',
      EVALGATE_SESSION_TTL_MS: '3600000',
    });
    expect(config.dashboard).toEqual({
      providers: [
        {
          id: 'corp',
          issuer: 'https://sso.example.com/realms/staff',
          clientId: 'evalgate',
          clientSecret: 's3cret',
          name: 'Example SSO',
        },
        {
          id: 'google',
          issuer: 'https://accounts.google.com/',
          clientId: 'g',
          clientSecret: 'x',
          name: 'Google',
        },
      ],
      publicUrl: 'https://evalgate.example.com',
      sessionTtlMs: 3_600_000,
      adminEmail: null,
    });
  });

  it('refuses bad values with a message naming the variable', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ EVALGATE_ADMIN_EMAIL: 'ops, boss@example.com' }, /^EVALGATE_ADMIN_EMAIL must be one e-mail address/],
      [{ EVALGATE_OIDC_PROVIDERS: '{not json' }, /^EVALGATE_OIDC_PROVIDERS must be a JSON array/],
      [{ EVALGATE_OIDC_PROVIDERS: '{}' }, /^EVALGATE_OIDC_PROVIDERS must be a JSON array/],
      [{ EVALGATE_OIDC_PROVIDERS: '[1]' }, /^EVALGATE_OIDC_PROVIDERS\[0\] must be an object/],
      [
        { EVALGATE_OIDC_PROVIDERS: JSON.stringify([provider({ issuer: 'ftp://x' })]) },
        /EVALGATE_OIDC_PROVIDERS\[0\]\.issuer/,
      ],
      [
        { EVALGATE_OIDC_PROVIDERS: JSON.stringify([provider({ client_secret: '' })]) },
        /\[0\]\.client_secret must be a non-empty/,
      ],
      [
        { EVALGATE_OIDC_PROVIDERS: JSON.stringify([provider({ id: 'Bad Id' })]) },
        /\[0\]\.id must be lower-case/,
      ],
      [
        { EVALGATE_OIDC_PROVIDERS: JSON.stringify([provider(), provider()]) },
        /\[1\]\.id "corp" is used by another/,
      ],
      [
        { EVALGATE_OIDC_PROVIDERS: JSON.stringify([provider({ scope: 'x' })]) },
        /\[0\] has unknown fields: scope/,
      ],
      [{ EVALGATE_PUBLIC_URL: 'https://example.com/evalgate' }, /^EVALGATE_PUBLIC_URL must be an origin/],
      [{ EVALGATE_PUBLIC_URL: 'example.com' }, /^EVALGATE_PUBLIC_URL must be an http\(s\) URL/],
      [{ EVALGATE_SESSION_TTL_MS: '10' }, /^EVALGATE_SESSION_TTL_MS must be between/],
    ];
    for (const [env, message] of cases) {
      expect(() => load(env), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => load(env), JSON.stringify(env)).toThrow(message);
    }
  });
});
