import { type FormEvent, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { Empty, ErrorBox, fmtDate, Loading } from '../components';
import { Link } from '../router';
import type { Container, Project } from '../types';

export { ContainerPage } from './task-logs';

export function ContainersPage(props: { project: Project }) {
  const base = `/projects/${props.project.id}/containers`;
  const list = useApi<ListOf<Container>>(`${base}?limit=100`);
  const [label, setLabel] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState<Error>();

  const create = async (e: FormEvent) => {
    e.preventDefault();
    try {
      setError(undefined);
      await api(base, {
        method: 'POST',
        body: { label: label.trim(), description: description || undefined },
      });
      setLabel('');
      setDescription('');
      list.reload();
    } catch (err) {
      setError(err as Error);
    }
  };

  return (
    <section className="card">
      <h2>Containers</h2>
      <p className="muted">
        A container scopes one application’s traffic: calls made with{' '}
        <code>X-Evalgate-Container: &lt;label&gt;</code> are recorded as its task logs.
      </p>
      <ErrorBox error={list.error ?? error} />
      {!list.data ? (
        <Loading />
      ) : list.data.data.length === 0 ? (
        <Empty>No containers yet.</Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Label</th>
              <th>Description</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((c) => (
              <tr key={c.id}>
                <td>
                  <Link to={`/projects/${props.project.id}/containers/${encodeURIComponent(c.label)}`}>
                    {c.label}
                  </Link>
                </td>
                <td>{c.description ?? ''}</td>
                <td>{fmtDate(c.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form className="inline" onSubmit={create}>
        <label>
          Label
          <input
            value={label}
            onChange={(e) => setLabel(e.target.value)}
            required
            pattern="[A-Za-z0-9][A-Za-z0-9._:\-]*"
          />
        </label>
        <label>
          Description
          <input value={description} onChange={(e) => setDescription(e.target.value)} />
        </label>
        <button type="submit">Create container</button>
      </form>
    </section>
  );
}
