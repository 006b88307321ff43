import { type FormEvent, useEffect, useRef, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { ContainerOptions, Empty, ErrorBox, fmtDate, Loading } from '../components';
import { Link, navigate } from '../router';
import { type Container, type Evaluator, evaluatorType, type Model, type Project } from '../types';

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

export function EvaluatorsPage(props: { project: Project }) {
  const list = useApi<ListOf<Evaluator>>(`/projects/${props.project.id}/evaluators?limit=100`);
  return (
    <section className="card">
      <div className="section-head">
        <h2>Evaluators</h2>
        <button
          type="button"
          className="primary"
          onClick={() => navigate(`/projects/${props.project.id}/evaluators/new`)}
        >
          New evaluator
        </button>
      </div>
      <ErrorBox error={list.error} />
      {!list.data ? (
        <Loading />
      ) : list.data.data.length === 0 ? (
        <Empty>No evaluators yet: an LLM judge with a prompt, or a Python function.</Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Type</th>
              <th>Model</th>
              <th>Container</th>
              <th>Pass threshold</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((e) => (
              <tr key={e.id}>
                <td>
                  <Link to={`/projects/${props.project.id}/evaluators/${e.id}`}>{e.name}</Link>
                </td>
                <td>
                  {evaluatorType(e)}
                  {evaluatorType(e) === 'judge' ? `, ${e.mode}` : ''}
                </td>
                <td>{e.object === 'evaluator.judge' ? e.model : '—'}</td>
                <td>{e.container ?? 'any'}</td>
                <td>{e.pass_threshold ?? '—'}</td>
                <td>{fmtDate(e.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

interface Form {
  type: 'judge' | 'code';
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
}

function formOf(e: Evaluator | undefined): Form {
  const judge = e?.object === 'evaluator.judge' ? e : undefined;
  const code = e?.object === 'evaluator.code' ? e : undefined;
  return {
    type: e ? evaluatorType(e) : 'judge',
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
  };
}

/** Create (`id` null) or edit an evaluator: the prompt of a judge, or the source of a code evaluator. */
export function EvaluatorEditor(props: { project: Project; id: string | null }) {
  const base = `/projects/${props.project.id}`;
  const existing = useApi<Evaluator>(props.id ? `${base}/evaluators/${props.id}` : null);
  const containers = useApi<ListOf<Container>>(`${base}/containers?limit=100`);
  const models = useApi<ListOf<Model>>(`${base}/models`);
  const [form, setForm] = useState<Form>(formOf(undefined));
  const [error, setError] = useState<Error>();
  const [saved, setSaved] = useState(false);
  const prompt = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    if (existing.data) setForm(formOf(existing.data));
  }, [existing.data]);

  const set = (patch: Partial<Form>) => {
    setSaved(false);
    setForm({ ...form, ...patch });
  };
  const insert = (variable: string) => {
    const area = prompt.current;
    const at = area?.selectionStart ?? form.prompt.length;
    set({ prompt: form.prompt.slice(0, at) + variable + form.prompt.slice(area?.selectionEnd ?? at) });
    area?.focus();
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    let parameters: Record<string, unknown>;
    try {
      parameters = JSON.parse(form.parameters || '{}');
    } catch {
      setError(new Error('Inference parameters must be a JSON object'));
      return;
    }
    const common = {
      name: form.name.trim() || null,
      description: form.description || null,
      container: form.container || null,
      pass_threshold: form.threshold === '' ? null : Number(form.threshold),
    };
    const body =
      form.type === 'judge'
        ? {
            ...common,
            model: form.model,
            mode: form.mode,
            prompt: form.prompt,
            inference_parameters: parameters,
          }
        : {
            ...common,
            source: form.source,
            requirements: form.requirements
              .split('\n')
              .map((r) => r.trim())
              .filter(Boolean),
          };
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
              onChange={(e) => set({ type: e.target.value as Form['type'] })}
            >
              <option value="judge">LLM judge</option>
              <option value="code">Python code</option>
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
          <label>
            Pass threshold
            <input
              type="number"
              step="any"
              value={form.threshold}
              onChange={(e) => set({ threshold: e.target.value })}
            />
          </label>
        </div>
        <label>
          Description
          <input
            value={form.description}
            onChange={(e) => set({ description: e.target.value })}
            maxLength={10000}
          />
        </label>
        {form.type === 'judge' ? (
          <>
            <div className="inline">
              <label>
                Judge model
                <select value={form.model} onChange={(e) => set({ model: e.target.value })} required>
                  <option value="">Choose a model…</option>
                  {/* A model that no longer resolves stays visible rather than silently replaced. */}
                  {form.model && !(models.data?.data ?? []).some((m) => m.id === form.model) && (
                    <option value={form.model}>{form.model} (not available)</option>
                  )}
                  {(models.data?.data ?? []).map((m) => (
                    <option key={m.id} value={m.id}>
                      {m.id} ({m.kind === 'frontier' ? m.provider : `registered, ${m.provider}`})
                    </option>
                  ))}
                </select>
              </label>
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
              The judge answers {'{"score": 0..1, "reasoning": …}'}; a prompt without {'{{output}}'} gets the
              input and output appended.
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
        ) : (
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
        )}
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
