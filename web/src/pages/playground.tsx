import { type FormEvent, useEffect, useState } from 'react';
import { api, type ListOf, postStream, useApi } from '../api';
import { ErrorBox, Loading } from '../components';
import { navigate, useLocation } from '../router';
import type {
  AnswerScore,
  Evaluator,
  Model,
  ModelAnswer,
  PlaygroundRequest,
  Project,
  PromptSummary,
  PromptVersion,
} from '../types';
import { RequestEditor, RunChoices } from './playground-editor';
import {
  Answers,
  type Column,
  type Draft,
  draftOf,
  parsed,
  typedValue,
  variablesIn,
} from './playground-parts';

/** What the page can open, as the URL names it (the server's query of an editable request). */
const SOURCES = ['prompt', 'version', 'label', 'task_log', 'span', 'trace', 'session', 'turn'] as const;

const BLANK: PlaygroundRequest = {
  object: 'playground.request',
  source: { kind: 'prompt_version', id: '', task_log_id: null },
  messages: [{ role: 'user', content: '' }],
  variables: {},
  variable_types: {},
  tools: null,
  response_format: null,
  parameters: {},
  model: null,
  output: null,
  prompt: null,
  prompt_name: null,
};

/** The link that opens something in the playground (a prompt version, a task log, a span, a session turn). */
export function playgroundLink(
  project: string,
  source: Partial<Record<(typeof SOURCES)[number], string | number>>,
) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(source)) if (v !== undefined) search.set(k, String(v));
  return `/projects/${project}/playground?${search.toString()}`;
}

/** The versions of the prompt open on the page, newest first: picking one opens it. */
function OpenVersion(props: { project: string; prompt: string; version: number | undefined }) {
  const path = `/projects/${props.project}/prompts/${encodeURIComponent(props.prompt)}/versions?limit=100`;
  const versions = useApi<ListOf<PromptVersion>>(path);
  if (!versions.data) return null;
  return (
    <label className="inline">
      Version
      <select
        aria-label="Prompt version"
        value={props.version ?? ''}
        onChange={(e) =>
          navigate(playgroundLink(props.project, { prompt: props.prompt, version: e.target.value }))
        }
      >
        {props.version === undefined && <option value="">latest</option>}
        {versions.data.data.map((v) => (
          <option key={v.version} value={v.version}>
            v{v.version}
            {v.labels.length ? ` (${v.labels.join(', ')})` : ''}
          </option>
        ))}
      </select>
    </label>
  );
}

function OpenPrompt(props: { project: string }) {
  const prompts = useApi<ListOf<PromptSummary>>(`/projects/${props.project}/prompts?limit=100`);
  const { search } = useLocation();
  const open = search.get('prompt');
  const version = search.get('version');
  if (!prompts.data || prompts.data.data.length === 0) return null;
  return (
    <div className="inline pg-open">
      <PromptChoice project={props.project} prompts={prompts.data.data} />
      {open && (
        <OpenVersion project={props.project} prompt={open} version={version ? Number(version) : undefined} />
      )}
    </div>
  );
}

function PromptChoice(props: { project: string; prompts: PromptSummary[] }) {
  return (
    <label className="inline">
      Open a prompt
      <select
        aria-label="Open a prompt"
        value=""
        onChange={(e) =>
          e.target.value && navigate(playgroundLink(props.project, { prompt: e.target.value }))
        }
      >
        <option value="">…</option>
        {props.prompts.map((p) => (
          <option key={p.id} value={p.name}>
            {p.name} (v{p.latest_version})
          </option>
        ))}
      </select>
    </label>
  );
}

/** "Save as new version": the edit as the next version of the prompt named (a new name starts a prompt). */
function SaveVersion(props: {
  project: string;
  body: () => Record<string, unknown>;
  promptName: string | null;
}) {
  const [saved, setSaved] = useState<string>();
  const [error, setError] = useState<Error>();
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const commit = String(form.get('commit') ?? '').trim();
    setError(undefined);
    try {
      const body = {
        ...props.body(),
        prompt: String(form.get('prompt') ?? ''),
        ...(commit ? { commit_message: commit } : {}),
      };
      const v = await api<PromptVersion>(`/projects/${props.project}/playground/versions`, {
        method: 'POST',
        body,
      });
      setSaved(`Saved as ${v.name} version ${v.version}.`);
    } catch (err) {
      setError(err as Error);
    }
  }
  return (
    <form className="stack card" onSubmit={submit} aria-label="Save as new version">
      <h3>Save as a prompt version</h3>
      <label>
        Prompt name
        <input
          name="prompt"
          required
          defaultValue={props.promptName ?? ''}
          pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*"
        />
      </label>
      <label>
        Commit message
        <input name="commit" />
      </label>
      <ErrorBox error={error} />
      {saved && <p role="status">{saved}</p>}
      <button type="submit">Save as new version</button>
    </form>
  );
}

