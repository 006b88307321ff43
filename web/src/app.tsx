import { useCallback, useEffect, useState } from 'react';
import { ApiFailure, api, onSignedOut, setCsrfToken } from './api';
import { ErrorBox, Loading } from './components';
import { HomePage } from './pages/home';
import { InvitePage } from './pages/invite';
import { OrganizationPage } from './pages/organization';
import { ProjectPage } from './pages/project';
import { SignInPage } from './pages/signin';
import { Link, match, navigate, useLocation } from './router';
import type { Me } from './types';

export function App() {
  const { path } = useLocation();
  const [me, setMe] = useState<Me | null>();
  const [error, setError] = useState<Error>();

  const load = useCallback(() => {
    api<Me>('/me')
      .then((m) => {
        setCsrfToken(m.csrf_token);
        setMe(m);
      })
      .catch((e: Error) => {
        if (e instanceof ApiFailure && e.status === 401) setMe(null);
        else setError(e);
      });
  }, []);

  useEffect(load, [load]);
  useEffect(() => onSignedOut(() => setMe(null)), []);
  useEffect(() => {
    // The sign-in page and an invitation link's page are for people not signed in too.
    if (me === null && path !== '/signin' && !path.startsWith('/invite/')) {
      navigate(
        `/signin${path === '/' ? '' : `?return_to=${encodeURIComponent(path + location.search)}`}`,
        true,
      );
    }
  }, [me, path]);

  if (path === '/signin') return <SignInPage signedIn={me ?? null} />;
  if (error) return <ErrorBox error={error} />;
  const invite = match('/invite/:token', path);
  if (invite && me !== undefined) return <InvitePage token={invite.token ?? ''} signedIn={me} />;
  if (!me) return <Loading />;

  const signOut = async () => {
    await api('/auth/logout', { method: 'POST' });
    setMe(null);
    navigate('/signin');
  };

  return (
    <>
      <a className="skip-link" href="#content">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand">
          Evalgate
        </Link>
        <div className="spacer" />
        <span className="who" title={`${me.user.provider}${me.user.email ? ` · ${me.user.email}` : ''}`}>
          {me.user.name ?? me.user.email ?? me.user.id}
          <span className="muted"> · {me.user.provider}</span>
        </span>
        <button type="button" className="ghost" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="content" tabIndex={-1}>
        <Routes path={path} />
      </main>
    </>
  );
}

function Routes(props: { path: string }) {
  const { path } = props;
  if (path === '/' || path === '') return <HomePage />;
  const org = match('/orgs/:org', path);
  if (org) return <OrganizationPage id={org.org ?? ''} />;
  if (path.startsWith('/projects/')) {
    const [, , project = '', ...rest] = path.split('/');
    return <ProjectPage id={decodeURIComponent(project)} rest={rest.map(decodeURIComponent)} />;
  }
  return (
    <div className="page">
      <h1>Not found</h1>
      <p>
        Nothing here. <Link to="/">Back to your organizations</Link>
      </p>
    </div>
  );
}
