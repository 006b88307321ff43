import { lazy, Suspense, useCallback, useState } from 'react';
import { api, type ListOf, query, useApi } from '../api';
import { Empty, ErrorBox, fmtDate, fmtNum, fmtPct, fmtUsd, Loading, Pager, Value } from '../components';
import { Link } from '../router';
import type { DashboardMonitorDetail, MonitorResults, MonitorSample, Project } from '../types';
import { Messages } from './messages';
import { AlertBadge, alertText, containerName, filterText, useEvery } from './monitor-parts';

const MonitorCharts = lazy(() => import('./monitor-charts'));

const BUCKETS = ['minute', 'hour', 'day'] as const;
/** How often a monitor's page asks again: scoring follows the traffic by seconds. */
const REFRESH_MS = 3000;
const PAGE = 10;

/** A monitor: its state, pass rate and average score over time, and the calls that did not pass. */
export function MonitorPage(props: { project: Project; id: string }) {
  const base = `/projects/${props.project.id}/monitors/${encodeURIComponent(props.id)}`;
  const [bucket, setBucket] = useState<(typeof BUCKETS)[number]>('minute');
  const [offset, setOffset] = useState(0);
  const monitor = useApi<DashboardMonitorDetail>(base);
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
  const names = new Map(m.evaluator_states.map((e) => [e.evaluator, e.name]));
  const nameOf = (id: string) => names.get(id) ?? id;
  const idle = m.evaluator_states.filter((e) => e.why);

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
          </span>{' '}
          <AlertBadge monitor={m} />
        </h2>
        <button type="button" onClick={() => setEnabled(!m.enabled)}>
          {m.enabled ? 'Pause' : 'Resume'}
        </button>
      </div>
      <ErrorBox error={error ?? results.error ?? failing.error} />
      <dl className="facts">
        <dt>Container</dt>
        <dd data-testid="monitor-container">{containerName(m)}</dd>
        <dt>Evaluators</dt>
        <dd>{m.evaluators.map(nameOf).join(', ')}</dd>
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
        <dt>Alert</dt>
        <dd data-testid="monitor-alert">{alertText(m, nameOf)}</dd>
        <dt>Created</dt>
        <dd>{fmtDate(m.created_at)}</dd>
      </dl>
      {idle.map((e) => (
        <p key={e.evaluator} className="notice" data-testid="evaluator-why">
          <strong>{e.name}</strong>: nothing scored. {e.why}
        </p>
      ))}

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
                  <td>{nameOf(s.evaluator)}</td>
                  <td>{s.status === 'error' ? (s.error?.message ?? 'error') : fmtNum(s.score)}</td>
                  <td>
                    <Messages input={s.input} />
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
