import { useState } from 'react';
import { type ListOf, useApi } from '../api';
import { asText, Empty, ErrorBox, fmtDate, fmtUsd, Loading, Pager } from '../components';
import { Link } from '../router';
import type { Project } from '../types';
import { AddToDataset } from './add-to-dataset';
import { Messages } from './messages';
import { playgroundLink } from './playground';

const PAGE = 20;

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

/** What the call answered, or why it failed (`code: message`). */
function Outcome(props: { log: TaskLog }) {
  const { output, error } = props.log;
  if (output !== null) return <div className="message-text">{output}</div>;
  const e = error as { code?: unknown; message?: unknown } | null;
  if (e && typeof e.message === 'string') {
    return (
      <div className="message-text warn">
        {typeof e.code === 'string' ? `${e.code}: ${e.message}` : e.message}
      </div>
    );
  }
  return <pre className="value">{asText(error)}</pre>;
}

/** The task logs of a container, newest first. */
export function ContainerPage(props: { project: Project; id: string }) {
  const [offset, setOffset] = useState(0);
  const base = `/projects/${props.project.id}/containers/${encodeURIComponent(props.id)}`;
  const logs = useApi<ListOf<TaskLog>>(`${base}/logs?limit=${PAGE}&offset=${offset}&order=newest`);
  return (
    <section className="card">
      <p className="crumbs">
        <Link to={`/projects/${props.project.id}/containers`}>Containers</Link> /
      </p>
      <h2>{props.id}: task logs</h2>
      <p className="muted small">Newest first.</p>
      <ErrorBox error={logs.error} />
      {!logs.data ? (
        <Loading />
      ) : logs.data.data.length === 0 ? (
        <Empty>No traffic recorded yet.</Empty>
      ) : (
        <div className="table-scroll">
          <table className="rows task-logs">
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
                <th />
              </tr>
            </thead>
            <tbody>
              {logs.data.data.map((l) => (
                <tr key={l.id} data-seq={l.seq}>
                  <td>{l.seq}</td>
                  <td>{fmtDate(l.created_at)}</td>
                  <td>{l.model}</td>
                  <td>
                    <Messages input={l.input} />
                  </td>
                  <td>
                    <Outcome log={l} />
                  </td>
                  <td>{l.status}</td>
                  <td>{l.latency_ms} ms</td>
                  <td>{fmtUsd(l.cost)}</td>
                  <td>
                    <AddToDataset project={props.project.id} from={{ task_log_id: l.id }} />
                    <Link
                      className="button ghost small"
                      to={playgroundLink(props.project.id, { task_log: l.id })}
                    >
                      Open in playground
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {logs.data && <Pager offset={offset} limit={PAGE} total={logs.data.total} onChange={setOffset} />}
    </section>
  );
}
