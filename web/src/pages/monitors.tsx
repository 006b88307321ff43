import { type FormEvent, lazy, Suspense, useCallback, useEffect, useState } from 'react';
import { api, type ListOf, query, useApi } from '../api';
import {
  ContainerOptions,
  Empty,
  ErrorBox,
  fmtDate,
  fmtNum,
  fmtPct,
  fmtUsd,
  Loading,
  Pager,
  Value,
} from '../components';
import { Link, navigate } from '../router';
import type { Container, Evaluator, Monitor, MonitorResults, MonitorSample, Project } from '../types';

const MonitorCharts = lazy(() => import('./monitor-charts'));

const ROUTES = ['chat', 'responses', 'messages', 'embeddings'] as const;
const BUCKETS = ['minute', 'hour', 'day'] as const;
/** How often a monitor's page asks again: scoring follows the traffic by seconds. */
const REFRESH_MS = 3000;
const PAGE = 10;

/** Calls `fn` every `ms` while the page is shown. */
function useEvery(ms: number, fn: () => void): void {
  useEffect(() => {
    const t = setInterval(fn, ms);
    return () => clearInterval(t);
  }, [ms, fn]);
}

function filterText(m: Monitor): string {
  const parts: string[] = [];
  if (m.filter.models) parts.push(`models: ${m.filter.models.join(', ')}`);
  if (m.filter.routes) parts.push(`routes: ${m.filter.routes.join(', ')}`);
  for (const [k, v] of Object.entries(m.filter.metadata ?? {})) parts.push(`${k} = ${String(v)}`);
  return parts.length ? parts.join('; ') : 'every call';
}

