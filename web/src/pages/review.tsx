import { useState } from 'react';
import { type ListOf, useApi } from '../api';
import { Empty, ErrorBox, Loading, ProgressBar } from '../components';
import { Link, navigate } from '../router';
import type { Project } from '../types';
import { AgreementPage } from './agreement';
import { ComparePage } from './agreement-compare';
import { Reviewer } from './review-item';
import { AddItems, ExportLinks, MyReviews, NewQueueDialog } from './review-manage';
import type { Queue, QueueDetail } from './review-types';

/** The rubric in words: each evaluator with its scale. */
export function scaleText(scale: QueueDetail['queue']['rubric']['evaluators'][number]['scale']): string {
  if (!('type' in scale)) return 'no scale';
  switch (scale.type) {
    case 'pass_fail':
      return 'pass / fail';
    case 'ordinal':
      return `${scale.min}–${scale.max}`;
    case 'continuous':
      return `${scale.min ?? '−∞'} to ${scale.max ?? '∞'}`;
    case 'labels':
      return scale.labels.join(' · ');
  }
}

/** Whether the user may change the project's queues (a `reviewer` member only reviews). */
const manages = (project: Project) => project.role !== 'reviewer';

/** /projects/:p/review[/:queue[/agreement | /compare | /item/:item]] */
export function ReviewSection(props: { project: Project; rest: string[] }) {
  const [queue, sub, item] = props.rest;
  if (!queue) return <QueuesPage project={props.project} />;
  if (sub === 'agreement') return <AgreementPage project={props.project} queue={queue} />;
  if (sub === 'compare') return <ComparePage project={props.project} queue={queue} />;
  return <QueuePage project={props.project} queue={queue} item={sub === 'item' ? item : undefined} />;
}

function QueuesPage(props: { project: Project }) {
  const base = `/projects/${encodeURIComponent(props.project.id)}`;
  const queues = useApi<ListOf<Queue>>(`${base}/review/queues?limit=100`);
  const [creating, setCreating] = useState(false);
  if (!queues.data) return queues.error ? <ErrorBox error={queues.error} /> : <Loading />;
  return (
    <section className="card">
      <div className="section-head">
        <h2>Annotation queues</h2>
        {manages(props.project) ? (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New queue
          </button>
        ) : null}
      </div>
      {creating ? (
        <NewQueueDialog
          project={props.project}
          onClose={() => setCreating(false)}
          onCreated={(q) => navigate(`/projects/${props.project.id}/review/${q.id}`)}
        />
      ) : null}
      {queues.data.data.length === 0 ? (
        <Empty>
          No annotation queues yet. Create one with New queue, the API or `evalgate queues create`.
        </Empty>
      ) : (
        <div className="table-scroll">
          <table aria-label="Queues">
            <thead>
              <tr>
                <th>Queue</th>
                <th>Rubric</th>
                <th>Done</th>
                <th>Open</th>
                <th>Flagged</th>
              </tr>
            </thead>
            <tbody>
              {queues.data.data.map((q) => (
                <tr key={q.id}>
                  <td>
                    <Link to={`/projects/${props.project.id}/review/${q.id}`}>{q.name}</Link>
                  </td>
                  <td>{q.rubric.evaluators.map((e) => e.name).join(', ')}</td>
                  <td>
                    <ProgressBar done={q.counts.done} total={q.counts.total} label />
                  </td>
                  <td>{q.counts.open}</td>
                  <td>{q.counts.flagged}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function QueuePage(props: { project: Project; queue: string; item: string | undefined }) {
  const base = `/projects/${encodeURIComponent(props.project.id)}/review/queues/${encodeURIComponent(props.queue)}`;
  const detail = useApi<QueueDetail>(base);
  if (!detail.data) return detail.error ? <ErrorBox error={detail.error} /> : <Loading />;
  const { queue, progress, remaining } = detail.data;
  return (
    <>
      <section className="card" aria-label="Queue progress">
        <div className="section-head">
          <h2>{queue.name}</h2>
          <Link to={`/projects/${props.project.id}/review/${queue.id}/agreement`}>Agreement</Link>
        </div>
        {queue.description ? <p className="muted">{queue.description}</p> : null}
        <p>
          <span data-testid="queue-done">
            {queue.counts.done} / {queue.counts.total} done
          </span>
          <span className="muted">
            {' '}
            · {queue.counts.open} open · {queue.counts.flagged} flagged · {remaining} left for you
          </span>
        </p>
        <ProgressBar done={queue.counts.done} total={queue.counts.total} label={false} />
        {manages(props.project) ? <ExportLinks project={props.project} queue={queue} /> : null}
        {progress.length ? (
          <div className="table-scroll">
            <table aria-label="Reviewers">
              <thead>
                <tr>
                  <th>Reviewer</th>
                  <th>Reviewed</th>
                  <th>Skipped</th>
                  <th>Flagged</th>
                  <th>Holding</th>
                </tr>
              </thead>
              <tbody>
                {progress.map((p) => (
                  <tr key={p.reviewer}>
                    <td>{p.name}</td>
                    <td>{p.reviewed}</td>
                    <td>{p.skipped}</td>
                    <td>{p.flagged}</td>
                    <td>{p.claimed}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </section>
      <Reviewer
        project={props.project}
        queue={queue}
        base={base}
        initialItem={props.item}
        onChange={detail.reload}
      />
      {manages(props.project) ? (
        <AddItems project={props.project} queue={queue} onAdded={detail.reload} />
      ) : null}
      <MyReviews key={queue.counts.reviews} project={props.project} queue={queue} onChange={detail.reload} />
    </>
  );
}
