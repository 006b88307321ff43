import { Value } from '../components';
import type { ItemView } from './review-types';

/** What a review item shows of what it refers to, by kind: a session's turns, a tool step. */

/** A session's turns, in order: each turn's input and output. */
export function Transcript(props: { content: ItemView['content'] }) {
  const inputs = Array.isArray(props.content.input) ? (props.content.input as { input: unknown }[]) : [];
  const outputs = Array.isArray(props.content.output) ? (props.content.output as unknown[]) : [];
  return (
    <ol className="messages" aria-label="Transcript">
      {inputs.map((turn, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: turns are in a fixed order
        <li key={i} className="message">
          <div className="role">turn {i + 1}</div>
          <Value value={turn.input} />
          <Value value={outputs[i]} empty="(no output)" />
        </li>
      ))}
    </ol>
  );
}

/**
 * A tool step: the conversation before the call, then the call (tool and arguments) and its result, with
 * where it is in its session.
 */
export function ToolStepView(props: { view: ItemView }) {
  const { content, item } = props.view;
  const input = (content.input ?? {}) as { tool?: string; arguments?: unknown };
  const meta = (content.metadata ?? {}) as { session_id?: string; turn?: number; context?: unknown[] };
  const context = Array.isArray(meta.context) ? (meta.context as { role: string; content: string }[]) : [];
  return (
    <section aria-label="Tool step">
      <h3>
        Tool step <code>{input.tool ?? item.ref}</code>
        {meta.session_id ? (
          <span className="small muted">
            {' '}
            · session {meta.session_id}, turn {(meta.turn ?? 0) + 1}
          </span>
        ) : null}
      </h3>
      <ol className="messages" aria-label="Before the call">
        {context.map((m, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: messages are in a fixed order
          <li key={i} className="message">
            <div className="role">{m.role}</div>
            <Value value={m.content} empty="(no text)" />
          </li>
        ))}
      </ol>
      <dl className="facts" aria-label="Item">
        <dt>Arguments</dt>
        <dd>
          <Value value={input.arguments} />
        </dd>
        <dt>Result</dt>
        <dd>
          <Value value={content.output} empty="(no result recorded)" />
        </dd>
      </dl>
    </section>
  );
}
