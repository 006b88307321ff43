import { type FormEvent, useState } from 'react';
import { api, type ListOf, useApi } from '../api';
import { Dialog, ErrorBox, Loading } from '../components';
import type { Dataset } from '../types';

/** What an item is made from: a task log, a trace's span, a session, or a review (or review item). */
export type ItemFrom =
  | { task_log_id: string }
  | { span_id: string; trace_id?: string }
  | { session_id: string }
  | { review_id: string };

interface Changed {
  version: number;
  item_count: number;
}

function AddForm(props: { project: string; from: ItemFrom; onDone: (text: string) => void }) {
  const datasets = useApi<ListOf<Dataset>>(`/projects/${props.project}/datasets?limit=100`);
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const dataset = String(form.get('dataset') ?? '');
    const expected = String(form.get('expected') ?? '').trim();
    const splits = String(form.get('splits') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    setBusy(true);
    try {
      const body = {
        from: props.from,
        ...(expected ? { expected } : {}),
        ...(splits.length ? { splits } : {}),
      };
      const path = `/projects/${props.project}/datasets/${encodeURIComponent(dataset)}/items`;
      const changed = await api<Changed>(path, { method: 'POST', body });
      props.onDone(`Added: ${dataset} is now version ${changed.version} (${changed.item_count} items).`);
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  }
  if (!datasets.data) return datasets.error ? <ErrorBox error={datasets.error} /> : <Loading />;
  if (datasets.data.data.length === 0)
    return <p className="muted">Create a dataset first (Datasets page).</p>;
  return (
    <form className="stack" onSubmit={submit}>
      <label>
        Dataset
        <select name="dataset" required>
          {datasets.data.data.map((d) => (
            <option key={d.id} value={d.id}>
              {d.label} (version {d.version}, {d.item_count} items)
            </option>
          ))}
        </select>
      </label>
      <label>
        Expected answer <span className="muted small">(optional: otherwise what the source gives)</span>
        <textarea name="expected" rows={3} />
      </label>
      <label>
        Splits <span className="muted small">(comma separated, optional)</span>
        <input name="splits" pattern="[A-Za-z0-9._:\-]+(\s*,\s*[A-Za-z0-9._:\-]+)*" />
      </label>
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        Add as a new version
      </button>
    </form>
  );
}

/** "Add to dataset": makes a dataset item of what the page shows, as a new version of the dataset. */
export function AddToDataset(props: { project: string; from: ItemFrom }) {
  const [open, setOpen] = useState(false);
  const [done, setDone] = useState<string>();
  return (
    <>
      <button type="button" className="ghost small" onClick={() => setOpen(true)}>
        Add to dataset
      </button>
      {open && (
        <Dialog
          title="Add to dataset"
          onClose={() => {
            setOpen(false);
            setDone(undefined);
          }}
        >
          {done ? (
            <p role="status">{done}</p>
          ) : (
            <AddForm project={props.project} from={props.from} onDone={setDone} />
          )}
        </Dialog>
      )}
    </>
  );
}
