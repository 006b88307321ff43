import { useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { Empty, ErrorBox, Loading, Tabs } from '../components';
import { navigate } from '../router';
import type { GuardCheck, GuardPolicy, Project } from '../types';
import { PolicyForm } from './guard-form';
import { GuardVerdicts } from './guard-verdicts';

/** A check in one line: its guard, stage, action, timeout and failure mode. */
function checkText(c: GuardCheck): string {
  return `${c.guard.type} · ${c.stage} · ${c.action} · ${c.timeout_ms} ms · fails ${c.on_error}`;
}

function AppliesTo(props: { policy: GuardPolicy; labels: Map<string, string> }) {
  const { containers, keys, models } = props.policy.applies_to;
  const parts = [
    ...containers.map((id) => `container ${props.labels.get(id) ?? id}`),
    ...keys.map((k) => `key ${k}`),
    ...models.map((m) => `model ${m}`),
  ];
  return parts.length ? parts.join(', ') : <span className="muted">every call</span>;
}

/** Deletes on a second click, so that one slip does not. */
function DeleteButton(props: { onDelete: () => Promise<void>; name: string }) {
  const [armed, setArmed] = useState(false);
  return (
    <button
      type="button"
      className={armed ? 'danger' : 'ghost'}
      aria-label={armed ? `Confirm deleting ${props.name}` : `Delete ${props.name}`}
      onClick={() => (armed ? props.onDelete() : setArmed(true))}
    >
      {armed ? 'Confirm delete' : 'Delete'}
    </button>
  );
}

/** The project's guard policies, in the order the gateway applies them; created, changed, deleted here. */
function Policies(props: { project: Project }) {
  const base = `/projects/${props.project.id}`;
  const list = useApi<ListOf<GuardPolicy>>(`${base}/guards?limit=100`);
  const containers = useApi<ListOf<{ id: string; label: string }>>(`${base}/containers?limit=100`);
  const labels = new Map((containers.data?.data ?? []).map((c) => [c.id, c.label]));
  const [editing, setEditing] = useState<GuardPolicy | 'new' | null>(null);
  const [error, setError] = useState<Error>();
  const done = () => {
    setEditing(null);
    list.reload();
  };
  const remove = async (p: GuardPolicy) => {
    try {
      await api(`${base}/guards/${p.id}`, { method: 'DELETE' });
      list.reload();
    } catch (err) {
      setError(err as Error);
    }
  };
  return (
    <section className="card">
      <div className="section-head">
        <h2>Policies</h2>
        <button type="button" className="primary" onClick={() => setEditing(editing ? null : 'new')}>
          {editing ? 'Close' : 'New policy'}
        </button>
      </div>
      <p className="muted">
        A policy’s checks run on the calls it applies to, before, beside or after the model: they block, flag
        or redact. Policies apply in this order.
      </p>
      {editing && (
        <PolicyForm
          key={editing === 'new' ? 'new' : editing.id}
          project={props.project}
          policy={editing === 'new' ? undefined : editing}
          onDone={done}
        />
      )}
      <ErrorBox error={error ?? list.error} />
      {!list.data ? (
        <Loading />
      ) : list.data.data.length === 0 ? (
        <Empty>No guard policies yet.</Empty>
      ) : (
        <div className="table-scroll">
          <table aria-label="Guard policies">
            <thead>
              <tr>
                <th>Name</th>
                <th>State</th>
                <th>Applies to</th>
                <th>Checks</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((p) => (
                <tr key={p.id}>
                  <td>
                    <strong>{p.name}</strong>
                    {p.description && <div className="muted">{p.description}</div>}
                  </td>
                  <td>
                    <span className={`badge ${p.enabled ? 'pass' : 'fail'}`}>
                      {p.enabled ? 'enabled' : 'disabled'}
                    </span>
                  </td>
                  <td>
                    <AppliesTo policy={p} labels={labels} />
                  </td>
                  <td>
                    <ul className="plain">
                      {p.checks.map((c) => (
                        <li key={c.name}>
                          <strong>{c.name}</strong> <span className="muted">{checkText(c)}</span>
                        </li>
                      ))}
                    </ul>
                  </td>
                  <td>
                    <div className="actions">
                      <button type="button" aria-label={`Edit ${p.name}`} onClick={() => setEditing(p)}>
                        Edit
                      </button>
                      <DeleteButton name={p.name} onDelete={() => remove(p)} />
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

const TABS = [
  { id: 'policies', label: 'Policies' },
  { id: 'verdicts', label: 'Verdicts' },
];

/** Guards: the policies (`/guards`) and what their checks did (`/guards/verdicts`). */
export function GuardsPage(props: { project: Project; tab: string | undefined }) {
  const current = props.tab === 'verdicts' ? 'verdicts' : 'policies';
  const base = `/projects/${props.project.id}/guards`;
  return (
    <>
      <Tabs
        tabs={TABS}
        current={current}
        onChange={(id) => navigate(id === 'verdicts' ? `${base}/verdicts` : base)}
      />
      {current === 'verdicts' ? (
        <GuardVerdicts project={props.project} />
      ) : (
        <Policies project={props.project} />
      )}
    </>
  );
}
