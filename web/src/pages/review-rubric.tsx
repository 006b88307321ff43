import { useState } from 'react';
import type { Answer, MyReview, RubricEvaluator } from './review-types';

interface Choice {
  text: string;
  key: string;
  answer: Answer;
}

/** The buttons of a scale, each with the key that presses it (continuous scales take a typed number). */
function choicesOf(ev: RubricEvaluator): Choice[] {
  const scale = ev.scale;
  if (!('type' in scale)) return [];
  switch (scale.type) {
    case 'pass_fail':
      return [
        { text: 'Pass', key: 'p', answer: { passed: true } },
        { text: 'Fail', key: 'f', answer: { passed: false } },
      ];
    case 'ordinal': {
      const out: Choice[] = [];
      for (let v = scale.min; v <= scale.max && out.length < 50; v++) {
        out.push({ text: String(v), key: v >= 0 && v <= 9 ? String(v) : '', answer: { score: v } });
      }
      return out;
    }
    case 'labels':
      return scale.labels.map((label, i) => ({
        text: label,
        key: i < 9 ? String(i + 1) : '',
        answer: { label },
      }));
    default:
      return [];
  }
}

const same = (a: Answer | undefined, b: Answer) =>
  a !== undefined && a.score === b.score && a.passed === b.passed && a.label === b.label;

/** A stored review as the answer its scale's buttons give: the label, pass/fail, or the score. */
function fromReview(ev: RubricEvaluator, r: MyReview | undefined): Answer | undefined {
  if (!r) return undefined;
  const type = 'type' in ev.scale ? ev.scale.type : null;
  if (type === 'labels') return r.label === null ? undefined : { label: r.label };
  if (type === 'pass_fail') return r.passed === null ? undefined : { passed: r.passed };
  return r.score === null ? undefined : { score: r.score };
}

function Continuous(props: { ev: RubricEvaluator; disabled: boolean; onAnswer: (a: Answer) => void }) {
  const [text, setText] = useState('');
  return (
    <form
      className="row"
      onSubmit={(e) => {
        e.preventDefault();
        if (text.trim() !== '' && Number.isFinite(Number(text))) props.onAnswer({ score: Number(text) });
      }}
    >
      <label>
        Score <input inputMode="decimal" value={text} onChange={(e) => setText(e.target.value)} />
      </label>
      <button type="submit" disabled={props.disabled}>
        Set
      </button>
    </form>
  );
}

/** The rubric: one row of buttons per evaluator; the row the keys apply to is marked. */
export function Rubric(props: {
  rubric: RubricEvaluator[];
  answers: Record<string, Answer>;
  mine: MyReview[];
  active: string | undefined;
  disabled: boolean;
  onAnswer: (ev: RubricEvaluator, a: Answer) => void;
}) {
  return (
    <section aria-label="Rubric">
      <h3>Your score</h3>
      {props.rubric.map((ev) => {
        const given =
          props.answers[ev.id] ??
          fromReview(
            ev,
            props.mine.find((m) => m.evaluator_id === ev.id),
          );
        const choices = choicesOf(ev);
        return (
          <fieldset key={ev.id} className="checks rubric-row" aria-label={ev.name}>
            <legend>
              {ev.name}
              {props.active === ev.id ? ' ◂' : ''}
            </legend>
            {choices.length === 0 ? (
              <Continuous ev={ev} disabled={props.disabled} onAnswer={(a) => props.onAnswer(ev, a)} />
            ) : (
              choices.map((c) => (
                <button
                  key={c.text}
                  type="button"
                  aria-pressed={same(given, c.answer)}
                  className={same(given, c.answer) ? 'chosen' : 'ghost'}
                  disabled={props.disabled}
                  title={c.key ? `key ${c.key}` : undefined}
                  onClick={() => props.onAnswer(ev, c.answer)}
                >
                  {c.text}
                  {c.key && c.key !== c.text ? <span className="muted small"> ({c.key})</span> : null}
                </button>
              ))
            )}
          </fieldset>
        );
      })}
    </section>
  );
}
