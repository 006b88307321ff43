import { type FormEvent, useEffect, useState } from 'react';
import { api, type ListOf, query, useApi } from '../api';
import {
  ContainerOptions,
  Dialog,
  Empty,
  ErrorBox,
  fmtDate,
  fmtDuration,
  fmtPct,
  fmtUsd,
  Loading,
  Pager,
  ProgressBar,
  StatusBadge,
} from '../components';
import { Link, navigate, setSearch, useLocation } from '../router';
import type { Container, Dataset, Evaluator, Model, Project, Run } from '../types';
import { evaluatorType, TERMINAL } from '../types';

const STATUSES = ['queued', 'running', 'completed', 'error', 'cancelled'];
const PAGE = 25;

type SideType = '' | 'dataset' | 'container' | 'generate';

interface SideForm {
  type: SideType;
  ref: string;
  models: string[];
  range: string;
}

const emptySide = (type: SideType): SideForm => ({ type, ref: '', models: [], range: '' });

/** What each source of the form picks: a dataset, a container, or models (none: no side). */
const PICKS: Record<SideType, 'one dataset' | 'one container' | 'models' | null> = {
  '': null,
  dataset: 'one dataset',
  container: 'one container',
  generate: 'models',
};

function sideBody(side: SideForm) {
  const picks = PICKS[side.type];
  if (picks === null) return undefined;
  const range = side.range.trim() || undefined;
  if (picks === 'models') return { type: side.type, models: side.models, range };
  return { type: side.type, [side.type]: side.ref, range };
}

function SideFields(props: {
  label: string;
  side: SideForm;
  onChange: (side: SideForm) => void;
  allowNone: boolean;
  datasets: Dataset[];
  containers: Container[];
  models: Model[];
}) {
  const { side } = props;
  const set = (patch: Partial<SideForm>) => props.onChange({ ...side, ...patch });
  return (
    <fieldset>
      <legend>{props.label}</legend>
      <div className="inline">
        <label>
          Source
          <select
            aria-label="Source"
            value={side.type}
            onChange={(e) => set({ type: e.target.value as SideType, ref: '', models: [] })}
          >
            {props.allowNone && <option value="">none</option>}
            <option value="dataset">dataset</option>
            <option value="container">container task logs</option>
            <option value="generate">generate with models</option>
          </select>
        </label>
        {PICKS[side.type] === 'one dataset' && (
          <label>
            Dataset
            <select
              aria-label="Dataset"
              value={side.ref}
              onChange={(e) => set({ ref: e.target.value })}
              required
            >
              <option value="">choose…</option>
              {props.datasets.map((d) => (
                <option key={d.id} value={d.label}>
                  {d.label} ({d.item_count} rows)
                </option>
              ))}
            </select>
          </label>
        )}
        {PICKS[side.type] === 'one container' && (
          <label>
            Container
            <select
              aria-label="Container"
              value={side.ref}
              onChange={(e) => set({ ref: e.target.value })}
              required
            >
              <option value="">choose…</option>
              <ContainerOptions containers={props.containers} />
            </select>
          </label>
        )}
        {PICKS[side.type] === 'models' && (
          <label>
            Models
            <select
              aria-label="Models"
              multiple
              value={side.models}
              onChange={(e) => set({ models: [...e.target.selectedOptions].map((o) => o.value) })}
              required
            >
              {props.models.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.id}
                </option>
              ))}
            </select>
          </label>
        )}
        {side.type !== '' && (
          <label>
            Range
            <input
              value={side.range}
              onChange={(e) => set({ range: e.target.value })}
              placeholder="0:100"
              pattern="\d+:\d+"
            />
          </label>
        )}
      </div>
    </fieldset>
  );
}

