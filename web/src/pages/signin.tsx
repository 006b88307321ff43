import { type FormEvent, useState } from 'react';
import { api, useApi } from '../api';
import { ErrorBox, Loading } from '../components';
import { Link, useLocation } from '../router';
import type { Me } from '../types';

const REASONS: Record<string, string> = {
  state_mismatch: 'The sign-in could not be matched to this browser (state check failed). Start again.',
  login_expired: 'The sign-in took too long. Start again.',
  sign_in_failed: 'The identity provider’s answer was refused. Start again, or ask your administrator.',
  issuer_mismatch:
    'The answer came from another identity provider than the one the sign-in started at (issuer check failed).',
  audience_mismatch:
    'The identity provider’s token was issued to another application (audience check failed).',
  nonce_mismatch:
    'The identity provider’s token belongs to another sign-in (nonce check failed). Start again.',
  token_expired: 'The identity provider’s token had expired (expiry check failed). Check the server’s clock.',
  token_time_invalid:
    'The identity provider’s token is not valid at this time (issued-at or not-before check failed). Check the clocks.',
  signature_invalid: 'The identity provider’s token signature did not verify (signature check failed).',
  code_rejected:
    'The identity provider refused to exchange the sign-in code (used already, expired, or issued elsewhere). Start again.',
  provider_refused: 'The identity provider refused the sign-in (for example, access was denied there).',
  provider_unavailable: 'The identity provider cannot be reached right now.',
  unknown_provider: 'That identity provider is not configured.',
  link_invalid:
    'This sign-in link was already used or has expired. Run `npx evalgate dashboard link` for a new one.',
  local_sign_in_disabled: 'Sign-in links are disabled: this server uses identity providers.',
};

/** Only a path of this site (never `//host`, `/\\host` or another scheme): where a sign-in returns to. */
function sitePath(value: string | null): string {
  if (value?.[0] !== '/' || value.startsWith('//')) return '/';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f || code === 0x5c) return '/';
  }
  return value;
}

interface Providers {
  providers: { id: string; name: string }[];
  local: boolean;
}

export function SignInPage(props: { signedIn: Me | null }) {
  const { search } = useLocation();
  const providers = useApi<Providers>('/auth/providers');
  const reason = search.get('error');
  const returnTo = sitePath(search.get('return_to'));
  return (
    <div className="signin">
      <div className="card signin-card">
        <h1>Sign in to Evalgate</h1>
        {reason && <ErrorBox error={REASONS[reason] ?? `Sign-in failed (${reason}).`} />}
        {props.signedIn && (
          <p>
            You are signed in as {props.signedIn.user.name ?? props.signedIn.user.id}.{' '}
            <Link to="/">Continue</Link>
          </p>
        )}
        {providers.loading && !providers.data && <Loading />}
        <ErrorBox error={providers.error} />
        <div className="providers">
          {providers.data?.providers.map((p) => (
            <a
              key={p.id}
              className="button primary"
              href={`/dashboard/api/auth/login/${encodeURIComponent(p.id)}?return_to=${encodeURIComponent(returnTo)}`}
            >
              Sign in with {p.name}
            </a>
          ))}
        </div>
        {providers.data?.local && (
          <>
            <PasswordForm returnTo={returnTo} />
            <p className="muted">
              The operator opens the one-time sign-in link that <code>npm start</code> printed in its terminal
              (it works once, for 15 minutes; <code>npx evalgate dashboard link</code> prints a new one).
              Others sign in with the name and password they chose when they opened their invitation link.
            </p>
          </>
        )}
      </div>
    </div>
  );
}

/** Signing in with the name and password an invitation link made (servers without identity providers). */
function PasswordForm(props: { returnTo: string }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api('/auth/password', { method: 'POST', body: { username: username.trim(), password } });
      // A whole page load, so that the app reads the new session.
      window.location.assign(props.returnTo);
    } catch (err) {
      setError(err as Error);
      setBusy(false);
    }
  };
  return (
    <form className="stack" onSubmit={submit}>
      <ErrorBox error={error} />
      <label>
        Sign-in name
        <input
          value={username}
          onChange={(e) => setUsername(e.target.value)}
          required
          maxLength={40}
          autoComplete="username"
        />
      </label>
      <label>
        Password
        <input
          type="password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          required
          autoComplete="current-password"
        />
      </label>
      <button type="submit" className="primary" disabled={busy}>
        Sign in
      </button>
    </form>
  );
}
