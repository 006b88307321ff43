import type { Evaluator, GuardCheck, GuardCheckInput, GuardSpec } from '../types';

/*
 * One check of a guard policy as the form edits it: every field a string or a flag, turned into the
 * API's check on submit. Settings the form has no field for (national ids, secret kinds, token
 * bounds, streaming) are kept from the check being edited.
 */

export const GUARD_TYPES = [
  'pii',
  'secrets',
  'deny_list',
  'regex',
  'json_schema',
  'prompt_injection',
  'language',
  'length',
  'evaluator',
] as const satisfies readonly GuardSpec['type'][];
const PII = ['email', 'phone', 'card', 'iban', 'national_id'] as const;
type Pii = (typeof PII)[number];

export interface CheckDraft {
  key: number;
  name: string;
  type: GuardSpec['type'];
  stage: GuardCheck['stage'];
  action: GuardCheck['action'];
  timeout: string;
  onError: GuardCheck['on_error'];
  entities: Pii[];
  terms: string;
  pattern: string;
  caseInsensitive: boolean;
  replacement: string;
  schema: string;
  threshold: string;
  allowed: string;
  minChars: string;
  maxChars: string;
  evaluator: string;
  original?: GuardCheck;
}

let nextKey = 1;

export function newCheck(): CheckDraft {
  return {
    key: nextKey++,
    name: '',
    type: 'pii',
    stage: 'input',
    action: 'block',
    timeout: '',
    onError: 'open',
    entities: [],
    terms: '',
    pattern: '',
    caseInsensitive: false,
    replacement: '',
    schema: '{\n  "type": "object"\n}',
    threshold: '',
    allowed: '',
    minChars: '',
    maxChars: '',
    evaluator: '',
  };
}

const str = (v: number | undefined) => (v === undefined ? '' : String(v));

/** The form's fields of a stored check. */
export function draftOf(c: GuardCheck): CheckDraft {
  const d: CheckDraft = {
    ...newCheck(),
    name: c.name,
    type: c.guard.type,
    stage: c.stage,
    action: c.action,
    timeout: String(c.timeout_ms),
    onError: c.on_error,
    original: c,
  };
  const g = c.guard;
  if (g.type === 'pii') d.entities = [...(g.entities ?? [])];
  if (g.type === 'deny_list') d.terms = g.terms.join('\n');
  if (g.type === 'regex') {
    d.pattern = g.pattern;
    d.caseInsensitive = g.case_insensitive ?? false;
    d.replacement = g.replacement ?? '';
  }
  if (g.type === 'json_schema') d.schema = JSON.stringify(g.schema, null, 2);
  if (g.type === 'prompt_injection') d.threshold = str(g.threshold);
  if (g.type === 'language') {
    d.allowed = g.allowed.join(', ');
    d.minChars = str(g.min_chars);
  }
  if (g.type === 'length') {
    d.minChars = str(g.min_chars);
    d.maxChars = str(g.max_chars);
  }
  if (g.type === 'evaluator') d.evaluator = g.evaluator;
  return d;
}

const num = (text: string) => (text.trim() === '' ? undefined : Number(text));
const list = (text: string, by: RegExp) =>
  text
    .split(by)
    .map((t) => t.trim())
    .filter(Boolean);

/** The guard of a draft; a JSON Schema that does not parse is said here (the API says the rest). */
function guardOf(d: CheckDraft): GuardSpec {
  const kept = d.original?.guard.type === d.type ? d.original.guard : undefined;
  switch (d.type) {
    case 'pii':
      return {
        ...(kept ?? { type: 'pii' }),
        type: 'pii',
        entities: d.entities.length ? d.entities : undefined,
      };
    case 'secrets':
      return kept ?? { type: 'secrets' };
    case 'deny_list':
      return { type: 'deny_list', terms: list(d.terms, /\n/) };
    case 'regex':
      return {
        type: 'regex',
        pattern: d.pattern,
        ...(d.caseInsensitive && { case_insensitive: true }),
        ...(d.replacement && { replacement: d.replacement }),
      };
    case 'json_schema':
      try {
        return { type: 'json_schema', schema: JSON.parse(d.schema) as Record<string, unknown> };
      } catch {
        throw new Error(`Check '${d.name}': the JSON Schema is not valid JSON`);
      }
    case 'prompt_injection':
      return { type: 'prompt_injection', threshold: num(d.threshold) };
    case 'language':
      return { type: 'language', allowed: list(d.allowed, /[,\s]+/), min_chars: num(d.minChars) };
    case 'length': {
      const tokens =
        kept?.type === 'length' ? { min_tokens: kept.min_tokens, max_tokens: kept.max_tokens } : {};
      return { type: 'length', ...tokens, min_chars: num(d.minChars), max_chars: num(d.maxChars) };
    }
    case 'evaluator':
      return { type: 'evaluator', evaluator: d.evaluator };
  }
}

