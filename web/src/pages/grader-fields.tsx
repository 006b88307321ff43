import type { ListOf } from '../api';
import type { EvaluatorBody, GraderEvaluator, GraderType, Model } from '../types';

type Metric = NonNullable<EvaluatorBody['evaluation_metric']>;
type Operation = NonNullable<EvaluatorBody['operation']>;

const METRICS = [
  'fuzzy_match',
  'bleu',
  'gleu',
  'meteor',
  'rouge_1',
  'rouge_2',
  'rouge_3',
  'rouge_4',
  'rouge_5',
  'rouge_l',
  'cosine',
] as const satisfies readonly Metric[];

const OPERATIONS: readonly [Operation, string][] = [
  ['eq', 'eq (equal)'],
  ['ne', 'ne (not equal)'],
  ['like', 'like (contains)'],
  ['ilike', 'ilike (contains, ignoring case)'],
];

/** The grader types' own fields, as the form edits them (text; messages and parameters as JSON). */
export interface GraderForm {
  input: string;
  reference: string;
  operation: string;
  metric: string;
  embeddingModel: string;
  model: string;
  rangeMin: string;
  rangeMax: string;
  samplingParams: string;
  labels: string;
  passingLabels: string;
}

/** What a grader type's pass threshold means, or null where the type refuses one. */
export function thresholdOf(type: GraderType): string | null {
  if (type === 'string_check') return null;
  if (type === 'label_model') return null;
  return type === 'text_similarity'
    ? 'similarity at or above which an item passes'
    : 'score at or above which an item passes';
}

const MESSAGES = (task: string) =>
  JSON.stringify([{ role: 'user', content: `${task}\n\nAnswer: {{sample.output_text}}` }], null, 2);

export function graderFormOf(e: GraderEvaluator | undefined, type: GraderType): GraderForm {
  const modelType = type === 'score_model' || type === 'label_model';
  const input =
    e === undefined
      ? modelType
        ? MESSAGES(type === 'score_model' ? 'Rate this answer from 0 to 1.' : 'Is this answer polite?')
        : '{{sample.output_text}}'
      : typeof e.input === 'string'
        ? e.input
        : JSON.stringify(e.input, null, 2);
  return {
    input,
    reference: e ? (e.reference ?? '') : '{{item.expected}}',
    operation: e?.operation ?? 'eq',
    metric: e?.evaluation_metric ?? 'fuzzy_match',
    embeddingModel: e?.embedding_model ?? '',
    model: e?.model ?? '',
    rangeMin: String(e?.range?.[0] ?? 0),
    rangeMax: String(e?.range?.[1] ?? 1),
    samplingParams: e?.sampling_params ? JSON.stringify(e.sampling_params, null, 2) : '',
    labels: (e?.labels ?? (e ? [] : ['polite', 'rude'])).join(', '),
    passingLabels: (e?.passing_labels ?? (e ? [] : ['polite'])).join(', '),
  };
}

const list = (text: string) =>
  text
    .split(',')
    .map((l) => l.trim())
    .filter(Boolean);

