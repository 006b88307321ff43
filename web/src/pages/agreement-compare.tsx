import { type FormEvent, useState } from 'react';
import { type ListOf, query, useApi } from '../api';
import { Empty, ErrorBox, Loading } from '../components';
import { Link } from '../router';
import type { Evaluator, Project, Run } from '../types';
import { Group } from './agreement';
import type { Agreement, QueueDetail } from './review-types';

type Compared = Agreement & { compare?: Agreement };

/** One side of the comparison: an evaluator's figures per prompt version. */
function Side(props: { agreement: Agreement; itemLink: (id: string) => string; testId: string }) {
  const a = props.agreement;
  return (
    <section className="card" aria-label={`Figures of ${a.evaluator.name}`} data-testid={props.testId}>
      <h3>{a.evaluator.name}</h3>
      <p className="muted">{a.n} judge–human pairs</p>
      {a.groups.length === 0 ? <Empty>No pair of a judge score and a human answer.</Empty> : null}
      {a.groups.map((g) => (
        <Group key={g.prompt_hash ?? 'none'} figures={g} itemLink={props.itemLink} />
      ))}
    </section>
  );
}

/**
 * Two judge prompts side by side against the same human answers: over this queue's reviews, or over a run
 * of the reviewed items (an exported dataset, each row's expected being the human answer).
 */
export function ComparePage(props: { project: Project; queue: string }) {
  const p = encodeURIComponent(props.project.id);
  const detail = useApi<QueueDetail>(`/projects/${p}/review/queues/${encodeURIComponent(props.queue)}`);
  const evaluators = useApi<ListOf<Evaluator>>(`/projects/${p}/evaluators?limit=100`);
  const runs = useApi<ListOf<Run>>(`/projects/${p}/runs?limit=100`);
  const [evaluator, setEvaluator] = useState('');
  const [compare, setCompare] = useState('');
  const [run, setRun] = useState('');
  const [asked, setAsked] = useState<string | null>(null);
  const result = useApi<Compared>(asked);
  if (!detail.data) return detail.error ? <ErrorBox error={detail.error} /> : <Loading />;
  const queue = detail.data.queue;
  const first = evaluator || queue.rubric.evaluators[0]?.id || '';
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const q = run ? { run, compare } : { queue: queue.id, compare };
    setAsked(`/projects/${p}/review/evaluators/${encodeURIComponent(first)}/agreement${query(q)}`);
  };
  const itemLink = (id: string) => `/projects/${props.project.id}/review/${queue.id}/item/${id}`;
  return (
    <>
      <p>
        <Link to={`/projects/${props.project.id}/review/${queue.id}/agreement`}>Back to the agreement</Link>
      </p>
      <section className="card" aria-label="Compare prompt versions">
        <h2>Compare judge prompts: {queue.name}</h2>
        <p className="muted">
          Each evaluator's agreement with the same human answers, side by side, per prompt version (its hash).
        </p>
        <form onSubmit={submit} className="stack">
          <ErrorBox error={evaluators.error ?? runs.error} />
          <label>
            Evaluator
            <select aria-label="Evaluator" value={first} onChange={(e) => setEvaluator(e.target.value)}>
              {queue.rubric.evaluators.map((ev) => (
                <option key={ev.id} value={ev.id}>
                  {ev.name}
                </option>
              ))}
            </select>
          </label>
          <label>
            Compared with
            <select
              aria-label="Compared with"
              value={compare}
              onChange={(e) => setCompare(e.target.value)}
              required
            >
              <option value="">choose…</option>
              {(evaluators.data?.data ?? []).map((ev) => (
                <option key={ev.id} value={ev.id}>
                  {ev.name}
                </option>
              ))}
            </select>
          </label>
          <label>
            Human answers from
            <select aria-label="Human answers from" value={run} onChange={(e) => setRun(e.target.value)}>
              <option value="">this queue's reviews</option>
              {(runs.data?.data ?? []).map((r) => (
                <option key={r.id} value={r.id}>
                  run {r.name ? `${r.name} (${r.id})` : r.id} (expected = the human answer)
                </option>
              ))}
            </select>
          </label>
          <div className="actions">
            <button type="submit" className="primary" disabled={!compare || !first}>
              Compare
            </button>
          </div>
        </form>
      </section>
      {asked && !result.data && !result.error ? <Loading /> : null}
      <ErrorBox error={result.error} />
      {result.data ? (
        <div className="grid">
          <Side agreement={result.data} itemLink={itemLink} testId="compare-main" />
          {result.data.compare ? (
            <Side agreement={result.data.compare} itemLink={itemLink} testId="compare-other" />
          ) : null}
        </div>
      ) : null}
    </>
  );
}
