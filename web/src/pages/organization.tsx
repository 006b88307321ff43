import { type FormEvent, useState } from 'react';
import { api, useApi } from '../api';
import { Empty, ErrorBox, fmtDate, Loading } from '../components';
import { Link, navigate } from '../router';
import type { OrganizationDetail, ProjectRef } from '../types';
import { InvitationLinks } from './invite-links';

export function OrganizationPage(props: { id: string }) {
  const org = useApi<OrganizationDetail>(`/orgs/${encodeURIComponent(props.id)}`);
  const [project, setProject] = useState('');
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<'member' | 'owner' | 'reviewer'>('member');
  const [error, setError] = useState<Error>();

  const act = async (work: () => Promise<unknown>) => {
    try {
      setError(undefined);
      await work();
      org.reload();
    } catch (err) {
      setError(err as Error);
    }
  };
  const createProject = async (e: FormEvent) => {
    e.preventDefault();
    try {
      const created = await api<ProjectRef>(`/orgs/${props.id}/projects`, {
        method: 'POST',
        body: { name: project.trim() },
      });
      navigate(`/projects/${created.id}/settings`);
    } catch (err) {
      setError(err as Error);
    }
  };
  const invite = (e: FormEvent) => {
    e.preventDefault();
    return act(async () => {
      await api(`/orgs/${props.id}/invitations`, { method: 'POST', body: { email: email.trim(), role } });
      setEmail('');
    });
  };

  if (!org.data) return org.error ? <ErrorBox error={org.error} /> : <Loading />;
  const o = org.data;
  const owner = o.role === 'owner';
  return (
    <div className="page">
      <p className="crumbs">
        <Link to="/">Organizations</Link> /
      </p>
      <h1>
        {o.name} <span className="badge">{o.role}</span>
      </h1>
      <ErrorBox error={error} />
      <section className="card">
        <h2>Projects</h2>
        {o.projects.length === 0 ? (
          <Empty>No projects yet.</Empty>
        ) : (
          <ul className="plain">
            {o.projects.map((p) => (
              <li key={p.id}>
                <Link to={`/projects/${p.id}/runs`}>{p.name}</Link>{' '}
                <span className="muted">created {fmtDate(p.created_at)}</span>
              </li>
            ))}
          </ul>
        )}
        <form className="inline" onSubmit={createProject}>
          <label>
            Project name
            <input value={project} onChange={(e) => setProject(e.target.value)} required maxLength={100} />
          </label>
          <button type="submit" className="primary">
            Create project
          </button>
        </form>
      </section>
      <section className="card">
        <h2>Members</h2>
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>E-mail</th>
              <th>Signs in with</th>
              <th>Role</th>
              {owner && <th />}
            </tr>
          </thead>
          <tbody>
            {o.members.map((m) => (
              <tr key={m.user_id}>
                <td>{m.name ?? m.user_id}</td>
                <td>{m.email ?? '—'}</td>
                <td className="muted">{m.issuer}</td>
                <td>{m.role}</td>
                {owner && (
                  <td>
                    <button
                      type="button"
                      className="ghost danger"
                      onClick={() =>
                        act(() => api(`/orgs/${o.id}/members/${m.user_id}`, { method: 'DELETE' }))
                      }
                    >
                      Remove
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {owner && (
        <section className="card">
          <h2>Invitations by e-mail</h2>
          <p className="muted">
            An invitation is accepted by a signed-in user whose e-mail, verified by their identity provider,
            is the invited one.
          </p>
          {o.invitations.length > 0 && (
            <ul className="plain">
              {o.invitations.map((i) => (
                <li key={i.id} className="row">
                  <span>
                    {i.email} as {i.role} <span className="muted">until {fmtDate(i.expires_at)}</span>
                  </span>
                  <button
                    type="button"
                    className="ghost danger"
                    onClick={() => act(() => api(`/orgs/${o.id}/invitations/${i.id}`, { method: 'DELETE' }))}
                  >
                    Revoke
                  </button>
                </li>
              ))}
            </ul>
          )}
          <form className="inline" onSubmit={invite}>
            <label>
              E-mail
              <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
            </label>
            <label>
              Role
              <select
                aria-label="Role"
                value={role}
                onChange={(e) => setRole(e.target.value as 'member' | 'owner' | 'reviewer')}
              >
                <option value="member">member</option>
                <option value="reviewer">reviewer (review only)</option>
                <option value="owner">owner</option>
              </select>
            </label>
            <button type="submit">Invite</button>
          </form>
        </section>
      )}
      {owner && <InvitationLinks org={o.id} projects={o.projects} />}
    </div>
  );
}