function json(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what} must be valid JSON`);
  }
}

/** The request fields of a grader type from the form (throws, naming the field, on text that is not JSON). */
export function graderBody(type: GraderType, f: GraderForm): Record<string, unknown> {
  switch (type) {
    case 'string_check':
      return { input: f.input, reference: f.reference, operation: f.operation };
    case 'text_similarity':
      return {
        input: f.input,
        reference: f.reference,
        evaluation_metric: f.metric,
        ...(f.metric === 'cosine' && f.embeddingModel.trim() && { embedding_model: f.embeddingModel.trim() }),
      };
    case 'score_model':
      return {
        model: f.model,
        input: json(f.input, 'Messages'),
        range: [Number(f.rangeMin), Number(f.rangeMax)],
        ...(f.samplingParams.trim() && { sampling_params: json(f.samplingParams, 'Sampling parameters') }),
      };
    case 'label_model':
      return {
        model: f.model,
        input: json(f.input, 'Messages'),
        labels: list(f.labels),
        passing_labels: list(f.passingLabels),
      };
  }
}

/** A model picker: the project's models, and a stored one that no longer resolves kept visible. */
export function ModelSelect(props: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  models: ListOf<Model> | undefined;
  required?: boolean;
}) {
  const models = props.models?.data ?? [];
  return (
    <label>
      {props.label}
      <select value={props.value} onChange={(e) => props.onChange(e.target.value)} required={props.required}>
        <option value="">{props.required ? 'Choose a model…' : 'default'}</option>
        {props.value && !models.some((m) => m.id === props.value) && (
          <option value={props.value}>{props.value} (not available)</option>
        )}
        {models.map((m) => (
          <option key={m.id} value={m.id}>
            {m.id} ({m.kind === 'frontier' ? m.provider : `registered, ${m.provider}`})
          </option>
        ))}
      </select>
    </label>
  );
}

/** The fields of one grader type: templates, metric or operation, model, messages, range, labels. */
export function GraderFields(props: {
  type: GraderType;
  form: GraderForm;
  set: (patch: Partial<GraderForm>) => void;
  models: ListOf<Model> | undefined;
}) {
  const { type, form: f, set } = props;
  const textual = type === 'string_check' || type === 'text_similarity';
  return (
    <div className="stack" data-testid="grader-fields">
      {textual ? (
        <>
          <div className="inline">
            {type === 'string_check' ? (
              <label>
                Operation
                <select value={f.operation} onChange={(e) => set({ operation: e.target.value })}>
                  {OPERATIONS.map(([op, text]) => (
                    <option key={op} value={op}>
                      {text}
                    </option>
                  ))}
                </select>
              </label>
            ) : (
              <label>
                Metric
                <select value={f.metric} onChange={(e) => set({ metric: e.target.value })}>
                  {METRICS.map((m) => (
                    <option key={m}>{m}</option>
                  ))}
                </select>
              </label>
            )}
            {type === 'text_similarity' && f.metric === 'cosine' && (
              <ModelSelect
                label="Embeddings model"
                value={f.embeddingModel}
                onChange={(v) => set({ embeddingModel: v })}
                models={props.models}
              />
            )}
          </div>
          <label>
            Input template
            <input
              className="code"
              value={f.input}
              onChange={(e) => set({ input: e.target.value })}
              required
            />
          </label>
          <label>
            Reference template
            <input
              className="code"
              value={f.reference}
              onChange={(e) => set({ reference: e.target.value })}
              required
            />
          </label>
          <p className="muted small">
            Templates read {'{{sample.output_text}}'} (the output), {'{{sample.output_json.x}}'} and{' '}
            {'{{item.field}}'} (the ground truth row: {'{{item.expected}}'}, {'{{item.input}}'}, …).
          </p>
        </>
      ) : (
        <>
          <div className="inline">
            <ModelSelect
              label="Grader model"
              value={f.model}
              onChange={(v) => set({ model: v })}
              models={props.models}
              required
            />
            {type === 'score_model' ? (
              <>
                <label>
                  Range min
                  <input
                    type="number"
                    step="any"
                    value={f.rangeMin}
                    onChange={(e) => set({ rangeMin: e.target.value })}
                    required
                  />
                </label>
                <label>
                  Range max
                  <input
                    type="number"
                    step="any"
                    value={f.rangeMax}
                    onChange={(e) => set({ rangeMax: e.target.value })}
                    required
                  />
                </label>
              </>
            ) : (
              <>
                <label>
                  Labels (comma-separated)
                  <input value={f.labels} onChange={(e) => set({ labels: e.target.value })} required />
                </label>
                <label>
                  Passing labels
                  <input
                    value={f.passingLabels}
                    onChange={(e) => set({ passingLabels: e.target.value })}
                    required
                  />
                </label>
              </>
            )}
          </div>
          <label>
            Messages (JSON)
            <textarea
              className="code"
              rows={8}
              spellCheck={false}
              value={f.input}
              onChange={(e) => set({ input: e.target.value })}
              required
            />
          </label>
          {type === 'score_model' && (
            <label>
              Sampling parameters (JSON, optional)
              <textarea
                className="code"
                rows={3}
                value={f.samplingParams}
                onChange={(e) => set({ samplingParams: e.target.value })}
                placeholder='{"temperature": 0}'
              />
            </label>
          )}
        </>
      )}
    </div>
  );
}
