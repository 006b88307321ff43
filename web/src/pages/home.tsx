import { type FormEvent, useState } from 'react';
import { api, useApi } from '../api';
import { Empty, ErrorBox, Loading } from '../components';
import { Link, navigate } from '../router';
import type { Invitation, Organization } from '../types';

export function HomePage() {
  const orgs = useApi<{ data: Organization[]; invitations: Invitation[] }>('/orgs');
  const [name, setName] = useState('');
  const [error, setError] = useState<Error>();

  const create = async (e: FormEvent) => {
    e.preventDefault();
    try {
      const org = await api<Organization>('/orgs', { method: 'POST', body: { name: name.trim() } });
      navigate(`/orgs/${org.id}`);
    } catch (err) {
      setError(err as Error);
    }
  };
  const accept = async (invitation: Invitation) => {
    try {
      await api(`/invitations/${invitation.id}/accept`, { method: 'POST' });
      orgs.reload();
    } catch (err) {
      setError(err as Error);
    }
  };

  if (!orgs.data) return orgs.error ? <ErrorBox error={orgs.error} /> : <Loading />;
  return (
    <div className="page">
      <h1>Organizations</h1>
      <ErrorBox error={error} />
      {orgs.data.invitations.length > 0 && (
        <section className="card">
          <h2>Invitations</h2>
          <ul className="plain">
            {orgs.data.invitations.map((i) => (
              <li key={i.id} className="row">
                <span>
                  Join <strong>{i.organization}</strong> as {i.role}
                </span>
                <button type="button" className="primary" onClick={() => accept(i)}>
                  Accept
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}
      {orgs.data.data.length === 0 ? (
        <Empty>You are not a member of any organization yet. Create one, or accept an invitation.</Empty>
      ) : (
        <div className="grid">
          {orgs.data.data.map((o) => (
            <section key={o.id} className="card">
              <h2>
                <Link to={`/orgs/${o.id}`}>{o.name}</Link> <span className="badge">{o.role}</span>
              </h2>
              {o.projects.length === 0 ? (
                <p className="muted">No projects yet.</p>
              ) : (
                <ul className="plain">
                  {o.projects.map((p) => (
                    <li key={p.id}>
                      <Link to={`/projects/${p.id}/runs`}>{p.name}</Link>
                    </li>
                  ))}
                </ul>
              )}
            </section>
          ))}
        </div>
      )}
      <section className="card">
        <h2>New organization</h2>
        <form className="inline" onSubmit={create}>
          <label>
            Name
            <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} />
          </label>
          <button type="submit" className="primary">
            Create organization
          </button>
        </form>
      </section>
    </div>
  );
}
