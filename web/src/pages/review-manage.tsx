import { type FormEvent, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { asText, Dialog, Empty, ErrorBox, fmtDate } from '../components';
import type { Evaluator, Project, Run } from '../types';
import type { Queue, RubricEvaluator } from './review-types';

const projectBase = (project: Project) => `/projects/${encodeURIComponent(project.id)}`;

/** A new queue: its name, rubric (evaluators), comment, reviewers per item and claim time. */
export function NewQueueDialog(props: {
  project: Project;
  onClose: () => void;
  onCreated: (queue: Queue) => void;
}) {
  const base = projectBase(props.project);
  const evaluators = useApi<ListOf<Evaluator>>(`${base}/evaluators?limit=100`);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [comment, setComment] = useState(false);
  const [reviewers, setReviewers] = useState(1);
  const [minutes, setMinutes] = useState(30);
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    try {
      const queue = await api<Queue>(`${base}/review/queues`, {
        method: 'POST',
        body: {
          name: name.trim(),
          ...(description.trim() ? { description: description.trim() } : {}),
          evaluators: chosen,
          comment,
          reviewers_per_item: reviewers,
          claim_seconds: Math.round(minutes * 60),
        },
      });
      props.onCreated(queue);
    } catch (err) {
      setError(err as Error);
      setBusy(false);
    }
  };

  const list = evaluators.data?.data ?? [];
  return (
    <Dialog title="New annotation queue" onClose={props.onClose}>
      <form onSubmit={submit} className="stack">
        <ErrorBox error={error ?? evaluators.error} />
        <label>
          Name
          <input
            aria-label="Queue name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            maxLength={200}
            required
          />
        </label>
        <label>
          Description
          <input
            aria-label="Queue description"
            value={description}
            onChange={(e) => setDescription(e.target.value)}
            placeholder="optional"
          />
        </label>
        <fieldset>
          <legend>Rubric: the evaluators whose scales reviewers score on</legend>
          {list.length === 0 && <span className="muted">No evaluators yet.</span>}
          <div className="checks">
            {list.map((ev) => (
              <label key={ev.id} className="check">
                <input
                  type="checkbox"
                  checked={chosen.includes(ev.id)}
                  onChange={(e) =>
                    setChosen(e.target.checked ? [...chosen, ev.id] : chosen.filter((c) => c !== ev.id))
                  }
                />
                {ev.name}
              </label>
            ))}
          </div>
        </fieldset>
        <label className="check">
          <input type="checkbox" checked={comment} onChange={(e) => setComment(e.target.checked)} />
          Ask for a comment
        </label>
        <label>
          Reviewers per item
          <input
            aria-label="Reviewers per item"
            type="number"
            min={1}
            max={20}
            value={reviewers}
            onChange={(e) => setReviewers(Number(e.target.value))}
          />
        </label>
        <label>
          Claim time (minutes)
          <input
            aria-label="Claim time in minutes"
            type="number"
            min={1}
            max={1440}
            value={minutes}
            onChange={(e) => setMinutes(Number(e.target.value))}
          />
        </label>
        <div className="actions">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={busy || chosen.length === 0 || !name.trim()}>
            Create queue
          </button>
        </div>
      </form>
    </Dialog>
  );
}

type AddMode = 'failed' | 'share' | 'task_logs';

/** What the add form sends: a rule over a run's scores, or task logs by id (the API's own body). */
function addBody(mode: AddMode, run: string, percent: number, seed: number, logs: string): object {
  if (mode === 'failed') return { rules: [{ run, failed: true }] };
  if (mode === 'share') return { rules: [{ run, share: percent / 100, seed }] };
  return { task_logs: logs.split(/[\s,]+/).filter(Boolean) };
}

