import { fmtNum, fmtUsd } from '../components';
import type { AnswerScore, ModelAnswer, PlaygroundRequest } from '../types';
import { AddToDataset } from './add-to-dataset';

export type Role = PlaygroundRequest['messages'][number]['role'];
export const ROLES: readonly Role[] = ['system', 'developer', 'user', 'assistant'];

/** The request as the page edits it: messages and values, and the JSON fields as text. */
export interface Draft {
  messages: { role: Role; content: string }[];
  variables: Record<string, string>;
  variableTypes: Record<string, string>;
  tools: string;
  responseFormat: string;
  parameters: string;
}

/** One model's column: what has streamed so far, then its answer and scores. */
export interface Column {
  model: string;
  text: string;
  answer: ModelAnswer | null;
  scores: AnswerScore[] | null;
}

const json = (v: unknown) => (v === null || v === undefined ? '' : JSON.stringify(v, null, 2));

export function draftOf(r: PlaygroundRequest): Draft {
  const variables: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.variables))
    variables[k] = typeof v === 'string' ? v : JSON.stringify(v);
  return {
    messages: r.messages.map((m) => ({ role: m.role, content: m.content })),
    variables,
    variableTypes: Object.fromEntries(Object.entries(r.variable_types).map(([k, v]) => [k, String(v)])),
    tools: json(r.tools),
    responseFormat: json(r.response_format),
    parameters: json(r.parameters),
  };
}

/** The variables the messages reference, in order of first use. */
export function variablesIn(messages: Draft['messages']): string[] {
  const names = new Set<string>();
  for (const m of messages)
    for (const x of m.content.matchAll(/\{\{\s*([A-Za-z_]\w*)\s*\}\}/g)) names.add(x[1] ?? '');
  return [...names].filter(Boolean);
}

/** A JSON field's text as a value (empty: absent); a problem is thrown naming the field. */
export function parsed(text: string, field: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${field}: not valid JSON`);
  }
}

/** A variable's text as its declared type asks (numbers, booleans and JSON parsed; strings as typed). */
export function typedValue(type: string | undefined, text: string): unknown {
  if (type === 'number' && text.trim() !== '' && !Number.isNaN(Number(text))) return Number(text);
  if (type === 'boolean' && (text === 'true' || text === 'false')) return text === 'true';
  if (type === 'json') {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

function Scores(props: { scores: AnswerScore[] }) {
  return (
    <ul className="plain pg-scores" aria-label="Evaluator scores">
      {props.scores.map((s) => (
        <li key={s.evaluator_id}>
          <strong>{s.name}</strong>:{' '}
          {s.error ? (
            <span className="warn">{s.error.message}</span>
          ) : (
            <>
              <span data-score>{fmtNum(s.score)}</span>
              {s.passed !== null && <span className="muted"> ({s.passed ? 'pass' : 'fail'})</span>}
              {s.reason && <div className="muted small">{s.reason}</div>}
            </>
          )}
        </li>
      ))}
    </ul>
  );
}

/** The models' answers side by side (stacked on a phone), each with its figures and scores. */
export function Answers(props: { project: string; columns: Column[] }) {
  return (
    <div className="pg-answers">
      {props.columns.map((c, i) => {
        const a = c.answer;
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: a column is its model's place in the run
          <section key={`${i}:${c.model}`} className="card pg-answer" aria-label={`Answer of ${c.model}`}>
            <h3>{c.model}</h3>
            {a?.error ? (
              <p className="warn">
                {a.error.code}: {a.error.message}
              </p>
            ) : (
              <div className="message-text pg-output">{a?.output ?? c.text}</div>
            )}
            {!a && <p className="muted small">Answering…</p>}
            {a && (
              <p className="muted small pg-figures">
                {a.usage ? `${a.usage.prompt_tokens} + ${a.usage.completion_tokens} tokens` : 'no usage'} ·{' '}
                {a.latency_ms} ms · {fmtUsd(a.cost)}
              </p>
            )}
            {c.scores && <Scores scores={c.scores} />}
            {a?.task_log_id && (
              <div className="actions">
                <AddToDataset project={props.project} from={{ task_log_id: a.task_log_id }} />
              </div>
            )}
          </section>
        );
      })}
    </div>
  );
}