/**
 * The playground: a request opened from a prompt version or a recorded call (or written from scratch),
 * edited, run against 1–4 models side by side with their answers streamed, scored by the chosen
 * evaluators; saved as a prompt version, each answer added to a dataset.
 */
export function PlaygroundPage(props: { project: Project }) {
  const pid = props.project.id;
  const { search } = useLocation();
  const query = SOURCES.filter((k) => search.has(k))
    .map((k) => `${k}=${encodeURIComponent(search.get(k) ?? '')}`)
    .join('&');
  const opened = useApi<PlaygroundRequest>(query ? `/projects/${pid}/playground/request?${query}` : null);
  const models = useApi<ListOf<Model>>(`/projects/${pid}/models`);
  const evaluators = useApi<ListOf<Evaluator>>(`/projects/${pid}/evaluators?limit=100`);
  const source = query ? opened.data : BLANK;
  const [draft, setDraft] = useState<Draft>();
  const [chosenModels, setModels] = useState<string[]>(['']);
  const [chosen, setChosen] = useState<string[]>([]);
  const [columns, setColumns] = useState<Column[]>([]);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<Error>();

  useEffect(() => {
    if (!source) return;
    setDraft(draftOf(source));
    setModels([source.model ?? '']);
    setColumns([]);
  }, [source]);

  if (opened.error) return <ErrorBox error={opened.error} />;
  if (!source || !draft) return <Loading />;

  const editedBody = (): Record<string, unknown> => {
    const tools = parsed(draft.tools, 'Tools');
    const responseFormat = parsed(draft.responseFormat, 'Response format');
    const parameters = parsed(draft.parameters, 'Parameters');
    return {
      messages: draft.messages,
      variable_types: draft.variableTypes,
      ...(tools === undefined ? {} : { tools }),
      ...(responseFormat === undefined ? {} : { response_format: responseFormat }),
      ...(parameters === undefined ? {} : { parameters }),
    };
  };

  async function run() {
    setError(undefined);
    const names = variablesIn(draft?.messages ?? []);
    const list = chosenModels.map((m) => m.trim()).filter(Boolean);
    let body: Record<string, unknown>;
    try {
      body = {
        ...editedBody(),
        variables: Object.fromEntries(
          names.map((n) => [n, typedValue(draft?.variableTypes[n], draft?.variables[n] ?? '')]),
        ),
        models: list,
        ...(chosen.length ? { evaluators: chosen } : {}),
        ...(source?.prompt ? { prompt: source.prompt } : {}),
      };
    } catch (err) {
      setError(err as Error);
      return;
    }
    setColumns(list.map((model) => ({ model, text: '', answer: null, scores: null })));
    setRunning(true);
    const update = (index: number, change: (c: Column) => Column) =>
      setColumns((cols) => cols.map((c, i) => (i === index ? change(c) : c)));
    try {
      await postStream(`/projects/${pid}/playground/runs`, body, (event, data) => {
        const d = data as { index: number; text?: string; answer?: ModelAnswer; scores?: AnswerScore[] };
        if (event === 'delta') update(d.index, (c) => ({ ...c, text: c.text + (d.text ?? '') }));
        else if (event === 'answer' && d.answer) update(d.index, (c) => ({ ...c, answer: d.answer ?? null }));
        else if (event === 'scores') update(d.index, (c) => ({ ...c, scores: d.scores ?? [] }));
      });
    } catch (err) {
      setColumns([]);
      setError(err as Error);
    } finally {
      setRunning(false);
    }
  }

  const recorded = source.source.task_log_id !== null;
  return (
    <div className="playground">
      <section className="card">
        <div className="section-head">
          <h2>Playground</h2>
          <OpenPrompt project={pid} />
        </div>
        {query && (
          <p className="muted small" data-source={source.source.kind}>
            Opened from {source.source.kind.replace('_', ' ')} <code>{source.source.id}</code>
            {source.prompt_name && ` (prompt ${source.prompt_name} v${source.prompt?.version})`}
          </p>
        )}
        {recorded && source.output !== null && (
          <details>
            <summary>What the recorded call answered</summary>
            <div className="message-text">{source.output}</div>
          </details>
        )}
        <div className="pg-layout">
          <RequestEditor draft={draft} onChange={setDraft} />
          <div className="stack">
            <RunChoices
              models={chosenModels}
              onModels={setModels}
              known={models.data?.data ?? []}
              evaluators={evaluators.data?.data ?? []}
              chosen={chosen}
              onChosen={setChosen}
            />
            <ErrorBox error={error} />
            <button type="button" onClick={run} disabled={running}>
              {running ? 'Running…' : 'Run'}
            </button>
          </div>
        </div>
      </section>
      {columns.length > 0 && <Answers project={pid} columns={columns} />}
      <SaveVersion
        project={pid}
        body={() => ({ ...editedBody(), model: chosenModels[0]?.trim() || null })}
        promptName={source.prompt_name}
      />
    </div>
  );
}
