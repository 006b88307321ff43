import { type FormEvent, useState } from 'react';
import { api, useApi } from '../api';
import { Empty, ErrorBox, fmtDate } from '../components';
import type { InvitationLink, ProjectRef } from '../types';

type Role = InvitationLink['role'];

/**
 * An organization's invitation links, for its owners: make one (role, days, project to land on), shown
 * once with its URL to copy; the links made so far with their state, pending ones revocable.
 */
export function InvitationLinks(props: { org: string; projects: ProjectRef[] }) {
  const base = `/orgs/${encodeURIComponent(props.org)}/invitation-links`;
  const list = useApi<{ data: InvitationLink[] }>(base);
  const [role, setRole] = useState<Role>('member');
  const [days, setDays] = useState('7');
  const [project, setProject] = useState('');
  const [made, setMade] = useState<InvitationLink & { url: string }>();
  const [error, setError] = useState<Error>();

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    try {
      const body = { role, expires_in_days: Number(days), ...(project ? { project } : {}) };
      setMade(await api<InvitationLink & { url: string }>(base, { method: 'POST', body }));
      list.reload();
    } catch (err) {
      setError(err as Error);
    }
  };
  const revoke = async (id: string) => {
    setError(undefined);
    try {
      await api(`${base}/${encodeURIComponent(id)}`, { method: 'DELETE' });
      if (made?.id === id) setMade(undefined);
      list.reload();
    } catch (err) {
      setError(err as Error);
    }
  };
  const projectName = (id: string | null) => props.projects.find((p) => p.id === id)?.name ?? id;
  const links = list.data?.data ?? [];
  return (
    <section className="card" aria-labelledby="invitation-links">
      <h2 id="invitation-links">Invitation links</h2>
      <p className="muted">
        Whoever opens a link joins with its role, once: signed in already, or, on a server without identity
        providers, with a name and password chosen there. Send it privately; it is shown only now.
      </p>
      <ErrorBox error={error ?? list.error} />
      <form className="inline" onSubmit={create}>
        <label>
          Joins as
          <select aria-label="Joins as" value={role} onChange={(e) => setRole(e.target.value as Role)}>
            <option value="member">member</option>
            <option value="reviewer">reviewer (review only)</option>
            <option value="owner">owner</option>
          </select>
        </label>
        <label>
          Valid for days
          <input
            type="number"
            min={1}
            max={90}
            value={days}
            onChange={(e) => setDays(e.target.value)}
            required
          />
        </label>
        <label>
          Lands on
          <select aria-label="Lands on" value={project} onChange={(e) => setProject(e.target.value)}>
            <option value="">the organization</option>
            {props.projects.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Create link</button>
      </form>
      {made && (
        <label className="stack">
          New link ({made.role}, until {fmtDate(made.expires_at)})
          <input aria-label="Invitation link" readOnly value={made.url} onFocus={(e) => e.target.select()} />
        </label>
      )}
      {links.length === 0 ? (
        <Empty>No invitation links yet.</Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Role</th>
              <th>Lands on</th>
              <th>State</th>
              <th>Until</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {links.map((l) => (
              <tr key={l.id} data-link={l.id}>
                <td>{l.role}</td>
                <td>{l.project_id ? projectName(l.project_id) : 'the organization'}</td>
                <td>{l.status}</td>
                <td className="muted">{fmtDate(l.expires_at)}</td>
                <td>
                  {l.status === 'pending' && (
                    <button type="button" className="ghost danger" onClick={() => revoke(l.id)}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
