import { useState } from 'react';
import { type ListOf, useApi } from '../api';
import { asText, Empty, ErrorBox, fmtDate, fmtDuration, fmtNum, fmtUsd, Loading, Pager } from '../components';
import { Link } from '../router';
import type { Container, Project } from '../types';
import { AddToDataset } from './add-to-dataset';
import { playgroundLink } from './playground';

const PAGE = 20;

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

interface SessionSummary {
  id: string;
  container_id: string;
  assigned_by: string;
  key: string | null;
  started_at: string;
  last_activity_at: string;
  ended_at: string | null;
  turn_count: number;
  error_count: number;
  models: string[];
  usage: Usage;
  cost: number;
  latency_ms: number;
}

interface Score {
  run_id: string;
  evaluator_id: string;
  score: number | null;
  passed: boolean | null;
}

interface ToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

interface TurnMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_call_id?: string;
  /** An earlier answer's calls, in a turn showing a conversation the session did not record. */
  tool_calls?: ToolCall[];
}

interface Handoff {
  from: string | null;
  to: string | null;
  tool: string | null;
  tool_call_id: string | null;
}

interface Turn {
  index: number;
  task_log_id: string;
  model: string;
  created_at: string;
  status: 'success' | 'error';
  input: TurnMessage[];
  output: { content: string | null; tool_calls: ToolCall[] };
  handoff: Handoff | null;
  usage: { prompt_tokens?: number; completion_tokens?: number } | null;
  cost: number;
  latency_ms: number;
  error: unknown;
  scores: Score[];
}

interface SessionDetail extends SessionSummary {
  scores: Score[];
  turns_offset: number;
  turns: Turn[];
  tool_calls: (ToolCall & { result: string | null; turn: number; scores: Score[] })[];
}

const verdict = (s: Score, name: string) =>
  `${name}: ${fmtNum(s.score)}${s.passed === null ? '' : s.passed ? ' pass' : ' fail'}`;

/** Scores named by their evaluator's name (its id while the names load, or when it was deleted). */
function ScoreList(props: { project: string; scores: Score[]; names: Map<string, string> }) {
  if (props.scores.length === 0) return null;
  const nameOf = (id: string) => props.names.get(id) ?? id;
  return (
    <ul className="session-scores" aria-label="Scores">
      {props.scores.map((s) => (
        <li key={`${s.run_id}-${s.evaluator_id}`}>
          <Link to={`/projects/${props.project}/runs/${s.run_id}`} title={s.evaluator_id}>
            {verdict(s, nameOf(s.evaluator_id))}
          </Link>
        </li>
      ))}
    </ul>
  );
}

/** The scores of one tool step (a tool-step run's), shown with its call. */
interface StepScores {
  project: string;
  scores: Score[];
  names: Map<string, string>;
}

/**
 * One tool call, folded: its name in the summary, arguments and result inside. A call its tool-step
 * runs scored shows the scores in the summary, and opens when the page's address names it
 * (`#<tool call id>`, where a run's sample links).
 */
function FoldedCall(props: { call: ToolCall; result: string | null | undefined; step?: StepScores }) {
  const { step } = props;
  const named = decodeURIComponent(location.hash.slice(1)) === props.call.id;
  return (
    <details className="tool-call" id={`tool-call-${props.call.id}`} open={named || undefined}>
      <summary>
        Tool call <code>{props.call.name}</code>
        {step && step.scores.length > 0 ? (
          <span className="small muted">
            {' '}
            ·{' '}
            {step.scores.map((s) => verdict(s, step.names.get(s.evaluator_id) ?? s.evaluator_id)).join(' · ')}
          </span>
        ) : null}
      </summary>
      <p className="small">Arguments</p>
      <pre className="message-text">{asText(props.call.arguments)}</pre>
      <p className="small">Result</p>
      <pre className="message-text">{props.result ?? '(no result)'}</pre>
      {step ? <ScoreList project={step.project} scores={step.scores} names={step.names} /> : null}
    </details>
  );
}

/** Where the agent changed: before whom, after whom, by which tool. */
function HandoffNote(props: { handoff: Handoff }) {
  const h = props.handoff;
  return (
    <p className="handoff small" role="note">
      Handoff{h.from ? ` from ${h.from}` : ''}
      {h.to ? ` to ${h.to}` : ''}
      {h.tool ? (
        <>
          {' '}
          by <code>{h.tool}</code>
        </>
      ) : null}
    </p>
  );
}

