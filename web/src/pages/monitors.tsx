import { useState } from 'react';
import { type ListOf, useApi } from '../api';
import { Empty, ErrorBox, fmtUsd, Loading } from '../components';
import { Link } from '../router';
import type { DashboardMonitor, Project } from '../types';
import { CreateMonitor } from './monitor-form';
import { AlertBadge, containerName, filterText } from './monitor-parts';

export { MonitorPage } from './monitor';

/** The project's monitors, and the form creating one. */
export function MonitorsPage(props: { project: Project }) {
  const base = `/projects/${props.project.id}/monitors`;
  const list = useApi<ListOf<DashboardMonitor>>(`${base}?limit=100`);
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
                <th>Container</th>
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
                    </span>{' '}
                    <AlertBadge monitor={m} />
                  </td>
                  <td>{containerName(m)}</td>
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
