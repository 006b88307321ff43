import { useState } from 'react';
import { type ListOf, query, useApi } from '../api';
import {
  Empty,
  ErrorBox,
  fmtNum,
  fmtUsd,
  Loading,
  launchName,
  Pager,
  StatusBadge,
  Value,
} from '../components';
import { Link } from '../router';
import type { RunDetail, Sample } from '../types';

const OUTCOMES: Record<string, Record<string, string | boolean>> = {
  all: {},
  passed: { passed: true },
  failed: { passed: false },
  errored: { status: 'error' },
  missing: { status: 'missing' },
};
const PAGE = 10;

function Verdicts(props: { sample: Sample }) {
  const verdicts = props.sample.extra?.verdicts;
  if (verdicts?.length !== 2) return null;
  const [reasonA, reasonB] = (props.sample.reasoning ?? '').split(' | ');
  const say = (w: string | undefined, sampleAs: 'A' | 'B') =>
    w === 'tie' ? 'tie' : w === sampleAs ? 'sample wins' : 'baseline wins';
  return (
    <div className="verdicts">
      <div>
        <strong>Sample shown as A:</strong> {say(verdicts[0], 'A')}{' '}
        <span className="muted">({verdicts[0]})</span>
        {reasonA && <p className="reasoning">{reasonA.replace(/^sample as A: /, '')}</p>}
      </div>
      <div>
        <strong>Sample shown as B:</strong> {say(verdicts[1], 'B')}{' '}
        <span className="muted">({verdicts[1]})</span>
        {reasonB && <p className="reasoning">{reasonB.replace(/^sample as B: /, '')}</p>}
      </div>
      {props.sample.extra?.inconsistent && <p className="warn">The two orders disagree (a position bias).</p>}
    </div>
  );
}

/** The sample's item id, linked to the page that shows the item (a session, a trace) when there is one. */
/** The item's page: a tool step's id (`<session>#<tool call id>`) links to its session, at the call. */
function ItemRef(props: { id: string | null; page: string | null }) {
  if (!props.id) return null;
  const id = <code className="muted">{props.id}</code>;
  if (!props.page) return id;
  const at = props.id.indexOf('#');
  const href =
    at > 0
      ? `${props.page}/${encodeURIComponent(props.id.slice(0, at))}#${encodeURIComponent(props.id.slice(at + 1))}`
      : `${props.page}/${encodeURIComponent(props.id)}`;
  return <Link to={href}>{id}</Link>;
}

function SampleCard(props: {
  sample: Sample;
  evaluator: string;
  model: string;
  pairwise: boolean;
  itemPage: string | null;
}) {
  const s = props.sample;
  return (
    <article className="sample card" data-position={s.position}>
      <header className="row">
        <span>
          <strong>#{s.position}</strong> <ItemRef id={s.item_id} page={props.itemPage} /> · {props.evaluator}{' '}
          · {props.model}
        </span>
        <span className="row">
          <StatusBadge status={s.status} />
          {s.passed !== null && (
            <span className={`badge ${s.passed ? 'pass' : 'fail'}`}>{s.passed ? 'passed' : 'failed'}</span>
          )}
          <span>score {fmtNum(s.score)}</span>
          <span className="muted">{fmtUsd(s.cost)}</span>
        </span>
      </header>
      <div className="fields">
        <div>
          <h4>Input</h4>
          <Value value={s.input} />
        </div>
        <div>
          <h4>Expected</h4>
          <Value value={s.expected} />
        </div>
      </div>
      {props.pairwise ? (
        <>
          <div className="fields side-by-side">
            <div>
              <h4>Sample output</h4>
              <Value value={s.output} />
            </div>
            <div>
              <h4>Baseline output</h4>
              <Value value={s.baseline} />
            </div>
          </div>
          <Verdicts sample={s} />
        </>
      ) : (
        <>
          <h4>Output</h4>
          <Value value={s.output} />
          {s.reasoning && (
            <>
              <h4>Judge reasoning</h4>
              <p className="reasoning">{s.reasoning}</p>
            </>
          )}
        </>
      )}
      {s.status === 'missing' && s.missing_reason && (
        <p className="missing-reason muted">Not scored: {s.missing_reason}</p>
      )}
      {s.error && (
        <div className="error">
          {s.error.code}: {s.error.message}
        </div>
      )}
      {s.logs && (
        <details>
          <summary>Logs</summary>
          <pre className="value">{s.logs}</pre>
        </details>
      )}
    </article>
  );
}

/** Per-sample results with filters for evaluator, launch and outcome. */
export function SampleBrowser(props: { base: string; project: string; detail: RunDetail }) {
  const { detail } = props;
  const itemPage = detail.item_page ? `/projects/${props.project}/${detail.item_page}` : null;
  const [evaluator, setEvaluator] = useState('');
  const [launch, setLaunch] = useState('');
  const [outcome, setOutcome] = useState('all');
  const [offset, setOffset] = useState(0);
  const samples = useApi<ListOf<Sample>>(
    `${props.base}/samples${query({ evaluator, launch, ...OUTCOMES[outcome], limit: PAGE, offset })}`,
  );
  const evaluators = new Map(detail.evaluators.map((e) => [e.id, e]));
  const models = new Map(
    detail.launches.map((l) => [l.index, launchName(l.model, l.index, detail.launches.length, l.prompt)]),
  );
  const change = (set: (v: string) => void) => (value: string) => {
    set(value);
    setOffset(0);
  };

  return (
    <div className="samples">
      <div className="inline filters">
        <label>
          Evaluator
          <select
            aria-label="Evaluator"
            value={evaluator}
            onChange={(e) => change(setEvaluator)(e.target.value)}
          >
            <option value="">all</option>
            {detail.evaluators.map((e) => (
              <option key={e.id} value={e.id}>
                {e.name}
              </option>
            ))}
          </select>
        </label>
        {detail.launches.length > 1 && (
          <label>
            Launch
            <select aria-label="Launch" value={launch} onChange={(e) => change(setLaunch)(e.target.value)}>
              <option value="">all</option>
              {detail.launches.map((l) => (
                <option key={l.index} value={String(l.index)}>
                  {models.get(l.index)}
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          Outcome
          <select aria-label="Outcome" value={outcome} onChange={(e) => change(setOutcome)(e.target.value)}>
            {Object.keys(OUTCOMES).map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorBox error={samples.error} />
      {!samples.data ? (
        <Loading />
      ) : samples.data.data.length === 0 ? (
        <Empty>No samples match.</Empty>
      ) : (
        samples.data.data.map((s) => (
          <SampleCard
            key={`${s.launch_index}:${s.evaluator_id}:${s.position}`}
            sample={s}
            evaluator={evaluators.get(s.evaluator_id)?.name ?? s.evaluator_id}
            model={models.get(s.launch_index) ?? ''}
            pairwise={evaluators.get(s.evaluator_id)?.mode === 'pairwise'}
            itemPage={itemPage}
          />
        ))
      )}
      {samples.data && <Pager offset={offset} limit={PAGE} total={samples.data.total} onChange={setOffset} />}
    </div>
  );
}
