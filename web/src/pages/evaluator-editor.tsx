import { type FormEvent, useEffect, useRef, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { ContainerOptions, ErrorBox, Loading } from '../components';
import { Link, navigate } from '../router';
import {
  type Container,
  type Evaluator,
  type EvaluatorType,
  evaluatorType,
  GRADER_TYPES,
  type GraderType,
  isGrader,
  type Model,
  type Project,
} from '../types';
import {
  GraderFields,
  type GraderForm,
  graderBody,
  graderFormOf,
  ModelSelect,
  thresholdOf,
} from './grader-fields';

/** What a judge prompt can reference (see docs/runs.md). */
const VARIABLES = [
  ['{{input}}', 'the input (question, request messages)'],
  ['{{output}}', 'the sample output being judged'],
  ['{{expected}}', 'the expected answer of the ground truth'],
  ['{{baseline}}', 'the baseline output (pairwise)'],
  ['{{metadata.key}}', 'a metadata field of the item'],
] as const;

const CODE_TEMPLATE = `def evaluate(sample, ground_truth, baseline):
    # Return a bool, a number, or {"score": ..., "passed": ..., "reasoning": ...}
    return sample["output"].strip() == ground_truth["expected"].strip()
`;

const TYPES: readonly [EvaluatorType, string][] = [
  ['judge', 'LLM judge'],
  ['code', 'Python code'],
  ['string_check', 'Grader: string check'],
  ['text_similarity', 'Grader: text similarity'],
  ['score_model', 'Grader: score model'],
  ['label_model', 'Grader: label model'],
];

const isGraderType = (t: EvaluatorType): t is GraderType => (GRADER_TYPES as readonly string[]).includes(t);

interface Form {
  type: EvaluatorType;
  name: string;
  description: string;
  container: string;
  model: string;
  mode: string;
  prompt: string;
  threshold: string;
  parameters: string;
  source: string;
  requirements: string;
  grader: GraderForm;
}

function formOf(e: Evaluator | undefined, type: EvaluatorType = 'judge'): Form {
  const judge = e?.object === 'evaluator.judge' ? e : undefined;
  const code = e?.object === 'evaluator.code' ? e : undefined;
  const t = e ? evaluatorType(e) : type;
  return {
    type: t,
    name: e?.name ?? '',
    description: e?.description ?? '',
    container: e?.container ?? '',
    model: judge?.model ?? '',
    mode: e?.mode ?? 'pointwise',
    prompt: judge?.prompt ?? '',
    threshold: e?.pass_threshold === null || e?.pass_threshold === undefined ? '' : String(e.pass_threshold),
    parameters: JSON.stringify(judge?.inference_parameters ?? {}, null, 2),
    source: code?.source ?? CODE_TEMPLATE,
    requirements: (code?.requirements ?? []).join('\n'),
    grader: graderFormOf(e && isGrader(e) ? e : undefined, isGraderType(t) ? t : 'string_check'),
  };
}

/** The request body of the form's type (throws, naming the field, on JSON that does not parse). */
function bodyOf(form: Form): Record<string, unknown> {
  const threshold = form.threshold === '' ? null : Number(form.threshold);
  const common = {
    name: form.name.trim() || null,
    description: form.description || null,
    container: form.container || null,
  };
  if (isGraderType(form.type)) {
    // Types that decide passing themselves (a match, the passing labels) take no threshold.
    const takes = thresholdOf(form.type) !== null;
    return { ...common, pass_threshold: takes ? threshold : null, ...graderBody(form.type, form.grader) };
  }
  if (form.type === 'judge') {
    let parameters: Record<string, unknown>;
    try {
      parameters = JSON.parse(form.parameters || '{}');
    } catch {
      throw new Error('Inference parameters must be a JSON object');
    }
    return {
      ...common,
      pass_threshold: threshold,
      model: form.model,
      mode: form.mode,
      prompt: form.prompt,
      inference_parameters: parameters,
    };
  }
  return {
    ...common,
    pass_threshold: threshold,
    source: form.source,
    requirements: form.requirements
      .split('\n')
      .map((r) => r.trim())
      .filter(Boolean),
  };
}

function JudgeFields(props: {
  form: Form;
  set: (patch: Partial<Form>) => void;
  models: ListOf<Model> | undefined;
}) {
  const { form, set } = props;
  const prompt = useRef<HTMLTextAreaElement>(null);
  const insert = (variable: string) => {
    const area = prompt.current;
    const at = area?.selectionStart ?? form.prompt.length;
    set({ prompt: form.prompt.slice(0, at) + variable + form.prompt.slice(area?.selectionEnd ?? at) });
    area?.focus();
  };
  return (
    <>
      <div className="inline">
        <ModelSelect
          label="Judge model"
          value={form.model}
          onChange={(model) => set({ model })}
          models={props.models}
          required
        />
        <label>
          Mode
          <select aria-label="Mode" value={form.mode} onChange={(e) => set({ mode: e.target.value })}>
            <option value="pointwise">pointwise (a score per output)</option>
            <option value="pairwise">pairwise (sample against baseline)</option>
          </select>
        </label>
      </div>
      <label>
        Prompt
        <textarea
          ref={prompt}
          className="code"
          rows={10}
          value={form.prompt}
          onChange={(e) => set({ prompt: e.target.value })}
          required
        />
      </label>
      <div className="variables">
        <span className="muted small">Template variables (click to insert):</span>
        {VARIABLES.map(([v, what]) => (
          <button key={v} type="button" className="chip" title={what} onClick={() => insert(v)}>
            {v}
          </button>
        ))}
      </div>
      <p className="muted small">
        The judge answers {'{"score": 0..1, "reasoning": …}'}; a prompt without {'{{output}}'} gets the input
        and output appended.
      </p>
      <label>
        Inference parameters (JSON)
        <textarea
          className="code"
          rows={3}
          value={form.parameters}
          onChange={(e) => set({ parameters: e.target.value })}
        />
      </label>
    </>
  );
}

function CodeFields(props: { form: Form; set: (patch: Partial<Form>) => void }) {
  const { form, set } = props;
  return (
    <>
      <label>
        Source (Python)
        <textarea
          className="code"
          rows={14}
          spellCheck={false}
          value={form.source}
          onChange={(e) => set({ source: e.target.value })}
          required
        />
      </label>
      <label>
        Requirements (one per line)
        <textarea
          className="code"
          rows={3}
          value={form.requirements}
          onChange={(e) => set({ requirements: e.target.value })}
        />
      </label>
    </>
  );
}

/**
 * Create (`id` null) or edit an evaluator: the prompt of a judge, the source of a code evaluator, or
 * the fields of a grader (templates, metric or operation, model and messages, range, labels).
 */
export function EvaluatorEditor(props: { project: Project; id: string | null }) {
  const base = `/projects/${props.project.id}`;
  const existing = useApi<Evaluator>(props.id ? `${base}/evaluators/${props.id}` : null);
  const containers = useApi<ListOf<Container>>(`${base}/containers?limit=100`);
  const models = useApi<ListOf<Model>>(`${base}/models`);
  const [form, setForm] = useState<Form>(formOf(undefined));
  const [error, setError] = useState<Error>();
  const [saved, setSaved] = useState(false);

  useEffect(() => {
    if (existing.data) setForm(formOf(existing.data));
  }, [existing.data]);

  const set = (patch: Partial<Form>) => {
    setSaved(false);
    setForm({ ...form, ...patch });
  };
  const setType = (type: EvaluatorType) => {
    setSaved(false);
    // A new type starts from its own defaults; what is common to every type is kept.
    const fresh = formOf(undefined, type);
    setForm({ ...fresh, name: form.name, description: form.description, container: form.container });
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    let body: Record<string, unknown>;
    try {
      body = bodyOf(form);
    } catch (err) {
      setError(err as Error);
      return;
    }
    try {
      if (props.id) {
        await api<Evaluator>(`${base}/evaluators/${props.id}`, { method: 'PATCH', body });
        setSaved(true);
        existing.reload();
      } else {
        const created = await api<Evaluator>(`${base}/evaluators`, {
          method: 'POST',
          body: { type: form.type, ...body },
        });
        navigate(`${base}/evaluators/${created.id}`, true);
      }
    } catch (err) {
      setError(err as Error);
    }
  };

  if (props.id && !existing.data) return existing.error ? <ErrorBox error={existing.error} /> : <Loading />;
  const graderType = isGraderType(form.type) ? form.type : null;
  const threshold = graderType ? thresholdOf(graderType) : 'score at or above which an output passes';
  return (
    <section className="card">
      <p className="crumbs">
        <Link to={`${base}/evaluators`}>Evaluators</Link> /
      </p>
      <h2>{props.id ? `Edit ${existing.data?.name}` : 'New evaluator'}</h2>
      <form onSubmit={submit} className="stack">
        <ErrorBox error={error} />
        <div className="inline">
          <label>
            Type
            <select
              aria-label="Type"
              value={form.type}
              disabled={props.id !== null}
              onChange={(e) => setType(e.target.value as EvaluatorType)}
            >
              {TYPES.map(([t, text]) => (
                <option key={t} value={t}>
                  {text}
                </option>
              ))}
            </select>
          </label>
          <label>
            Name
            <input
              value={form.name}
              onChange={(e) => set({ name: e.target.value })}
              maxLength={200}
              required
            />
          </label>
          <label>
            Container
            <select
              aria-label="Container"
              value={form.container}
              onChange={(e) => set({ container: e.target.value })}
            >
              <option value="">any</option>
              <ContainerOptions containers={containers.data?.data} />
            </select>
          </label>
          {threshold !== null && (
            <label title={threshold}>
              Pass threshold
              <input
                type="number"
                step="any"
                value={form.threshold}
                onChange={(e) => set({ threshold: e.target.value })}
              />
            </label>
          )}
        </div>
        <label>
          Description
          <input
            value={form.description}
            onChange={(e) => set({ description: e.target.value })}
            maxLength={10000}
          />
        </label>
        {graderType ? (
          <GraderFields
            type={graderType}
            form={form.grader}
            set={(patch) => set({ grader: { ...form.grader, ...patch } })}
            models={models.data}
          />
        ) : form.type === 'judge' ? (
          <JudgeFields form={form} set={set} models={models.data} />
        ) : (
          <CodeFields form={form} set={set} />
        )}
        {graderType === 'string_check' && <p className="muted small">A match passes (score 1).</p>}
        {graderType === 'label_model' && <p className="muted small">The passing labels decide.</p>}
        <div className="actions">
          {saved && <span className="muted">Saved.</span>}
          <button type="submit" className="primary">
            {props.id ? 'Save' : 'Create evaluator'}
          </button>
        </div>
      </form>
    </section>
  );
}
