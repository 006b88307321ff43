import { type FormEvent, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { ContainerOptions, CopyButton, ErrorBox } from '../components';
import { Link, navigate } from '../router';
import type { Container, Evaluator, Monitor, Project } from '../types';

const ROUTES = ['chat', 'responses', 'messages', 'embeddings'] as const;

/** `key=value` lines as a metadata filter (numbers and booleans as such). */
function metadataOf(text: string): Record<string, string | number | boolean> | string {
  const out: Record<string, string | number | boolean> = {};
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) return `"${line}" is not key=value`;
    const raw = line.slice(eq + 1).trim();
    out[line.slice(0, eq).trim()] =
      raw === 'true'
        ? true
        : raw === 'false'
          ? false
          : raw !== '' && !Number.isNaN(Number(raw))
            ? Number(raw)
            : raw;
  }
  return out;
}

interface AlertForm {
  on: boolean;
  evaluator: string;
  metric: 'pass_rate' | 'avg_score';
  below: string;
  window: string;
  minSamples: string;
  webhook: string;
}

const NO_ALERT: AlertForm = {
  on: false,
  evaluator: '',
  metric: 'pass_rate',
  below: '0.8',
  window: '3600',
  minSamples: '10',
  webhook: '',
};

/** The alert part of the form: which evaluator's metric, below what, over which window, to which URL. */
function AlertFields(props: {
  value: AlertForm;
  onChange: (a: AlertForm) => void;
  evaluators: { id: string; name: string }[];
}) {
  const a = props.value;
  const set = (patch: Partial<AlertForm>) => props.onChange({ ...a, ...patch });
  return (
    <fieldset>
      <legend>Alert (optional)</legend>
      <label className="check">
        <input type="checkbox" checked={a.on} onChange={(e) => set({ on: e.target.checked })} />
        Alert by webhook when a figure drops
      </label>
      {a.on && (
        <>
          <div className="inline">
            <label>
              Alert evaluator
              <select value={a.evaluator} onChange={(e) => set({ evaluator: e.target.value })} required>
                <option value="">choose…</option>
                {props.evaluators.map((ev) => (
                  <option key={ev.id} value={ev.id}>
                    {ev.name}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Metric
              <select
                value={a.metric}
                onChange={(e) => set({ metric: e.target.value as AlertForm['metric'] })}
              >
                <option value="pass_rate">pass rate</option>
                <option value="avg_score">average score</option>
              </select>
            </label>
            <label>
              Below
              <input
                type="number"
                step="any"
                value={a.below}
                onChange={(e) => set({ below: e.target.value })}
                required
              />
            </label>
            <label>
              Window (seconds)
              <input
                type="number"
                min="60"
                max="604800"
                value={a.window}
                onChange={(e) => set({ window: e.target.value })}
                required
              />
            </label>
            <label>
              Minimum samples
              <input
                type="number"
                min="1"
                value={a.minSamples}
                onChange={(e) => set({ minSamples: e.target.value })}
                required
              />
            </label>
          </div>
          <label>
            Webhook URL
            <input
              type="url"
              value={a.webhook}
              onChange={(e) => set({ webhook: e.target.value })}
              placeholder="https://hooks.example.com/evalgate"
              required
            />
          </label>
        </>
      )}
    </fieldset>
  );
}

/** The form creating a monitor (with its alert); an alert's signing secret is shown once after. */
export function CreateMonitor(props: { project: Project }) {
  const base = `/projects/${props.project.id}`;
  const containers = useApi<ListOf<Container>>(`${base}/containers?limit=100`);
  const evaluators = useApi<ListOf<Evaluator>>(`${base}/evaluators?limit=100`);
  const [name, setName] = useState('');
  const [container, setContainer] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [rate, setRate] = useState('1');
  const [routes, setRoutes] = useState<string[]>([]);
  const [models, setModels] = useState('');
  const [metadata, setMetadata] = useState('');
  const [alert, setAlert] = useState<AlertForm>(NO_ALERT);
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<Monitor>();

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const md = metadataOf(metadata);
    if (typeof md === 'string') return setError(new Error(`Metadata: ${md}`));
    const modelList = models
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean);
    const filter = {
      ...(modelList.length && { models: modelList }),
      ...(routes.length && { routes }),
      ...(Object.keys(md).length && { metadata: md }),
    };
    const rule = alert.on
      ? {
          evaluator: alert.evaluator,
          metric: alert.metric,
          below: Number(alert.below),
          window: Number(alert.window),
          min_samples: Number(alert.minSamples),
          webhook_url: alert.webhook.trim(),
        }
      : null;
    setBusy(true);
    try {
      const m = await api<Monitor>(`${base}/monitors`, {
        method: 'POST',
        body: {
          name: name.trim(),
          container,
          evaluators: chosen,
          sampling_rate: Number(rate),
          filter,
          alert: rule,
        },
      });
      if (rule) setCreated(m);
      else navigate(`${base}/monitors/${m.id}`);
    } catch (err) {
      setError(err as Error);
      setBusy(false);
    }
  };

  const toggle = (list: string[], set: (l: string[]) => void, value: string, on: boolean) =>
    set(on ? [...list, value] : list.filter((v) => v !== value));

  if (created) {
    return (
      <div className="notice" data-testid="alert-secret">
        <p>
          Monitor <strong>{created.name}</strong> created. Its webhooks are signed with this secret
          (X-Evalgate-Signature), shown only now:
        </p>
        <p>
          <code>{created.alert_secret}</code> <CopyButton text={created.alert_secret ?? ''} />
        </p>
        <Link to={`${base}/monitors/${created.id}`}>Open the monitor</Link>
      </div>
    );
  }

  const all = evaluators.data?.data ?? [];
  return (
    <form onSubmit={submit} className="stack" aria-label="New monitor">
      <ErrorBox error={error ?? containers.error ?? evaluators.error} />
      <div className="inline">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <label>
          Container
          <select value={container} onChange={(e) => setContainer(e.target.value)} required>
            <option value="">choose…</option>
            <ContainerOptions containers={containers.data?.data} />
          </select>
        </label>
        <label>
          Sampling rate
          <input
            type="number"
            min="0.001"
            max="1"
            step="any"
            value={rate}
            onChange={(e) => setRate(e.target.value)}
            required
          />
        </label>
      </div>
      <fieldset>
        <legend>Evaluators</legend>
        <div className="checks">
          {all.map((ev) => (
            <label key={ev.id} className="check">
              <input
                type="checkbox"
                checked={chosen.includes(ev.id)}
                onChange={(e) => toggle(chosen, setChosen, ev.id, e.target.checked)}
              />
              {ev.name}
            </label>
          ))}
        </div>
      </fieldset>
      <fieldset>
        <legend>Filter (optional)</legend>
        <div className="checks">
          {ROUTES.map((r) => (
            <label key={r} className="check">
              <input
                type="checkbox"
                checked={routes.includes(r)}
                onChange={(e) => toggle(routes, setRoutes, r, e.target.checked)}
              />
              {r}
            </label>
          ))}
        </div>
        <label>
          Models (comma-separated)
          <input value={models} onChange={(e) => setModels(e.target.value)} />
        </label>
        <label>
          Metadata (key=value, one a line)
          <textarea rows={2} value={metadata} onChange={(e) => setMetadata(e.target.value)} />
        </label>
      </fieldset>
      <AlertFields
        value={alert}
        onChange={setAlert}
        evaluators={all.filter((ev) => chosen.includes(ev.id))}
      />
      <div className="actions">
        <button type="submit" className="primary" disabled={busy || chosen.length === 0}>
          Create monitor
        </button>
      </div>
    </form>
  );
}
