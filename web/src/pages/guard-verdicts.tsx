import { useState } from 'react';
import { query, useApi } from '../api';
import { Empty, ErrorBox, fmtDate, fmtNum, Loading } from '../components';
import { Link } from '../router';
import type { GuardVerdictCounts, GuardVerdictSummary, Project, VerdictExample } from '../types';
import { playgroundLink } from './playground';

const WINDOWS = [
  ['3600', 'last hour'],
  ['86400', 'last 24 hours'],
  ['604800', 'last 7 days'],
  ['2592000', 'last 30 days'],
] as const;
const COUNTS = ['blocked', 'flagged', 'redacted', 'error'] as const;
const BADGE: Record<VerdictExample['verdict'], string> = {
  passed: 'pass',
  blocked: 'fail',
  flagged: 'status-cancelled',
  redacted: 'status-running',
  error: 'status-error',
};

const sinceOf = (seconds: string) => new Date(Date.now() - Number(seconds) * 1000).toISOString();

/** What a verdict found (its reason, or its error), and its score. */
function Finding(props: { v: VerdictExample }) {
  const { v } = props;
  const text = v.reason ?? (v.error ? `${v.error.code}: ${v.error.message}` : null);
  return (
    <>
      {text ?? <span className="muted">—</span>}
      {v.score !== null && <span className="muted"> · score {fmtNum(v.score)}</span>}
    </>
  );
}

function GuardCard(props: { project: Project; g: GuardVerdictCounts }) {
  const { g } = props;
  return (
    <section className="card" aria-label={`Guard ${g.guard}`}>
      <h3>{g.guard}</h3>
      <div className="stats">
        {COUNTS.map((c) => (
          <div key={c} className="stat" data-testid={`${g.guard}-${c}`}>
            <span className="label">{c}</span>
            <span className="figure">{g[c]}</span>
          </div>
        ))}
      </div>
      <div className="table-scroll">
        <table aria-label={`Latest verdicts of ${g.guard}`}>
          <thead>
            <tr>
              <th>Time</th>
              <th>Model</th>
              <th>Verdict</th>
              <th>Stage</th>
              <th>Found</th>
              <th>Call</th>
            </tr>
          </thead>
          <tbody>
            {g.examples.map((v) => (
              <tr key={v.id}>
                <td>{fmtDate(v.created_at)}</td>
                <td>{v.model ?? <span className="muted">—</span>}</td>
                <td>
                  <span className={`badge ${BADGE[v.verdict]}`}>{v.verdict}</span>
                </td>
                <td>{v.stage}</td>
                <td>
                  <Finding v={v} />
                </td>
                <td>
                  {v.task_log_id ? (
                    <Link to={playgroundLink(props.project.id, { task_log: v.task_log_id })}>
                      Open the call
                    </Link>
                  ) : (
                    <span className="muted">not recorded</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/** What the project's guards did over a window: per check, its counts and latest verdicts. */
export function GuardVerdicts(props: { project: Project }) {
  const [range, setRange] = useState<string>('86400');
  const [since, setSince] = useState(() => sinceOf('86400'));
  const summary = useApi<GuardVerdictSummary>(
    `/projects/${props.project.id}/guards/verdicts/summary${query({ since, examples: 5 })}`,
  );
  const guards = summary.data?.guards ?? [];
  return (
    <section className="card">
      <div className="section-head">
        <h2>Verdicts</h2>
        <div className="inline">
          <label>
            Window
            <select
              value={range}
              onChange={(e) => {
                setRange(e.target.value);
                setSince(sinceOf(e.target.value));
              }}
            >
              {WINDOWS.map(([seconds, label]) => (
                <option key={seconds} value={seconds}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <button type="button" onClick={() => setSince(sinceOf(range))}>
            Refresh
          </button>
        </div>
      </div>
      <p className="muted">
        Calls each check blocked, flagged, redacted or failed on (a check that fails open says error); passes
        are not counted.
      </p>
      <ErrorBox error={summary.error} />
      {!summary.data ? (
        <Loading />
      ) : guards.length === 0 ? (
        <Empty>No verdicts in this window.</Empty>
      ) : (
        guards.map((g) => <GuardCard key={g.guard} project={props.project} g={g} />)
      )}
    </section>
  );
}