/** Adding items to a queue: a run's failures, a seeded share of a run, or chosen task logs. */
export function AddItems(props: { project: Project; queue: Queue; onAdded: () => void }) {
  const base = projectBase(props.project);
  const runs = useApi<ListOf<Run>>(`${base}/runs?limit=100`);
  const [mode, setMode] = useState<AddMode>('failed');
  const [run, setRun] = useState('');
  const [percent, setPercent] = useState(10);
  const [seed, setSeed] = useState(0);
  const [logs, setLogs] = useState('');
  const [result, setResult] = useState<string>();
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    try {
      const r = await api<{ added: number; already_queued: number }>(
        `${base}/review/queues/${encodeURIComponent(props.queue.id)}/items`,
        { method: 'POST', body: addBody(mode, run, percent, seed, logs) },
      );
      setResult(`${r.added} added, ${r.already_queued} already queued`);
      props.onAdded();
    } catch (err) {
      setError(err as Error);
    }
    setBusy(false);
  };

  const needsRun = mode !== 'task_logs';
  return (
    <section className="card" aria-label="Add items">
      <h3>Add items</h3>
      <form onSubmit={submit} className="stack">
        <ErrorBox error={error} />
        <label>
          What to add
          <select aria-label="What to add" value={mode} onChange={(e) => setMode(e.target.value as AddMode)}>
            <option value="failed">A run's failures (on the rubric's first evaluator)</option>
            <option value="share">A random share of a run</option>
            <option value="task_logs">Task logs by id</option>
          </select>
        </label>
        {needsRun ? (
          <label>
            Run
            <select aria-label="Run" value={run} onChange={(e) => setRun(e.target.value)} required>
              <option value="">choose…</option>
              {(runs.data?.data ?? []).map((r) => (
                <option key={r.id} value={r.id}>
                  {r.name ? `${r.name} (${r.id})` : r.id}
                </option>
              ))}
            </select>
          </label>
        ) : (
          <label>
            Task log ids
            <textarea
              aria-label="Task log ids"
              value={logs}
              onChange={(e) => setLogs(e.target.value)}
              placeholder="log_…, one per line or separated by commas"
              rows={3}
              required
            />
          </label>
        )}
        {mode === 'share' ? (
          <div className="checks">
            <label>
              Share (%)
              <input
                aria-label="Share in percent"
                type="number"
                min={0.1}
                max={100}
                step="any"
                value={percent}
                onChange={(e) => setPercent(Number(e.target.value))}
              />
            </label>
            <label>
              Seed
              <input
                aria-label="Seed"
                type="number"
                min={0}
                value={seed}
                onChange={(e) => setSeed(Number(e.target.value))}
              />
            </label>
          </div>
        ) : null}
        {result ? (
          <p role="status" data-testid="items-added">
            {result}
          </p>
        ) : null}
        <div className="actions">
          <button type="submit" className="primary" disabled={busy || (needsRun && !run)}>
            Add to the queue
          </button>
        </div>
      </form>
    </section>
  );
}

/** Download links of the queue's human scores, as the API exports them. */
export function ExportLinks(props: { project: Project; queue: Queue }) {
  const url = (format: string) =>
    `/dashboard/api${projectBase(props.project)}/review/queues/${encodeURIComponent(props.queue.id)}/scores?format=${format}`;
  return (
    <nav className="checks" aria-label="Export">
      <span className="muted">Export human scores:</span>
      <a href={url('jsonl')} download={`${props.queue.id}-scores.jsonl`}>
        JSON lines
      </a>
      <a href={url('csv')} download={`${props.queue.id}-scores.csv`}>
        CSV
      </a>
    </nav>
  );
}

interface ReviewRow {
  id: string;
  item_id: string;
  evaluator_id: string;
  score: number | null;
  passed: boolean | null;
  label: string | null;
  comment: string | null;
  created_at: string;
}

const answerText = (r: ReviewRow) =>
  r.label ?? (r.passed !== null && r.score === null ? (r.passed ? 'pass' : 'fail') : asText(r.score));

