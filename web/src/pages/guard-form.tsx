import { type FormEvent, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { ContainerOptions, ErrorBox } from '../components';
import type { Container, CreateGuardPolicy, Evaluator, GuardPolicy, Project } from '../types';
import { type CheckDraft, CheckFields, checkOf, draftOf, newCheck } from './guard-check';

const commaList = (text: string) =>
  text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);

/**
 * The form creating a guard policy, or changing `policy`: its name, what it is attached to (containers,
 * keys, models; none: every call) and its ordered checks. The API's 422 is shown as it names each
 * problem (a pattern RE2 refuses, an unknown evaluator, redaction a guard cannot do).
 */
export function PolicyForm(props: { project: Project; policy?: GuardPolicy; onDone: () => void }) {
  const base = `/projects/${props.project.id}`;
  const containers = useApi<ListOf<Container>>(`${base}/containers?limit=100`);
  const evaluators = useApi<ListOf<Evaluator>>(`${base}/evaluators?limit=100`);
  const p = props.policy;
  const labelOf = (id: string) => containers.data?.data.find((c) => c.id === id)?.label ?? id;
  const [name, setName] = useState(p?.name ?? '');
  const [description, setDescription] = useState(p?.description ?? '');
  const [enabled, setEnabled] = useState(p?.enabled ?? true);
  const [chosen, setChosen] = useState<string[]>(p?.applies_to.containers ?? []);
  const [keys, setKeys] = useState(p?.applies_to.keys.join(', ') ?? '');
  const [models, setModels] = useState(p?.applies_to.models.join(', ') ?? '');
  const [checks, setChecks] = useState<CheckDraft[]>(p ? p.checks.map(draftOf) : [newCheck()]);
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    let body: CreateGuardPolicy;
    try {
      body = {
        name: name.trim(),
        description: description.trim() || null,
        enabled,
        applies_to: { containers: chosen, keys: commaList(keys), models: commaList(models) },
        checks: checks.map(checkOf),
      };
    } catch (err) {
      return setError(err as Error);
    }
    setBusy(true);
    try {
      if (p) await api(`${base}/guards/${p.id}`, { method: 'PATCH', body });
      else await api(`${base}/guards`, { method: 'POST', body });
      props.onDone();
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };

  const all = evaluators.data?.data ?? [];
  const setCheck = (i: number, d: CheckDraft) => setChecks(checks.map((c, j) => (j === i ? d : c)));
  return (
    <form onSubmit={submit} className="stack" aria-label={p ? `Edit policy ${p.name}` : 'New guard policy'}>
      <div className="inline">
        <label>
          Policy name
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <label>
          Description
          <input value={description} onChange={(e) => setDescription(e.target.value)} />
        </label>
        <label className="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
          Enabled
        </label>
      </div>
      <fieldset>
        <legend>Applies to (none: every call of the project)</legend>
        <div className="inline">
          <label>
            Containers
            <select
              multiple
              value={chosen.map(labelOf)}
              onChange={(e) => {
                const labels = [...e.target.selectedOptions].map((o) => o.value);
                const byLabel = containers.data?.data ?? [];
                setChosen(labels.map((l) => byLabel.find((c) => c.label === l)?.id ?? l));
              }}
            >
              <ContainerOptions containers={containers.data?.data} />
            </select>
          </label>
          <label>
            Key ids (comma-separated)
            <input value={keys} onChange={(e) => setKeys(e.target.value)} />
          </label>
          <label>
            Models (comma-separated)
            <input value={models} onChange={(e) => setModels(e.target.value)} />
          </label>
        </div>
      </fieldset>
      {checks.map((c, i) => (
        <CheckFields
          key={c.key}
          index={i}
          value={c}
          evaluators={all}
          onChange={(d) => setCheck(i, d)}
          onRemove={checks.length > 1 ? () => setChecks(checks.filter((_, j) => j !== i)) : undefined}
        />
      ))}
      <ErrorBox error={error ?? containers.error ?? evaluators.error} />
      <div className="actions">
        <button type="button" onClick={() => setChecks([...checks, newCheck()])}>
          Add check
        </button>
        <button type="submit" className="primary" disabled={busy}>
          {p ? 'Save policy' : 'Create policy'}
        </button>
        <button type="button" className="ghost" onClick={props.onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
