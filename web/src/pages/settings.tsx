import { type FormEvent, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { CopyButton, Dialog, Empty, ErrorBox, fmtDate, Loading } from '../components';
import type { ApiKey, Project, ProjectBudget } from '../types';

const RESOURCES =
  'evaluators, evaluation, containers, data, models, logs, inference, metrics, keys, review, prompts';

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

/** `5/day` → a budget; `none` or nothing → none; anything else → undefined (refused). */
function parseBudget(text: string): ApiKey['budget'] | undefined {
  const t = text.trim().toLowerCase();
  if (t === '' || t === 'none') return null;
  const [amount = '', period = 'month'] = t.replace(/^\$/, '').split('/');
  const limit = Number(amount);
  if (amount === '' || !(limit >= 0) || !['day', 'month', 'total'].includes(period)) return undefined;
  return { limit_usd: limit, period: period as 'day' | 'month' | 'total' };
}

/** `1.25 of 5 USD per day`, or `none`. */
function budgetText(state: { budget: ApiKey['budget']; spend: ApiKey['spend'] }): string {
  if (!state.budget || !state.spend) return 'none';
  const per = state.budget.period === 'total' ? 'in total' : `per ${state.budget.period}`;
  return `${state.spend.used_usd} of ${state.budget.limit_usd} USD ${per}`;
}

export function SettingsPage(props: { project: Project }) {
  const projectBudget = useApi<ProjectBudget>(`/projects/${props.project.id}/budget`);
  const keys = useApi<ListOf<ApiKey>>(`/projects/${props.project.id}/keys?limit=100`);
  const [creating, setCreating] = useState(false);
  const [error, setError] = useState<Error>();

  /** Asks for a budget (`5/day`, `none`) and sets it on the key, or on the project without one. */
  const setBudget = async (key: ApiKey | null, current: ApiKey['budget']) => {
    const asked = window.prompt(
      `Budget of ${key ? `the key ${key.name}` : 'the project'}: <USD>/day, /month or /total (e.g. 5/day); none removes it`,
      current ? `${current.limit_usd}/${current.period}` : '',
    );
    if (asked === null) return;
    const budget = parseBudget(asked);
    if (budget === undefined)
      return setError(new Error(`Not a budget: '${asked}' (e.g. 5/day, 100/month, none)`));
    try {
      setError(undefined);
      const path = key
        ? `/projects/${props.project.id}/keys/${key.id}/budget`
        : `/projects/${props.project.id}/budget`;
      await api(path, { method: 'PUT', body: { budget } });
      if (key) keys.reload();
      else projectBudget.reload();
    } catch (err) {
      setError(err as Error);
    }
  };

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
      <p className="budget-line">
        Project budget: {projectBudget.data ? budgetText(projectBudget.data) : '…'}{' '}
        <button
          type="button"
          className="ghost"
          onClick={() => setBudget(null, projectBudget.data?.budget ?? null)}
        >
          Set budget
        </button>
      </p>
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
              <th>Budget</th>
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
                  {budgetText(k)}{' '}
                  {!k.revoked_at && (
                    <button type="button" className="ghost" onClick={() => setBudget(k, k.budget)}>
                      Set
                    </button>
                  )}
                </td>
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