function NewRunDialog(props: { project: Project; containers: Container[]; onClose: () => void }) {
  const base = `/projects/${props.project.id}`;
  const evaluators = useApi<ListOf<Evaluator>>(`${base}/evaluators?limit=100`);
  const datasets = useApi<ListOf<Dataset>>(`${base}/datasets?limit=100`);
  const models = useApi<ListOf<Model>>(`${base}/models`);
  const [container, setContainer] = useState('');
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [sample, setSample] = useState<SideForm>(emptySide('dataset'));
  const [truth, setTruth] = useState<SideForm>(emptySide(''));
  const [baseline, setBaseline] = useState<SideForm>(emptySide(''));
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    try {
      const run = await api<Run>(`${base}/runs`, {
        method: 'POST',
        body: {
          container,
          ...(name.trim() ? { name: name.trim() } : {}),
          evaluators: chosen,
          sample: sideBody(sample),
          ground_truth: sideBody(truth),
          baseline: sideBody(baseline),
        },
      });
      navigate(`${base}/runs/${run.id}`);
    } catch (err) {
      setError(err as Error);
      setBusy(false);
    }
  };

  const lists = {
    datasets: datasets.data?.data ?? [],
    containers: props.containers,
    models: models.data?.data ?? [],
  };
  return (
    <Dialog title="Launch a run" onClose={props.onClose} wide>
      <form onSubmit={submit} className="stack">
        <ErrorBox error={error} />
        <label>
          Name
          <input
            aria-label="Run name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            placeholder="optional, e.g. nightly gpt-4o"
            maxLength={200}
          />
        </label>
        <label>
          Container
          <select
            aria-label="Container"
            value={container}
            onChange={(e) => setContainer(e.target.value)}
            required
          >
            <option value="">choose…</option>
            <ContainerOptions containers={lists.containers} />
          </select>
        </label>
        <fieldset>
          <legend>Evaluators</legend>
          {(evaluators.data?.data ?? []).length === 0 && <span className="muted">No evaluators yet.</span>}
          <div className="checks">
            {(evaluators.data?.data ?? []).map((ev) => (
              <label key={ev.id} className="check">
                <input
                  type="checkbox"
                  checked={chosen.includes(ev.id)}
                  onChange={(e) =>
                    setChosen(e.target.checked ? [...chosen, ev.id] : chosen.filter((c) => c !== ev.id))
                  }
                />
                {ev.name}{' '}
                <span className="muted">
                  ({evaluatorType(ev)}
                  {ev.mode === 'pairwise' ? ', pairwise' : ''})
                </span>
              </label>
            ))}
          </div>
        </fieldset>
        <SideFields
          label="Sample (the outputs judged)"
          side={sample}
          onChange={setSample}
          allowNone
          {...lists}
        />
        <SideFields
          label="Ground truth (expected answers)"
          side={truth}
          onChange={setTruth}
          allowNone
          {...lists}
        />
        <SideFields
          label="Baseline (pairwise evaluators)"
          side={baseline}
          onChange={setBaseline}
          allowNone
          {...lists}
        />
        <p className="muted small">An omitted sample or ground truth is the container’s task logs.</p>
        <div className="actions">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button
            type="submit"
            className="primary"
            disabled={busy || chosen.length === 0 || container === ''}
          >
            Launch run
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function RunsPage(props: { project: Project }) {
  const { search } = useLocation();
  const container = search.get('container') ?? '';
  const status = search.get('status') ?? '';
  const offset = Number(search.get('offset') ?? 0) || 0;
  const base = `/projects/${props.project.id}`;
  const containers = useApi<ListOf<Container>>(`${base}/containers?limit=100`);
  const runs = useApi<ListOf<Run>>(`${base}/runs${query({ container, status, limit: PAGE, offset })}`);
  const [launching, setLaunching] = useState(false);
  const labels = new Map((containers.data?.data ?? []).map((c) => [c.id, c.label]));

  // Live progress: while a listed run is still going, the list is asked again every second.
  const active = (runs.data?.data ?? []).some((r) => !TERMINAL.includes(r.status));
  const { reload } = runs;
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(reload, 1000);
    return () => clearInterval(timer);
  }, [active, reload]);

  return (
    <section className="card">
      <div className="section-head">
        <h2>Evaluation runs</h2>
        <div className="inline">
          <label>
            Container
            <select
              aria-label="Container"
              value={container}
              onChange={(e) => setSearch({ container: e.target.value, offset: null })}
            >
              <option value="">all</option>
              <ContainerOptions containers={containers.data?.data} />
            </select>
          </label>
          <label>
            Status
            <select
              aria-label="Status"
              value={status}
              onChange={(e) => setSearch({ status: e.target.value, offset: null })}
            >
              <option value="">all</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <button type="button" className="primary" onClick={() => setLaunching(true)}>
            New run
          </button>
        </div>
      </div>
      <ErrorBox error={runs.error} />
      {!runs.data ? (
        <Loading />
      ) : runs.data.data.length === 0 ? (
        <Empty>No runs{container || status ? ' match these filters' : ' yet'}.</Empty>
      ) : (
        <table className="runs">
          <thead>
            <tr>
              <th>Run</th>
              <th>Status</th>
              <th>Container</th>
              <th>Progress</th>
              <th>Score</th>
              <th>Pass rate</th>
              <th>Spend</th>
              <th>Duration</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {runs.data.data.map((r) => (
              <tr key={r.id} data-run={r.id}>
                <td className="run-cell">
                  <Link to={`${base}/runs/${r.id}`}>
                    {r.name ? (
                      <>
                        <span className="run-name">{r.name}</span> <code className="muted small">{r.id}</code>
                      </>
                    ) : (
                      <code>{r.id}</code>
                    )}
                  </Link>
                </td>
                <td data-label="Status">
                  <StatusBadge status={r.status} />
                </td>
                <td data-label="Container">{(r.container && labels.get(r.container)) ?? r.container}</td>
                <td data-label="Progress">
                  <ProgressBar
                    done={r.metrics?.progress?.done ?? 0}
                    total={r.metrics?.progress?.total ?? null}
                  />
                </td>
                <td data-label="Score">{r.results?.overall?.avg_score?.toFixed(3) ?? '—'}</td>
                <td data-label="Pass rate">{fmtPct(r.results?.overall?.avg_accuracy)}</td>
                <td data-label="Spend">{fmtUsd(r.spend)}</td>
                <td data-label="Duration">{fmtDuration(r.metrics?.duration_ms)}</td>
                <td data-label="Created">{fmtDate(r.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {runs.data && (
        <Pager
          offset={offset}
          limit={PAGE}
          total={runs.data.total}
          onChange={(o) => setSearch({ offset: String(o) })}
        />
      )}
      {launching && (
        <NewRunDialog
          project={props.project}
          containers={containers.data?.data ?? []}
          onClose={() => setLaunching(false)}
        />
      )}
    </section>
  );
}
