import { useState } from 'react';
import { type ListOf, useApi } from '../api';
import { asText, Empty, ErrorBox, fmtDate, fmtDuration, fmtNum, fmtUsd, Loading, Pager } from '../components';
import { Link } from '../router';
import type { Project } from '../types';
import { AddToDataset } from './add-to-dataset';
import { Messages } from './messages';
import { playgroundLink } from './playground';

const PAGE = 20;

interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

interface TraceSummary {
  id: string;
  name: string | null;
  service_name: string | null;
  started_at: string;
  duration_ms: number;
  models: string[];
  totals: { span_count: number; error_count: number; model_call_count: number; usage: Usage; cost: number };
}

interface Span {
  span_id: string;
  parent_span_id: string | null;
  depth: number;
  source: string;
  name: string;
  kind: string;
  operation: string | null;
  offset_ms: number;
  duration_ms: number;
  status: { code: string; message: string | null };
  attributes: Record<string, unknown>;
  model_call: {
    task_log_id: string | null;
    model: string | null;
    usage: Usage;
    cost: number;
    content_captured: boolean;
  } | null;
}

interface Trace extends TraceSummary {
  spans: Span[];
}

interface CallDetail {
  log: {
    id: string;
    model: string;
    input: unknown;
    output: string | null;
    response: unknown;
    usage: { prompt_tokens?: number; completion_tokens?: number } | null;
    latency_ms: number;
    cost: number;
    status: string;
  };
  scores: {
    run_id: string;
    evaluator: string;
    score: number | null;
    passed: boolean | null;
    reasoning: string | null;
  }[];
}

/** The tool calls of a chat answer (`choices[0].message.tool_calls`), as name and arguments. */
function toolCallsOf(response: unknown): { id: string; name: string; args: string }[] {
  const choice = (response as { choices?: { message?: { tool_calls?: unknown } }[] } | null)?.choices?.[0];
  const calls = choice?.message?.tool_calls;
  if (!Array.isArray(calls)) return [];
  return calls.map((c) => {
    const call = c as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    const fn = call.function ?? {};
    return { id: String(call.id ?? ''), name: String(fn.name ?? '?'), args: asText(fn.arguments ?? '') };
  });
}