/**
 * One call of the session as chat bubbles: the handoff that led to it, what it added (user, tool
 * results; earlier answers in a turn that starts mid-conversation), then its answer.
 */
function TurnView(props: {
  project: string;
  session: string;
  turn: Turn;
  results: Map<string, string | null>;
  stepScores: Map<string, Score[]>;
  names: Map<string, string>;
}) {
  const t = props.turn;
  const inTokens = t.usage?.prompt_tokens ?? 0;
  const outTokens = t.usage?.completion_tokens ?? 0;
  // Results of calls made before the turn (shown with their calls), as this turn's input sent them.
  const sent = new Map(t.input.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content]));
  return (
    <li className={t.status === 'error' ? 'turn error' : 'turn'} aria-label={`Turn ${t.index + 1}`}>
      {t.handoff && <HandoffNote handoff={t.handoff} />}
      {t.input
        .filter((m) => m.role !== 'tool')
        .map((m) => (
          <div
            key={`${t.task_log_id}-${m.role}-${(m.tool_calls ?? []).map((c) => c.id).join(',')}-${m.content}`}
            className={`message ${m.role}`}
          >
            <span className="muted small">{m.role === 'assistant' ? 'assistant (earlier)' : m.role}</span>
            {m.content !== '' && <div className="message-text">{m.content}</div>}
            {(m.tool_calls ?? []).map((c) => (
              <FoldedCall
                key={`${t.task_log_id}-${c.id}-${c.name}`}
                call={c}
                result={sent.get(c.id) ?? props.results.get(c.id)}
              />
            ))}
          </div>
        ))}
      <div className="message assistant">
        <span className="muted small">assistant · {t.model}</span>
        {t.output.content !== null && <div className="message-text">{t.output.content}</div>}
        {t.output.tool_calls.map((c) => (
          <FoldedCall
            key={`${t.task_log_id}-${c.id}-${c.name}`}
            call={c}
            result={props.results.get(c.id)}
            step={{ project: props.project, scores: props.stepScores.get(c.id) ?? [], names: props.names }}
          />
        ))}
        {t.status === 'error' && <div className="warn small">{asText(t.error)}</div>}
      </div>
      <p className="small muted turn-meta">
        Turn {t.index + 1} · Tokens: {inTokens} in / {outTokens} out · {fmtUsd(t.cost)} ·{' '}
        {fmtDuration(t.latency_ms)} ·{' '}
        <Link to={playgroundLink(props.project, { session: props.session, turn: t.index })}>
          Open in playground
        </Link>
      </p>
      <ScoreList project={props.project} scores={t.scores} names={props.names} />
    </li>
  );
}

/** A session as a chat transcript, tool calls folded, with tokens, cost, latency and scores per turn. */
export function SessionPage(props: { project: Project; id: string }) {
  const [offset, setOffset] = useState(0);
  const session = useApi<SessionDetail>(
    `/projects/${props.project.id}/sessions/${encodeURIComponent(props.id)}?turns_offset=${offset}&turns_limit=${PAGE}`,
  );
  const s = session.data;
  const results = new Map((s?.tool_calls ?? []).map((c) => [c.id, c.result]));
  const stepScores = new Map((s?.tool_calls ?? []).map((c) => [c.id, c.scores ?? []]));
  // Scores are named by their evaluators' names.
  const evaluators = useApi<ListOf<{ id: string; name: string }>>(
    `/projects/${props.project.id}/evaluators?limit=100`,
  );
  const names = new Map((evaluators.data?.data ?? []).map((e) => [e.id, e.name]));
  return (
    <section className="card">
      <p className="crumbs">
        <Link to={`/projects/${props.project.id}/sessions`}>Sessions</Link> /
      </p>
      <h2 className="session-title">{s?.key ?? props.id}</h2>
      <AddToDataset project={props.project.id} from={{ session_id: props.id }} />
      <ErrorBox error={session.error} />
      {!s ? (
        <Loading />
      ) : (
        <>
          <p className="small">
            {fmtDate(s.started_at)} · {s.turn_count} turns · {s.error_count} errors · {s.usage.prompt_tokens}{' '}
            in / {s.usage.completion_tokens} out tokens · {fmtUsd(s.cost)} · {fmtDuration(s.latency_ms)} ·
            grouped by {s.assigned_by}
            {s.ended_at ? ` · ended ${fmtDate(s.ended_at)}` : ''}
          </p>
          <ScoreList project={props.project.id} scores={s.scores} names={names} />
          <ol className="transcript" aria-label="Transcript">
            {s.turns.map((t) => (
              <TurnView
                key={t.task_log_id}
                project={props.project.id}
                session={props.id}
                turn={t}
                results={results}
                stepScores={stepScores}
                names={names}
              />
            ))}
          </ol>
          <Pager offset={offset} limit={PAGE} total={s.turn_count} onChange={setOffset} />
        </>
      )}
    </section>
  );
}