/** The API's check of a draft (a blank timeout: the guard type's default). */
export function checkOf(d: CheckDraft): GuardCheckInput {
  return {
    name: d.name.trim(),
    guard: guardOf(d),
    stage: d.stage,
    action: d.action,
    timeout_ms: num(d.timeout),
    on_error: d.onError,
    ...(d.original && d.original.guard.type === d.type && { streaming: d.original.streaming }),
  };
}

function Select<T extends string>(props: {
  label: string;
  value: T;
  options: readonly T[];
  onChange: (v: T) => void;
}) {
  return (
    <label>
      {props.label}
      <select value={props.value} onChange={(e) => props.onChange(e.target.value as T)}>
        {props.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The settings of the draft's guard type. */
function GuardFields(props: {
  d: CheckDraft;
  set: (p: Partial<CheckDraft>) => void;
  evaluators: Evaluator[];
}) {
  const { d, set } = props;
  const text = (
    label: string,
    field: 'pattern' | 'replacement' | 'threshold' | 'allowed' | 'minChars' | 'maxChars',
  ) => (
    <label>
      {label}
      <input value={d[field]} onChange={(e) => set({ [field]: e.target.value })} />
    </label>
  );
  switch (d.type) {
    case 'pii':
      return (
        <div className="checks" title="Personal data to find (none: all)">
          {PII.map((p) => (
            <label key={p} className="check">
              <input
                type="checkbox"
                checked={d.entities.includes(p)}
                onChange={(e) =>
                  set({ entities: e.target.checked ? [...d.entities, p] : d.entities.filter((x) => x !== p) })
                }
              />
              {p}
            </label>
          ))}
        </div>
      );
    case 'deny_list':
      return (
        <label>
          Terms (one a line)
          <textarea rows={3} value={d.terms} onChange={(e) => set({ terms: e.target.value })} required />
        </label>
      );
    case 'regex':
      return (
        <div className="inline">
          {text('Pattern (RE2)', 'pattern')}
          {text('Replacement', 'replacement')}
          <label className="check">
            <input
              type="checkbox"
              checked={d.caseInsensitive}
              onChange={(e) => set({ caseInsensitive: e.target.checked })}
            />
            case-insensitive
          </label>
        </div>
      );
    case 'json_schema':
      return (
        <label>
          JSON Schema
          <textarea rows={4} value={d.schema} onChange={(e) => set({ schema: e.target.value })} />
        </label>
      );
    case 'prompt_injection':
      return <div className="inline">{text('Threshold (0–1, default 0.5)', 'threshold')}</div>;
    case 'language':
      return (
        <div className="inline">
          {text('Allowed languages (ISO 639-3: eng, fra)', 'allowed')}
          {text('Minimum characters', 'minChars')}
        </div>
      );
    case 'length':
      return (
        <div className="inline">
          {text('Minimum characters', 'minChars')}
          {text('Maximum characters', 'maxChars')}
        </div>
      );
    case 'evaluator':
      return (
        <label>
          Evaluator
          <select value={d.evaluator} onChange={(e) => set({ evaluator: e.target.value })} required>
            <option value="">choose…</option>
            {props.evaluators.map((ev) => (
              <option key={ev.id} value={ev.name}>
                {ev.name}
              </option>
            ))}
          </select>
        </label>
      );
    default:
      return null;
  }
}

/** One check of the form: its name, guard, stage, action, timeout and failure mode. */
export function CheckFields(props: {
  index: number;
  value: CheckDraft;
  onChange: (d: CheckDraft) => void;
  onRemove?: () => void;
  evaluators: Evaluator[];
}) {
  const d = props.value;
  const set = (patch: Partial<CheckDraft>) => props.onChange({ ...d, ...patch });
  return (
    <fieldset>
      <legend>Check {props.index + 1}</legend>
      <div className="inline">
        <label>
          Check name
          <input value={d.name} onChange={(e) => set({ name: e.target.value })} required />
        </label>
        <Select label="Guard" value={d.type} options={GUARD_TYPES} onChange={(type) => set({ type })} />
        <Select
          label="Stage"
          value={d.stage}
          options={['input', 'parallel', 'output'] as const}
          onChange={(stage) => set({ stage })}
        />
        <Select
          label="Action"
          value={d.action}
          options={['block', 'flag', 'redact'] as const}
          onChange={(action) => set({ action })}
        />
        <label>
          Timeout (ms)
          <input
            type="number"
            min="1"
            max="120000"
            value={d.timeout}
            placeholder="default"
            onChange={(e) => set({ timeout: e.target.value })}
          />
        </label>
        <Select
          label="On error"
          value={d.onError}
          options={['open', 'closed'] as const}
          onChange={(onError) => set({ onError })}
        />
      </div>
      <GuardFields d={d} set={set} evaluators={props.evaluators} />
      {props.onRemove && (
        <div className="actions">
          <button type="button" className="ghost" onClick={props.onRemove}>
            Remove check {props.index + 1}
          </button>
        </div>
      )}
    </fieldset>
  );
}
