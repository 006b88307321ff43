import { type FormEvent, useEffect, useState } from 'react';
import { api } from '../api';
import { ErrorBox, fmtDate, Loading } from '../components';
import type { InvitationLinkInfo, Me } from '../types';

const ROLE_TEXT: Record<string, string> = {
  owner: 'an owner (everything, members and invitations too)',
  member: 'a member (everything in its projects)',
  reviewer: 'a reviewer (review only)',
};

/** Where a browser goes after joining: a whole page load, so that the app reads the new session. */
function land(to: string): void {
  window.location.assign(to);
}

/** A new account with a name and password, made by the link (servers without identity providers). */
function AccountForm(props: { token: string }) {
  const [username, setUsername] = useState('');
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState<Error | string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (password !== again) return setError('The two passwords differ.');
    setBusy(true);
    setError(undefined);
    try {
      const made = await api<{ redirect: string }>('/auth/invitation/register', {
        method: 'POST',
        body: {
          token: props.token,
          username: username.trim(),
          password,
          ...(name.trim() ? { name: name.trim() } : {}),
        },
      });
      land(made.redirect);
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
          minLength={3}
          maxLength={40}
          pattern="[A-Za-z0-9][A-Za-z0-9._\-]{2,39}"
          autoComplete="username"
          title="3 to 40 letters, digits, dots, underscores or hyphens"
        />
      </label>
      <label>
        Display name (optional)
        <input value={name} onChange={(e) => setName(e.target.value)} maxLength={100} autoComplete="name" />
      </label>
      <label>
        Password (at least 12 characters)
        <input
          type="password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          required
          minLength={12}
          maxLength={200}
          autoComplete="new-password"
        />
      </label>
      <label>
        Password again
        <input
          type="password"
          value={again}
          onChange={(e) => setAgain(e.target.value)}
          required
          autoComplete="new-password"
        />
      </label>
      <button type="submit" className="primary" disabled={busy}>
        Create account and join
      </button>
    </form>
  );
}

/** The page an invitation link opens: what it invites to, then joining as the signed-in user or a new account. */
export function InvitePage(props: { token: string; signedIn: Me | null }) {
  const [info, setInfo] = useState<InvitationLinkInfo>();
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    api<InvitationLinkInfo>('/auth/invitation', { method: 'POST', body: { token: props.token } })
      .then(setInfo)
      .catch((e: Error) => setError(e));
  }, [props.token]);

  const accept = async () => {
    setBusy(true);
    try {
      const joined = await api<{ redirect: string }>('/invitation-links/accept', {
        method: 'POST',
        body: { token: props.token },
      });
      land(joined.redirect);
    } catch (err) {
      setError(err as Error);
      setBusy(false);
    }
  };
  const where = info
    ? info.project
      ? `${info.project.name} (${info.organization})`
      : info.organization
    : '';
  return (
    <div className="signin">
      <div className="card signin-card">
        <h1>Invitation to Evalgate</h1>
        <ErrorBox error={error} />
        {!info && !error && <Loading />}
        {info && (
          <>
            <p>
              You are invited to <strong>{where}</strong> as {ROLE_TEXT[info.role] ?? info.role}. The link
              works once, until {fmtDate(info.expires_at)}.
            </p>
            {props.signedIn ? (
              <>
                <p>
                  You are signed in as{' '}
                  {props.signedIn.user.name ?? props.signedIn.user.email ?? props.signedIn.user.id}.
                </p>
                <button type="button" className="primary" disabled={busy} onClick={accept}>
                  Join {info.organization}
                </button>
              </>
            ) : info.accounts ? (
              <AccountForm token={props.token} />
            ) : (
              <p>
                <a href={`/signin?return_to=${encodeURIComponent(location.pathname)}`}>Sign in</a> through
                your identity provider, then come back to this link to join.
              </p>
            )}
          </>
        )}
      </div>
    </div>
  );
}