/** A model-call span opened: its input, output, tool calls, tokens and the scores it was given. */
function CallPanel(props: { project: Project; span: Span }) {
  const call = props.span.model_call;
  const logId = call?.task_log_id ?? null;
  const detail = useApi<CallDetail>(
    logId ? `/projects/${props.project.id}/calls/${encodeURIComponent(logId)}` : null,
  );
  if (!call) return null;
  const tools = detail.data ? toolCallsOf(detail.data.log.response) : [];
  return (
    <section className="card" aria-label="Model call">
      <h3>
        {props.span.name} <span className="muted small">{call.model ?? ''}</span>
      </h3>
      <p className="small">
        Tokens: {call.usage.input_tokens} in / {call.usage.output_tokens} out · {fmtUsd(call.cost)} ·{' '}
        {fmtDuration(props.span.duration_ms)}
      </p>
      {!call.content_captured && (
        <p className="muted small">The emitter recorded no messages for this call.</p>
      )}
      <ErrorBox error={detail.error} />
      {logId === null ? (
        <Empty>No task log was recorded for this call.</Empty>
      ) : !detail.data ? (
        <Loading />
      ) : (
        <>
          <h4>Input</h4>
          <Messages input={detail.data.log.input} />
          <h4>Output</h4>
          <div className="message-text">{detail.data.log.output ?? '-'}</div>
          {tools.length > 0 && (
            <>
              <h4>Tool calls</h4>
              <ul className="tool-calls">
                {tools.map((t) => (
                  <li key={`${t.id}-${t.name}-${t.args}`}>
                    <code>
                      {t.name}({t.args})
                    </code>
                  </li>
                ))}
              </ul>
            </>
          )}
          <h4>Scores</h4>
          {detail.data.scores.length === 0 ? (
            <Empty>Not scored yet.</Empty>
          ) : (
            <table className="rows">
              <thead>
                <tr>
                  <th>Evaluator</th>
                  <th>Score</th>
                  <th>Verdict</th>
                  <th>Reasoning</th>
                </tr>
              </thead>
              <tbody>
                {detail.data.scores.map((s) => (
                  <tr key={`${s.run_id}-${s.evaluator}`}>
                    <td>{s.evaluator}</td>
                    <td>{fmtNum(s.score)}</td>
                    <td>{s.passed === null ? '-' : s.passed ? 'pass' : 'fail'}</td>
                    <td>{s.reasoning ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <p className="small">
            Task log <code>{detail.data.log.id}</code>
          </p>
        </>
      )}
    </section>
  );
}

/** A trace as a waterfall: each span a bar placed by its start and length within the trace. */
export function TracePage(props: { project: Project; id: string }) {
  const trace = useApi<Trace>(`/projects/${props.project.id}/traces/${encodeURIComponent(props.id)}`);
  const [open, setOpen] = useState<string | null>(null);
  const t = trace.data;
  const total = Math.max(1, t?.duration_ms ?? 1);
  const opened = t?.spans.find((s) => s.span_id === open) ?? null;
  return (
    <section className="card">
      <p className="crumbs">
        <Link to={`/projects/${props.project.id}/traces`}>Traces</Link> /
      </p>
      <h2>{t?.name ?? props.id}</h2>
      <ErrorBox error={trace.error} />
      {!t ? (
        <Loading />
      ) : (
        <>
          <p className="small">
            {fmtDate(t.started_at)} · {fmtDuration(t.duration_ms)} · {t.totals.span_count} spans ·{' '}
            {t.totals.error_count} errors · {t.totals.usage.input_tokens + t.totals.usage.output_tokens}{' '}
            tokens · {fmtUsd(t.totals.cost)}
          </p>
          <ol className="waterfall" aria-label="Spans">
            {t.spans.map((s) => {
              const left = (100 * s.offset_ms) / total;
              const width = Math.max(0.5, (100 * s.duration_ms) / total);
              const label = `${s.name} (${fmtDuration(s.duration_ms)})`;
              return (
                <li key={s.span_id} className={s.status.code === 'error' ? 'span error' : 'span'}>
                  <div className="span-name" style={{ paddingLeft: `${s.depth * 1.2}em` }}>
                    {s.model_call ? (
                      <button type="button" className="link" onClick={() => setOpen(s.span_id)}>
                        {label}
                      </button>
                    ) : (
                      label
                    )}
                    {s.status.code === 'error' && (
                      <span className="warn small"> {s.status.message ?? 'error'}</span>
                    )}
                  </div>
                  <div className="span-track">
                    <div
                      className="span-bar"
                      style={{ marginLeft: `${Math.min(left, 99.5)}%`, width: `${width}%` }}
                    />
                  </div>
                </li>
              );
            })}
          </ol>
          {opened && (
            <p>
              <AddToDataset project={props.project.id} from={{ span_id: opened.span_id, trace_id: t.id }} />{' '}
              <Link
                className="button ghost small"
                to={playgroundLink(props.project.id, { span: opened.span_id, trace: t.id })}
              >
                Open in playground
              </Link>
            </p>
          )}
          {opened && <CallPanel key={opened.span_id} project={props.project} span={opened} />}
        </>
      )}
    </section>
  );
}

/** The project's traces, newest first, with filters. */
export function TracesPage(props: { project: Project }) {
  const [offset, setOffset] = useState(0);
  const [model, setModel] = useState('');
  const [container, setContainer] = useState('');
  const [errors, setErrors] = useState('');
  const [oneSpan, setOneSpan] = useState(true);
  const query = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
  if (model) query.set('model', model);
  if (container) query.set('container', container);
  if (errors) query.set('errors', errors);
  // Gateway calls made without a traceparent are traces of one span each: hidden on request.
  if (!oneSpan) query.set('min_spans', '2');
  const traces = useApi<ListOf<TraceSummary>>(`/projects/${props.project.id}/traces?${query}`);
  return (
    <section className="card">
      <h2>Traces</h2>
      <p className="muted small">
        Spans sent over OTLP to <code>/v1/traces</code> and gateway calls, newest first.
      </p>
      <form className="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Model{' '}
          <input
            value={model}
            onChange={(e) => {
              setModel(e.target.value);
              setOffset(0);
            }}
          />
        </label>
        <label>
          Container{' '}
          <input
            value={container}
            onChange={(e) => {
              setContainer(e.target.value);
              setOffset(0);
            }}
          />
        </label>
        <label>
          Errors{' '}
          <select
            value={errors}
            onChange={(e) => {
              setErrors(e.target.value);
              setOffset(0);
            }}
          >
            <option value="">any</option>
            <option value="true">with errors</option>
            <option value="false">without errors</option>
          </select>
        </label>
        <label className="checks">
          <input
            type="checkbox"
            checked={oneSpan}
            onChange={(e) => {
              setOneSpan(e.target.checked);
              setOffset(0);
            }}
          />{' '}
          Single-span traces (calls without a traceparent)
        </label>
      </form>
      <ErrorBox error={traces.error} />
      {!traces.data ? (
        <Loading />
      ) : traces.data.data.length === 0 ? (
        <Empty>No traces yet.</Empty>
      ) : (
        <div className="table-scroll">
          <table className="rows">
            <thead>
              <tr>
                <th>Trace</th>
                <th>Service</th>
                <th>Started</th>
                <th>Duration</th>
                <th>Spans</th>
                <th>Errors</th>
                <th>Models</th>
                <th>Cost</th>
              </tr>
            </thead>
            <tbody>
              {traces.data.data.map((t) => (
                <tr key={t.id}>
                  <td>
                    <Link to={`/projects/${props.project.id}/traces/${t.id}`}>{t.name ?? t.id}</Link>
                  </td>
                  <td>{t.service_name ?? '-'}</td>
                  <td>{fmtDate(t.started_at)}</td>
                  <td>{fmtDuration(t.duration_ms)}</td>
                  <td>{t.totals.span_count}</td>
                  <td>{t.totals.error_count}</td>
                  <td>{t.models.join(', ')}</td>
                  <td>{fmtUsd(t.totals.cost)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {traces.data && <Pager offset={offset} limit={PAGE} total={traces.data.total} onChange={setOffset} />}
    </section>
  );
}
