import type { Evaluator, Model } from '../types';
import { type Draft, ROLES, type Role, variablesIn } from './playground-parts';

/** The messages, their variables' values, tools, response format and parameters. */
export function RequestEditor(props: { draft: Draft; onChange: (d: Draft) => void }) {
  const { draft, onChange } = props;
  const setMessage = (i: number, m: Partial<Draft['messages'][number]>) =>
    onChange({ ...draft, messages: draft.messages.map((x, j) => (j === i ? { ...x, ...m } : x)) });
  const names = variablesIn(draft.messages);
  return (
    <div className="stack">
      <fieldset className="pg-messages">
        <legend>Messages</legend>
        {draft.messages.map((m, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: messages have no identity but their place
          <div key={i} className="pg-message">
            <select
              aria-label={`Role of message ${i + 1}`}
              value={m.role}
              onChange={(e) => setMessage(i, { role: e.target.value as Role })}
            >
              {ROLES.map((r) => (
                <option key={r}>{r}</option>
              ))}
            </select>
            <textarea
              aria-label={`Message ${i + 1}`}
              rows={3}
              value={m.content}
              onChange={(e) => setMessage(i, { content: e.target.value })}
            />
            <button
              type="button"
              className="ghost small"
              disabled={draft.messages.length === 1}
              onClick={() => onChange({ ...draft, messages: draft.messages.filter((_, j) => j !== i) })}
            >
              Remove
            </button>
          </div>
        ))}
        <button
          type="button"
          className="ghost small"
          onClick={() => onChange({ ...draft, messages: [...draft.messages, { role: 'user', content: '' }] })}
        >
          Add message
        </button>
      </fieldset>
      {names.length > 0 && (
        <fieldset>
          <legend>Variables</legend>
          {names.map((name) => (
            <label key={name}>
              {name} <span className="muted small">({draft.variableTypes[name] ?? 'string'})</span>
              <input
                value={draft.variables[name] ?? ''}
                onChange={(e) =>
                  onChange({ ...draft, variables: { ...draft.variables, [name]: e.target.value } })
                }
              />
            </label>
          ))}
        </fieldset>
      )}
      <details>
        <summary>Tools, response format and parameters</summary>
        <label>
          Tools <span className="muted small">(JSON array, optional)</span>
          <textarea
            rows={3}
            value={draft.tools}
            onChange={(e) => onChange({ ...draft, tools: e.target.value })}
          />
        </label>
        <label>
          Response format <span className="muted small">(JSON, optional)</span>
          <textarea
            rows={2}
            value={draft.responseFormat}
            onChange={(e) => onChange({ ...draft, responseFormat: e.target.value })}
          />
        </label>
        <label>
          Parameters <span className="muted small">(JSON: temperature, max_tokens, …)</span>
          <textarea
            rows={3}
            value={draft.parameters}
            onChange={(e) => onChange({ ...draft, parameters: e.target.value })}
          />
        </label>
      </details>
    </div>
  );
}

/** Which models answer (1 to 4) and which evaluators score each answer. */
export function RunChoices(props: {
  models: string[];
  onModels: (m: string[]) => void;
  known: Model[];
  evaluators: Evaluator[];
  chosen: string[];
  onChosen: (ids: string[]) => void;
}) {
  const { models, onModels } = props;
  return (
    <div className="stack">
      <fieldset>
        <legend>Models (1 to 4)</legend>
        <datalist id="pg-models">
          {props.known.map((m) => (
            <option key={m.id} value={m.id} />
          ))}
        </datalist>
        {models.map((m, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: a model's place is its column
          <div key={i} className="pg-model">
            <input
              aria-label={`Model ${i + 1}`}
              list="pg-models"
              value={m}
              onChange={(e) => onModels(models.map((x, j) => (j === i ? e.target.value : x)))}
            />
            <button
              type="button"
              className="ghost small"
              disabled={models.length === 1}
              onClick={() => onModels(models.filter((_, j) => j !== i))}
            >
              Remove
            </button>
          </div>
        ))}
        <button
          type="button"
          className="ghost small"
          disabled={models.length >= 4}
          onClick={() => onModels([...models, ''])}
        >
          Add model
        </button>
      </fieldset>
      {props.evaluators.length > 0 && (
        <fieldset className="checks">
          <legend>Score each answer with</legend>
          {props.evaluators.map((e) => (
            <label key={e.id} className="inline">
              <input
                type="checkbox"
                checked={props.chosen.includes(e.id)}
                onChange={(ev) =>
                  props.onChosen(
                    ev.target.checked ? [...props.chosen, e.id] : props.chosen.filter((x) => x !== e.id),
                  )
                }
              />
              {e.name}
            </label>
          ))}
        </fieldset>
      )}
    </div>
  );
}