/** The project's sessions, newest first, with filters (time, model, errors, length). */
export function SessionsPage(props: { project: Project }) {
  const [offset, setOffset] = useState(0);
  const [model, setModel] = useState('');
  const [errors, setErrors] = useState('');
  const [since, setSince] = useState('');
  const [minTurns, setMinTurns] = useState('');
  const [container, setContainer] = useState('');
  const containers = useApi<ListOf<Container>>(`/projects/${props.project.id}/containers?limit=100`);
  const labelOf = new Map((containers.data?.data ?? []).map((c) => [c.id, c.label]));
  const query = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
  if (container) query.set('container', container);
  if (model) query.set('model', model);
  if (errors) query.set('errors', errors);
  if (since) query.set('since', new Date(Date.now() - Number(since) * 3_600_000).toISOString());
  if (/^\d+$/.test(minTurns)) query.set('min_turns', minTurns);
  const sessions = useApi<ListOf<SessionSummary>>(`/projects/${props.project.id}/sessions?${query}`);
  const set = (f: (v: string) => void) => (v: string) => {
    f(v);
    setOffset(0);
  };
  return (
    <section className="card">
      <h2>Sessions</h2>
      <p className="muted small">Conversations and agent runs: the gateway's calls grouped, newest first.</p>
      <form className="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Active{' '}
          <select value={since} onChange={(e) => set(setSince)(e.target.value)}>
            <option value="">any time</option>
            <option value="1">last hour</option>
            <option value="24">last day</option>
            <option value="168">last week</option>
          </select>
        </label>
        <label>
          Container{' '}
          <select value={container} onChange={(e) => set(setContainer)(e.target.value)}>
            <option value="">any</option>
            {(containers.data?.data ?? []).map((c) => (
              <option key={c.id} value={c.id}>
                {c.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Model <input value={model} onChange={(e) => set(setModel)(e.target.value)} />
        </label>
        <label>
          Errors{' '}
          <select value={errors} onChange={(e) => set(setErrors)(e.target.value)}>
            <option value="">any</option>
            <option value="true">with errors</option>
            <option value="false">without errors</option>
          </select>
        </label>
        <label>
          Min turns{' '}
          <input
            inputMode="numeric"
            size={4}
            value={minTurns}
            onChange={(e) => set(setMinTurns)(e.target.value)}
          />
        </label>
      </form>
      <ErrorBox error={sessions.error} />
      {!sessions.data ? (
        <Loading />
      ) : sessions.data.data.length === 0 ? (
        <Empty>No sessions yet.</Empty>
      ) : (
        <div className="table-scroll">
          <table className="rows">
            <thead>
              <tr>
                <th>Session</th>
                <th>Container</th>
                <th>Started</th>
                <th>Turns</th>
                <th>Errors</th>
                <th>Models</th>
                <th>Tokens</th>
                <th>Cost</th>
                <th>Latency</th>
              </tr>
            </thead>
            <tbody>
              {sessions.data.data.map((s) => (
                <tr key={s.id}>
                  <td>
                    <Link to={`/projects/${props.project.id}/sessions/${s.id}`}>{s.key ?? s.id}</Link>
                  </td>
                  <td>{labelOf.get(s.container_id) ?? s.container_id}</td>
                  <td>{fmtDate(s.started_at)}</td>
                  <td>{s.turn_count}</td>
                  <td>{s.error_count}</td>
                  <td>{s.models.join(', ')}</td>
                  <td>{s.usage.total_tokens}</td>
                  <td>{fmtUsd(s.cost)}</td>
                  <td>{fmtDuration(s.latency_ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {sessions.data && (
        <Pager offset={offset} limit={PAGE} total={sessions.data.total} onChange={setOffset} />
      )}
    </section>
  );
}
