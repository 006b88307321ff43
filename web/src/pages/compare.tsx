import { useState } from 'react';
import { type ListOf, query, useApi } from '../api';
import { Empty, ErrorBox, fmtDate, fmtNum, fmtPct, Loading, launchName, Value } from '../components';
import type { Project, Run, RunComparison, RunDetail } from '../types';

const signed = (v: number | null) => (v === null ? '—' : `${v > 0 ? '+' : ''}${v.toFixed(3)}`);

type Launch = RunComparison['comparisons'][number]['launch'];

/** Within an experiment: its prompt versions compared on each model, or its models on each version. */
const WITHIN: Record<string, { by: 'prompt_version' | 'model'; label: string }> = {
  'by:prompt_version': { by: 'prompt_version', label: 'its prompt versions (on each model)' },
  'by:model': { by: 'model', label: 'its models (on each prompt version)' },
};

/**
 * The run against a baseline run of the project, or (an experiment) its launches against each other:
 * regressions first, then the paired figures.
 */
export function ComparePanel(props: { project: Project; detail: RunDetail }) {
  const runId = props.detail.run.id;
  const base = `/projects/${props.project.id}/runs`;
  const runs = useApi<ListOf<Run>>(`${base}${query({ status: 'completed', limit: 100 })}`);
  const experiment = props.detail.launches.some((l) => l.prompt);
  const [baseline, setBaseline] = useState(experiment ? 'by:prompt_version' : '');
  const within = WITHIN[baseline];
  const comparison = useApi<RunComparison>(
    within
      ? `${base}/${runId}/compare${query({ by: within.by, limit: 20 })}`
      : baseline
        ? `${base}/${runId}/compare${query({ baseline, limit: 20 })}`
        : null,
  );
  const launches = props.detail.launches.length;
  const name = (l: Launch) => launchName(l.model, l.index, launches, l.prompt);
  const candidates = (runs.data?.data ?? []).filter((r) => r.id !== runId);
  const regressions = (comparison.data?.comparisons ?? [])
    .flatMap((c) => c.regressions.map((r) => ({ ...r, comparison: c })))
    .sort((a, b) => a.difference - b.difference);

  return (
    <div className="compare">
      <label>
        Baseline run
        <select aria-label="Baseline run" value={baseline} onChange={(e) => setBaseline(e.target.value)}>
          <option value="">choose a completed run…</option>
          {experiment &&
            Object.entries(WITHIN).map(([value, w]) => (
              <option key={value} value={value}>
                this run: {w.label}
              </option>
            ))}
          {candidates.map((r) => (
            <option key={r.id} value={r.id}>
              {r.name ? `${r.name} · ` : ''}
              {r.id} · {fmtDate(r.created_at)}
            </option>
          ))}
        </select>
      </label>
      <ErrorBox error={comparison.error} />
      {baseline && !comparison.data && !comparison.error && <Loading />}
      {comparison.data && (
        <>
          {comparison.data.partial && (
            <div className="notice">One of the runs is not completed: the figures are partial.</div>
          )}
          <p className="compare-summary">
            {comparison.data.summary.comparisons} comparison(s): {comparison.data.summary.comparisons_better}{' '}
            better, {comparison.data.summary.comparisons_worse} worse, {comparison.data.summary.inconclusive}{' '}
            inconclusive; {comparison.data.summary.matched} matched positions:{' '}
            {comparison.data.summary.positions_better} better, {comparison.data.summary.ties} tied,{' '}
            {comparison.data.summary.positions_worse} worse; mean difference{' '}
            {signed(comparison.data.summary.mean_difference)}.
          </p>
          <h3>Regressions ({regressions.length})</h3>
          {regressions.length === 0 ? (
            <Empty>No position scored lower than in the {within ? 'reference launch' : 'baseline'}.</Empty>
          ) : (
            regressions.map((r) => (
              <article
                key={`${r.comparison.evaluator.id}:${r.comparison.launch.index}:${r.run.position}`}
                className="sample card regression"
              >
                <header className="row">
                  <span>
                    <strong>#{r.run.position}</strong>{' '}
                    {r.item_id && <code className="muted">{r.item_id}</code>} · {r.comparison.evaluator.name}{' '}
                    · {name(r.comparison.launch)}
                    {within && ` vs ${name(r.comparison.baseline_launch)}`}
                  </span>
                  <span className="badge fail">
                    {fmtNum(r.baseline.score)} → {fmtNum(r.run.score)} ({signed(r.difference)})
                  </span>
                </header>
                <div className="fields">
                  <div>
                    <h4>Input</h4>
                    <Value value={r.input} />
                  </div>
                  <div>
                    <h4>Expected</h4>
                    <Value value={r.expected} />
                  </div>
                </div>
                <div className="fields side-by-side">
                  <div>
                    <h4>{within ? name(r.comparison.launch) : 'This run'}</h4>
                    <Value value={r.run.output} />
                    {r.run.reasoning && <p className="reasoning">{r.run.reasoning}</p>}
                  </div>
                  <div>
                    <h4>{within ? name(r.comparison.baseline_launch) : 'Baseline'}</h4>
                    <Value value={r.baseline.output} />
                    {r.baseline.reasoning && <p className="reasoning">{r.baseline.reasoning}</p>}
                  </div>
                </div>
              </article>
            ))
          )}
          <h3>Per evaluator and {within ? 'launch pair' : 'model'}</h3>
          <table>
            <thead>
              <tr>
                <th>Evaluator</th>
                <th>{within ? 'Launch vs reference' : 'Model'}</th>
                <th>Verdict</th>
                <th>Mean difference</th>
                <th>95% interval</th>
                <th>Wins / ties / losses</th>
                <th>Pass rate</th>
              </tr>
            </thead>
            <tbody>
              {comparison.data.comparisons.map((c) => (
                <tr key={`${c.evaluator.id}:${c.launch.index}:${c.baseline_launch.index}`}>
                  <td>{c.evaluator.name}</td>
                  <td>{within ? `${name(c.launch)} vs ${name(c.baseline_launch)}` : name(c.launch)}</td>
                  <td>
                    <span className={`badge verdict-${c.verdict}`}>{c.verdict}</span>
                  </td>
                  <td>{signed(c.mean_difference)}</td>
                  <td>
                    {c.confidence_interval
                      ? `${signed(c.confidence_interval.lower)} … ${signed(c.confidence_interval.upper)}`
                      : '—'}
                  </td>
                  <td>
                    {c.wins} / {c.ties} / {c.losses}
                  </td>
                  <td>
                    {fmtPct(c.pass_rate.baseline)} → {fmtPct(c.pass_rate.run)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}
