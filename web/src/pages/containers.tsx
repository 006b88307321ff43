import { type FormEvent, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { asText, Empty, ErrorBox, fmtDate, fmtUsd, Loading, Pager } from '../components';
import { Link } from '../router';
import type { Container, Project } from '../types';

const PAGE = 20;

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

interface TaskLog {
  id: string;
  seq: number;
  model: string;
  input: unknown;
  output: string | null;
  status: string;
  error: unknown;
  latency_ms: number;
  cost: number;
  created_at: string;
}

/** The task logs of a container, in the order they were recorded. */
export function ContainerPage(props: { project: Project; id: string }) {
  const [offset, setOffset] = useState(0);
  const base = `/projects/${props.project.id}/containers/${encodeURIComponent(props.id)}`;
  const logs = useApi<ListOf<TaskLog>>(`${base}/logs?limit=${PAGE}&offset=${offset}`);
  return (
    <section className="card">
      <p className="crumbs">
        <Link to={`/projects/${props.project.id}/containers`}>Containers</Link> /
      </p>
      <h2>{props.id}: task logs</h2>
      <ErrorBox error={logs.error} />
      {!logs.data ? (
        <Loading />
      ) : logs.data.data.length === 0 ? (
        <Empty>No traffic recorded yet.</Empty>
      ) : (
        <table className="rows">
          <thead>
            <tr>
              <th>#</th>
              <th>When</th>
              <th>Model</th>
              <th>Input</th>
              <th>Output</th>
              <th>Status</th>
              <th>Latency</th>
              <th>Cost</th>
            </tr>
          </thead>
          <tbody>
            {logs.data.data.map((l) => (
              <tr key={l.id}>
                <td>{l.seq}</td>
                <td>{fmtDate(l.created_at)}</td>
                <td>{l.model}</td>
                <td>
                  <pre className="value">{asText(l.input)}</pre>
                </td>
                <td>
                  <pre className="value">{l.output ?? asText(l.error)}</pre>
                </td>
                <td>{l.status}</td>
                <td>{l.latency_ms} ms</td>
                <td>{fmtUsd(l.cost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {logs.data && <Pager offset={offset} limit={PAGE} total={logs.data.total} onChange={setOffset} />}
    </section>
  );
}
