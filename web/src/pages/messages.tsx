import { asText } from '../components';

interface Message {
  role: string;
  content: unknown;
}

const isMessage = (v: unknown): v is Message =>
  typeof v === 'object' && v !== null && typeof (v as { role?: unknown }).role === 'string';

/** A message's content as text: a string, or the text of its parts (other parts named by their type). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        const p = part as { type?: unknown; text?: unknown };
        if (typeof p?.text === 'string') return p.text;
        return typeof p?.type === 'string' ? `[${p.type}]` : asText(part);
      })
      .join('\n');
  }
  return asText(content);
}

/** A call's input for people: its messages one under the other, each with its role; anything else as JSON. */
export function Messages(props: { input: unknown }) {
  const { input } = props;
  if (typeof input === 'string') return <div className="message-text">{input}</div>;
  if (Array.isArray(input) && input.length > 0 && input.every(isMessage)) {
    return (
      <div className="messages">
        {input.map((m, i) => (
          // Messages have no id; their position is their identity here.
          // biome-ignore lint/suspicious/noArrayIndexKey: a fixed list, never reordered
          <div key={i} className="message">
            <span className={`role role-${m.role}`}>{m.role}</span>
            <span className="message-text">{contentText(m.content)}</span>
          </div>
        ))}
      </div>
    );
  }
  return <pre className="value">{asText(input)}</pre>;
}
