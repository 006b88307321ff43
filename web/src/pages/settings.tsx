import { type FormEvent, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { CopyButton, Dialog, Empty, ErrorBox, fmtDate, Loading } from '../components';
import type { ApiKey, Project } from '../types';

const RESOURCES = 'evaluators, evaluation, containers, data, models, logs, inference, metrics, keys';

function CreateKeyDialog(props: { project: Project; onClose: () => void; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [permissions, setPermissions] = useState('*');
  const [error, setError] = useState<Error>();
  const [created, setCreated] = useState<ApiKey & { key: string }>();

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    try {
      setError(undefined);
      const list = permissions
        .split(/[\s,]+/)
        .map((p) => p.trim())
        .filter(Boolean);
      const key = await api<ApiKey & { key: string }>(`/projects/${props.project.id}/keys`, {
        method: 'POST',
        body: { name: name.trim(), permissions: list },
      });
      setCreated(key);
      props.onCreated();
    } catch (err) {
      setError(err as Error);
    }
  };

  if (created) {
    return (
      <Dialog title="API key created" onClose={props.onClose}>
        <p>Copy the key now: it is shown only once. The server keeps only a keyed hash of it.</p>
        <div className="key-box">
          <code data-testid="new-key">{created.key}</code>
          <CopyButton text={created.key} />
        </div>
        <p className="muted">
          {created.name} · {created.permissions.join(', ')} · use it as <code>Authorization: Bearer …</code>
        </p>
        <div className="actions">
          <button type="button" className="primary" onClick={props.onClose}>
            Done
          </button>
        </div>
      </Dialog>
    );
  }
  return (
    <Dialog title="Create API key" onClose={props.onClose}>
      <form onSubmit={submit} className="stack">
        <ErrorBox error={error} />
        <label>
          Name
          <input
            value={name}
            onChange={(e) => setName(e.target.value)}
            required
            maxLength={200}
            placeholder="ci"
          />
        </label>
        <label>
          Permissions
          <input value={permissions} onChange={(e) => setPermissions(e.target.value)} required />
        </label>
        <p className="muted small">
          Comma-separated <code>&lt;resource&gt;:&lt;action&gt;</code>, with <code>*</code> in either place or
          alone for everything. Resources: {RESOURCES}; actions: read, write. For example{' '}
          <code>evaluators:read, evaluation:*</code>.
        </p>
        <div className="actions">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" className="primary">
            Create key
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function SettingsPage(props: { project: Project }) {
  const keys = useApi<ListOf<ApiKey>>(`/projects/${props.project.id}/keys?limit=100`);
  const [creating, setCreating] = useState(false);
  const [error, setError] = useState<Error>();

  const revoke = async (key: ApiKey) => {
    if (
      !window.confirm(`Revoke the key ${key.name} (${key.prefix}…)? Calls with it will be refused at once.`)
    )
      return;
    try {
      await api(`/projects/${props.project.id}/keys/${key.id}`, { method: 'DELETE' });
      keys.reload();
    } catch (err) {
      setError(err as Error);
    }
  };

  return (
    <section className="card">
      <div className="section-head">
        <h2>API keys</h2>
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          Create API key
        </button>
      </div>
      <ErrorBox error={error ?? keys.error} />
      {!keys.data ? (
        <Loading />
      ) : keys.data.data.length === 0 ? (
        <Empty>No keys yet. A key calls the API (/v1) inside this project.</Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Key</th>
              <th>Permissions</th>
              <th>Created</th>
              <th>Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.data.data.map((k) => (
              <tr key={k.id} className={k.revoked_at ? 'revoked' : undefined}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.permissions.join(', ')}</td>
                <td>{fmtDate(k.created_at)}</td>
                <td>{k.last_used_at ? fmtDate(k.last_used_at) : 'never'}</td>
                <td>
                  {k.revoked_at ? (
                    <span className="muted">revoked {fmtDate(k.revoked_at)}</span>
                  ) : (
                    <button type="button" className="ghost danger" onClick={() => revoke(k)}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {creating && (
        <CreateKeyDialog project={props.project} onClose={() => setCreating(false)} onCreated={keys.reload} />
      )}
    </section>
  );
}