/** The new answer's field, on the evaluator's scale. */
function AnswerField(props: {
  ev: RubricEvaluator | undefined;
  value: string;
  onChange: (v: string) => void;
}) {
  const scale = props.ev?.scale;
  const type = scale && 'type' in scale ? scale.type : undefined;
  if (scale && 'type' in scale && (scale.type === 'labels' || scale.type === 'pass_fail')) {
    const options = scale.type === 'labels' ? scale.labels : ['pass', 'fail'];
    return (
      <select aria-label="New answer" value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        <option value="">choose…</option>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  }
  return (
    <input
      aria-label="New answer"
      type="number"
      step={type === 'ordinal' ? 1 : 'any'}
      value={props.value}
      onChange={(e) => props.onChange(e.target.value)}
      required
    />
  );
}

function correctionBody(ev: RubricEvaluator | undefined, value: string, comment: string): object {
  const scale = ev?.scale;
  const type = scale && 'type' in scale ? scale.type : undefined;
  const answer =
    type === 'labels'
      ? { label: value }
      : type === 'pass_fail'
        ? { passed: value === 'pass' }
        : { score: Number(value) };
  return { ...answer, ...(comment.trim() ? { comment: comment.trim() } : {}) };
}

function CorrectForm(props: {
  path: string;
  review: ReviewRow;
  ev: RubricEvaluator | undefined;
  onDone: () => void;
  onCancel: () => void;
}) {
  const [value, setValue] = useState('');
  const [comment, setComment] = useState(props.review.comment ?? '');
  const [error, setError] = useState<Error>();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    try {
      await api(`${props.path}/reviews/${encodeURIComponent(props.review.id)}/correct`, {
        method: 'POST',
        body: correctionBody(props.ev, value, comment),
      });
      props.onDone();
    } catch (err) {
      setError(err as Error);
    }
  };
  return (
    <form onSubmit={submit} className="stack" aria-label={`Correct ${props.review.id}`}>
      <ErrorBox error={error} />
      <AnswerField ev={props.ev} value={value} onChange={setValue} />
      <input aria-label="Comment" value={comment} onChange={(e) => setComment(e.target.value)} />
      <div className="actions">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="submit" className="primary" disabled={value === ''}>
          Save correction
        </button>
      </div>
    </form>
  );
}

/** The signed-in user's current reviews in the queue, each correctable (the old answer kept as history). */
export function MyReviews(props: { project: Project; queue: Queue; onChange: () => void }) {
  const path = `${projectBase(props.project)}/review/queues/${encodeURIComponent(props.queue.id)}`;
  const reviews = useApi<ListOf<ReviewRow>>(`${path}/my-reviews?limit=100`);
  const [editing, setEditing] = useState<string>();
  const evOf = (id: string) => props.queue.rubric.evaluators.find((e) => e.id === id);
  const rows = reviews.data?.data ?? [];
  return (
    <section className="card" aria-label="Your reviews">
      <h3>Your reviews</h3>
      <ErrorBox error={reviews.error} />
      {reviews.data && rows.length === 0 ? (
        <Empty>You have not reviewed anything in this queue yet.</Empty>
      ) : null}
      {rows.length ? (
        <div className="table-scroll">
          <table aria-label="Your reviews">
            <thead>
              <tr>
                <th>Item</th>
                <th>Evaluator</th>
                <th>Answer</th>
                <th>Comment</th>
                <th>When</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} data-testid={`my-review-${r.item_id}`}>
                  <td>
                    <code>{r.item_id}</code>
                  </td>
                  <td>{evOf(r.evaluator_id)?.name ?? r.evaluator_id}</td>
                  <td data-testid="answer">{answerText(r)}</td>
                  <td>{r.comment ?? ''}</td>
                  <td>{fmtDate(r.created_at)}</td>
                  <td>
                    {editing === r.id ? (
                      <CorrectForm
                        path={path}
                        review={r}
                        ev={evOf(r.evaluator_id)}
                        onCancel={() => setEditing(undefined)}
                        onDone={() => {
                          setEditing(undefined);
                          reviews.reload();
                          props.onChange();
                        }}
                      />
                    ) : (
                      <button type="button" onClick={() => setEditing(r.id)}>
                        Correct
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
