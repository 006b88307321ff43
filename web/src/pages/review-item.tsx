import { useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../api';
import { ErrorBox, fmtDate, Value } from '../components';
import type { Project } from '../types';
import { AddToDataset } from './add-to-dataset';
import { ToolStepView, Transcript } from './review-content';
import { Rubric } from './review-rubric';
import type { Answer, ItemView, MyReview, Queue, RubricEvaluator } from './review-types';

const BLIND_KEY = 'evalgate.review.blind';

interface Shown {
  item: ItemView;
  mine: MyReview[];
}

/** The answer a key gives on an evaluator's scale (number keys, p / f), or null when it means nothing there. */
export function answerOfKey(ev: RubricEvaluator, key: string): Answer | null {
  const scale = ev.scale;
  if (!('type' in scale)) return null;
  const digit = /^[0-9]$/.test(key) ? Number(key) : null;
  switch (scale.type) {
    case 'pass_fail':
      if (key === 'p' || digit === 1) return { passed: true };
      if (key === 'f' || digit === 0) return { passed: false };
      return null;
    case 'ordinal':
      return digit !== null && digit >= scale.min && digit <= scale.max ? { score: digit } : null;
    case 'labels': {
      const label = digit === null || digit === 0 ? undefined : scale.labels[digit - 1];
      return label === undefined ? null : { label };
    }
    default:
      return null;
  }
}

function ItemContent(props: { view: ItemView; queue: Queue }) {
  const { view, queue } = props;
  const { content } = view;
  const nameOf = (id: string) => queue.rubric.evaluators.find((e) => e.id === id)?.name ?? id;
  return (
    <>
      {content.error ? (
        <p className="error" data-testid="call-error">
          The call failed ({content.error.code}): {content.error.message}
        </p>
      ) : null}
      {view.item.kind === 'tool_step' ? (
        <ToolStepView view={view} />
      ) : view.item.kind === 'session' ? (
        <section aria-label="Session">
          <h3>Session {view.item.ref}</h3>
          <Transcript content={content} />
        </section>
      ) : (
        <dl className="facts" aria-label="Item">
          <dt>Input</dt>
          <dd>
            <Value value={content.input} />
          </dd>
          <dt>Output</dt>
          <dd>
            <Value value={content.output} />
          </dd>
          {content.expected !== null ? (
            <>
              <dt>Expected</dt>
              <dd>
                <Value value={content.expected} />
              </dd>
            </>
          ) : null}
          {content.metadata !== null ? (
            <>
              <dt>Context</dt>
              <dd>
                <Value value={content.metadata} />
              </dd>
            </>
          ) : null}
        </dl>
      )}
      <section aria-label="Judge">
        <h3>Judge</h3>
        {view.judge === null ? (
          <p className="muted">Hidden until you have scored this item.</p>
        ) : view.judge.length === 0 ? (
          <p className="muted">No judge score for this item.</p>
        ) : (
          view.judge.map((j) => (
            <div key={j.evaluator_id} className="verdicts">
              <strong>{j.evaluator ?? nameOf(j.evaluator_id)}</strong>:{' '}
              <span data-testid="judge-score">
                {j.status === 'error'
                  ? `error (${j.error?.code ?? 'unknown'})`
                  : `${j.label ?? j.score ?? '—'}${j.passed === null ? '' : j.passed ? ' (pass)' : ' (fail)'}`}
              </span>
              {j.status === 'error' && j.error ? <p className="reasoning">{j.error.message}</p> : null}
              {j.reasoning ? <p className="reasoning">{j.reasoning}</p> : null}
            </div>
          ))
        )}
      </section>
    </>
  );
}

/**
 * Reviewing a queue as the signed-in user: claim the next item, score it on the rubric (buttons or keys),
 * skip it, flag it, and move between the items seen here with j / k.
 */
export function Reviewer(props: {
  project: Project;
  queue: Queue;
  base: string;
  initialItem: string | undefined;
  onChange: () => void;
}) {
  const { queue, base, onChange } = props;
  const [blind, setBlind] = useState(() => localStorage.getItem(BLIND_KEY) !== 'false');
  const [history, setHistory] = useState<string[]>([]);
  const [pos, setPos] = useState(-1);
  const [shown, setShown] = useState<Shown | null>(null);
  const [finished, setFinished] = useState(false);
  const [answers, setAnswers] = useState<Record<string, Answer>>({});
  const [comment, setComment] = useState('');
  const [flagging, setFlagging] = useState<string | null>(null);
  const [error, setError] = useState<Error>();
  const busy = useRef(false);
  // Focus comes back here after each step (scoring disables the pressed button, which would drop it).
  const itemRef = useRef<HTMLParagraphElement>(null);

  const run = useCallback(async (work: () => Promise<void>) => {
    if (busy.current) return;
    busy.current = true;
    setError(undefined);
    try {
      await work();
      itemRef.current?.focus({ preventScroll: true });
    } catch (e) {
      setError(e as Error);
    } finally {
      busy.current = false;
    }
  }, []);

  const show = useCallback((next: Shown | null) => {
    setShown(next);
    setAnswers({});
    setComment('');
    setFlagging(null);
  }, []);

  const load = useCallback(
    async (id: string) => {
      show(await api<Shown>(`${base}/items/${encodeURIComponent(id)}?hide_judge=${blind}`));
      setFinished(false);
    },
    [base, blind, show],
  );

  const claim = useCallback(async () => {
    const r = await api<{ item: ItemView | null }>(`${base}/claim?hide_judge=${blind}`, { method: 'POST' });
    onChange();
    if (!r.item) {
      show(null);
      setFinished(true);
      setPos(history.length);
      return;
    }
    const id = r.item.item.id;
    show({ item: r.item, mine: [] });
    setFinished(false);
    const at = history.indexOf(id);
    if (at >= 0) setPos(at);
    else {
      setHistory([...history, id]);
      setPos(history.length);
    }
  }, [base, blind, history, onChange, show]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: once, on opening the queue
  useEffect(() => {
    if (props.initialItem) {
      setHistory([props.initialItem]);
      setPos(0);
      void run(() => load(props.initialItem ?? ''));
    } else void run(claim);
  }, []);

  const reviewed = (shown?.mine.length ?? 0) > 0;
  const holding = shown !== null && shown.item.claim !== null && !reviewed;
  const rubric = queue.rubric.evaluators;
  const active = reviewed ? undefined : rubric.find((e) => answers[e.id] === undefined);

  const answer = (ev: RubricEvaluator, a: Answer) =>
    run(async () => {
      // Only an item this reviewer holds takes an answer (another's claim would answer 409).
      if (!shown || reviewed || !holding) return;
      const next = { ...answers, [ev.id]: a };
      setAnswers(next);
      if (rubric.some((e) => next[e.id] === undefined)) return;
      const scores = rubric.map((e) => ({ evaluator: e.id, ...next[e.id] }));
      const body = { scores, ...(queue.rubric.comment && comment.trim() ? { comment } : {}) };
      await api(`${base}/items/${shown.item.item.id}/review`, { method: 'POST', body });
      onChange();
      await load(shown.item.item.id);
    });

  const skip = () =>
    run(async () => {
      if (!shown || !holding) return;
      await api(`${base}/items/${shown.item.item.id}/skip`, { method: 'POST' });
      await claim();
    });

  const flag = (reason: string) =>
    run(async () => {
      if (!shown) return;
      await api(`${base}/items/${shown.item.item.id}/flag`, { method: 'POST', body: { reason } });
      await claim();
    });

  const move = (step: 1 | -1) =>
    run(async () => {
      const to = pos + step;
      if (to >= 0 && to < history.length) {
        setPos(to);
        await load(history[to] ?? '');
      } else if (step === 1 && !holding && !finished) await claim();
    });

  const keyRef = useRef<(e: KeyboardEvent) => void>(() => undefined);
  keyRef.current = (e: KeyboardEvent) => {
    const target = e.target as HTMLElement | null;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (target && ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName)) return;
    const key = e.key.toLowerCase();
    if (key === 'j') void move(1);
    else if (key === 'k') void move(-1);
    else if (key === 's') void skip();
    else if (key === 'x' && holding && flagging === null) {
      // Opens the flag's reason field (the typed key is not entered into it).
      setFlagging('');
    } else if (active && holding) {
      const a = answerOfKey(active, key);
      if (a) void answer(active, a);
      else return;
    } else return;
    e.preventDefault();
  };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => keyRef.current(e);
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const setBlindness = (on: boolean) => {
    localStorage.setItem(BLIND_KEY, String(on));
    setBlind(on);
  };

  return (
    <section className="card" aria-label="Review item">
      <div className="section-head">
        <h2>Review</h2>
        <label className="checks">
          <input type="checkbox" checked={blind} onChange={(e) => setBlindness(e.target.checked)} /> Hide the
          judge until I have scored
        </label>
      </div>
      <p className="muted small">
        Keys: number keys score · p / f pass or fail · s skip · x flag · j next · k previous
        {history.length ? ` · item ${Math.min(pos + 1, history.length)} of ${history.length} seen here` : ''}
      </p>
      <ErrorBox error={error} />
      {finished ? <p role="status">Nothing left for you to review in this queue.</p> : null}
      {finished && queue.counts.open > 0 ? (
        <p className="muted" data-testid="open-hint">
          {queue.counts.open === 1 ? '1 item is' : `${queue.counts.open} items are`} still open: each waits
          for a reviewer who has not reviewed or skipped it. An item every reviewer skipped stays open until
          someone is added to the queue or an admin removes or settles it.
        </p>
      ) : null}
      {shown ? (
        <>
          <p ref={itemRef} tabIndex={-1} data-testid="current-item">
            <span className="badge" data-testid="item-id">
              {shown.item.item.id}
            </span>{' '}
            {reviewed ? (
              <AddToDataset project={props.project.id} from={{ review_id: shown.item.item.id }} />
            ) : null}{' '}
            <span className="muted">
              {shown.item.item.kind} · {shown.item.item.source}
            </span>{' '}
            <span role="status" data-testid="item-state">
              {reviewed
                ? 'Reviewed'
                : holding
                  ? `Claimed until ${fmtDate(shown.item.claim?.expires_at)}`
                  : `Not claimed (${shown.item.item.state})`}
            </span>
          </p>
          <ItemContent view={shown.item} queue={queue} />
          <Rubric
            rubric={rubric}
            answers={answers}
            mine={shown.mine}
            active={active?.id}
            disabled={reviewed || !holding}
            onAnswer={(ev, a) => void answer(ev, a)}
          />
          {queue.rubric.comment ? (
            <label className="fields">
              Comment
              <textarea
                value={reviewed ? (shown.mine[0]?.comment ?? '') : comment}
                readOnly={reviewed}
                onChange={(e) => setComment(e.target.value)}
                rows={3}
              />
            </label>
          ) : null}
          <div className="actions">
            <button type="button" onClick={() => void skip()} disabled={!holding}>
              Skip (s)
            </button>
            {flagging === null ? (
              <button type="button" className="ghost" onClick={() => setFlagging('')} disabled={!holding}>
                Flag
              </button>
            ) : (
              <form
                className="row"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (flagging.trim()) void flag(flagging.trim());
                }}
              >
                <label>
                  Reason{' '}
                  <input
                    // biome-ignore lint/a11y/noAutofocus: opened on purpose (the x key or the Flag button)
                    autoFocus
                    value={flagging}
                    onChange={(e) => setFlagging(e.target.value)}
                  />
                </label>
                <button type="submit">Flag item</button>
              </form>
            )}
            <button type="button" className="ghost" onClick={() => void move(-1)} disabled={pos <= 0}>
              Previous (k)
            </button>
            <button type="button" className="ghost" onClick={() => void move(1)} disabled={holding}>
              Next (j)
            </button>
          </div>
        </>
      ) : null}
    </section>
  );
}