/** The project's monitors, and the form creating one. */
export function MonitorsPage(props: { project: Project }) {
  const base = `/projects/${props.project.id}/monitors`;
  const list = useApi<ListOf<Monitor>>(`${base}?limit=100`);
  const [creating, setCreating] = useState(false);
  return (
    <section className="card">
      <div className="section-head">
        <h2>Monitors</h2>
        <button type="button" className="primary" onClick={() => setCreating(!creating)}>
          {creating ? 'Close' : 'New monitor'}
        </button>
      </div>
      <p className="muted">
        A monitor scores a sampled share of a container’s calls with its evaluators, seconds after they are
        answered.
      </p>
      {creating && <CreateMonitor project={props.project} />}
      <ErrorBox error={list.error} />
      {!list.data ? (
        <Loading />
      ) : list.data.data.length === 0 ? (
        <Empty>No monitors yet.</Empty>
      ) : (
        <div className="table-scroll">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>State</th>
                <th>Rate</th>
                <th>Filter</th>
                <th>Selected</th>
                <th>Lag</th>
                <th>Spend</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((m) => (
                <tr key={m.id}>
                  <td>
                    <Link to={`${base}/${m.id}`}>{m.name}</Link>
                  </td>
                  <td>
                    <span className={`badge ${m.enabled ? 'pass' : 'fail'}`}>
                      {m.enabled ? 'active' : 'paused'}
                    </span>
                  </td>
                  <td>{m.sampling_rate}</td>
                  <td>{filterText(m)}</td>
                  <td>{m.selected}</td>
                  <td>{m.lag_seconds.toFixed(1)} s</td>
                  <td>{fmtUsd(m.spend)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

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

function CreateMonitor(props: { project: Project }) {
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
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

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
    setBusy(true);
    try {
      const m = await api<Monitor>(`${base}/monitors`, {
        method: 'POST',
        body: { name: name.trim(), container, evaluators: chosen, sampling_rate: Number(rate), filter },
      });
      navigate(`${base}/monitors/${m.id}`);
    } catch (err) {
      setError(err as Error);
      setBusy(false);
    }
  };

  const toggle = (list: string[], set: (l: string[]) => void, value: string, on: boolean) =>
    set(on ? [...list, value] : list.filter((v) => v !== value));

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
          {(evaluators.data?.data ?? []).map((ev) => (
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
      <div className="actions">
        <button type="submit" className="primary" disabled={busy || chosen.length === 0}>
          Create monitor
        </button>
      </div>
    </form>
  );
}

/** A monitor: its state, pass rate and average score over time, and the calls that did not pass. */
export function MonitorPage(props: { project: Project; id: string }) {
  const base = `/projects/${props.project.id}/monitors/${encodeURIComponent(props.id)}`;
  const [bucket, setBucket] = useState<(typeof BUCKETS)[number]>('minute');
  const [offset, setOffset] = useState(0);
  const monitor = useApi<Monitor>(base);
  const results = useApi<MonitorResults>(`${base}/results${query({ bucket })}`);
  const failing = useApi<ListOf<MonitorSample>>(
    `${base}/samples${query({ failed: true, limit: PAGE, offset })}`,
  );
  const [error, setError] = useState<Error>();
  const { reload: r1 } = monitor;
  const { reload: r2 } = results;
  const { reload: r3 } = failing;
  const refresh = useCallback(() => {
    r1();
    r2();
    r3();
  }, [r1, r2, r3]);
  useEvery(REFRESH_MS, refresh);

  if (!monitor.data) return monitor.error ? <ErrorBox error={monitor.error} /> : <Loading />;
  const m = monitor.data;
  const names = new Map((results.data?.totals ?? []).map((t) => [t.evaluator, t.name]));

  const setEnabled = async (enabled: boolean) => {
    try {
      setError(undefined);
      await api(base, { method: 'PATCH', body: { enabled } });
      monitor.reload();
    } catch (err) {
      setError(err as Error);
    }
  };

  return (
    <section className="card">
      <p className="crumbs">
        <Link to={`/projects/${props.project.id}/monitors`}>Monitors</Link> /
      </p>
      <div className="section-head">
        <h2>
          {m.name}{' '}
          <span className={`badge ${m.enabled ? 'pass' : 'fail'}`} data-testid="monitor-state">
            {m.enabled ? 'active' : 'paused'}
          </span>
        </h2>
        <button type="button" onClick={() => setEnabled(!m.enabled)}>
          {m.enabled ? 'Pause' : 'Resume'}
        </button>
      </div>
      <ErrorBox error={error ?? results.error ?? failing.error} />
      <dl className="facts">
        <dt>Container</dt>
        <dd>{m.container}</dd>
        <dt>Evaluators</dt>
        <dd>{m.evaluators.map((id) => names.get(id) ?? id).join(', ')}</dd>
        <dt>Sampling rate</dt>
        <dd>{m.sampling_rate}</dd>
        <dt>Filter</dt>
        <dd>{filterText(m)}</dd>
        <dt>Selected</dt>
        <dd data-testid="monitor-selected">{m.selected}</dd>
        <dt>Lag</dt>
        <dd>{m.lag_seconds.toFixed(1)} s</dd>
        <dt>Spend</dt>
        <dd>{fmtUsd(m.spend)}</dd>
        <dt>Created</dt>
        <dd>{fmtDate(m.created_at)}</dd>
      </dl>

      <div className="section-head">
        <h3>Over time</h3>
        <label>
          Bucket{' '}
          <select value={bucket} onChange={(e) => setBucket(e.target.value as (typeof BUCKETS)[number])}>
            {BUCKETS.map((b) => (
              <option key={b}>{b}</option>
            ))}
          </select>
        </label>
      </div>
      {!results.data ? (
        <Loading />
      ) : results.data.buckets.length === 0 ? (
        <Empty>Nothing scored yet.</Empty>
      ) : (
        <>
          <div className="table-scroll">
            <table>
              <thead>
                <tr>
                  <th>Evaluator</th>
                  <th>Scored</th>
                  <th>Pass rate</th>
                  <th>Average score</th>
                  <th>Errors</th>
                </tr>
              </thead>
              <tbody>
                {results.data.totals.map((t) => (
                  <tr key={t.evaluator}>
                    <td>{t.name}</td>
                    <td>{t.num_scored}</td>
                    <td>{fmtPct(t.num_scored ? t.num_passed / t.num_scored : null)}</td>
                    <td>{fmtNum(t.avg_score)}</td>
                    <td>{t.num_errors}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Suspense fallback={<Loading />}>
            <MonitorCharts results={results.data} />
          </Suspense>
        </>
      )}

      <h3>Failing samples</h3>
      {!failing.data ? (
        <Loading />
      ) : failing.data.data.length === 0 ? (
        <Empty>No failing sample.</Empty>
      ) : (
        <div className="table-scroll">
          <table data-testid="failing-samples">
            <thead>
              <tr>
                <th>Task log</th>
                <th>Evaluator</th>
                <th>Score</th>
                <th>Input</th>
                <th>Output</th>
                <th>Reasoning</th>
              </tr>
            </thead>
            <tbody>
              {failing.data.data.map((s) => (
                <tr key={`${s.task_log_id}:${s.evaluator}`}>
                  <td>
                    <code>{s.task_log_id}</code>
                    <div className="muted small">{fmtDate(s.log_created_at)}</div>
                  </td>
                  <td>{names.get(s.evaluator) ?? s.evaluator}</td>
                  <td>{s.status === 'error' ? (s.error?.message ?? 'error') : fmtNum(s.score)}</td>
                  <td>
                    <Value value={s.input} />
                  </td>
                  <td>
                    <Value value={s.output} />
                  </td>
                  <td>{s.reasoning ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager offset={offset} limit={PAGE} total={failing.data?.total ?? 0} onChange={setOffset} />
    </section>
  );
}
