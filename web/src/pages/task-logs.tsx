import { useState } from 'react';
import { type ListOf, useApi } from '../api';
import { asText, Empty, ErrorBox, fmtDate, fmtUsd, Loading, Pager } from '../components';
import { Link } from '../router';
import type { Project } from '../types';

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

interface Message {
  role: string;
  content: unknown;
}

const isMessage = (v: unknown): v is Message =>
  typeof v === 'object' && v !== null && typeof (v as { role?: unknown }).role === 'string';

/** A message's content as text: a string, or the text of its parts (other parts named by their type). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        const p = part as { type?: unknown; text?: unknown };
        if (typeof p?.text === 'string') return p.text;
        return typeof p?.type === 'string' ? `[${p.type}]` : asText(part);
      })
      .join('\n');
  }
  return asText(content);
}

/** A call's input for people: its messages one under the other, each with its role; anything else as JSON. */
export function Messages(props: { input: unknown }) {
  const { input } = props;
  if (typeof input === 'string') return <div className="message-text">{input}</div>;
  if (Array.isArray(input) && input.length > 0 && input.every(isMessage)) {
    return (
      <div className="messages">
        {input.map((m, i) => (
          // Messages have no id; their position is their identity here.
          // biome-ignore lint/suspicious/noArrayIndexKey: a fixed list, never reordered
          <div key={i} className="message">
            <span className={`role role-${m.role}`}>{m.role}</span>
            <span className="message-text">{contentText(m.content)}</span>
          </div>
        ))}
      </div>
    );
  }
  return <pre className="value">{asText(input)}</pre>;
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
