import { type FormEvent, useState } from 'react';
import { type ListOf, upload, useApi } from '../api';
import { asText, Empty, ErrorBox, fmtDate, Loading, Pager } from '../components';
import { Link } from '../router';
import type { Dataset, Project } from '../types';

const PAGE = 20;

/** A file as the server reads it: .csv as CSV; .jsonl/.ndjson as they are; a .json array one row per line. */
async function asUpload(file: File): Promise<{ body: Blob; type: string }> {
  if (/\.csv$/i.test(file.name)) return { body: file, type: 'text/csv' };
  if (!/\.json$/i.test(file.name)) return { body: file, type: 'application/x-ndjson' };
  const rows: unknown = JSON.parse(await file.text());
  if (!Array.isArray(rows)) throw new Error('A .json file must hold an array of row objects');
  const body = new Blob([rows.map((r) => JSON.stringify(r)).join('\n')], { type: 'application/x-ndjson' });
  return { body, type: 'application/x-ndjson' };
}

export function DatasetsPage(props: { project: Project }) {
  const base = `/projects/${props.project.id}/datasets`;
  const list = useApi<ListOf<Dataset>>(`${base}?limit=100`);
  const [label, setLabel] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState<Error>();

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    setError(undefined);
    setProgress(0);
    try {
      const { body, type } = await asUpload(file);
      const name = label.trim() || file.name.replace(/\.[^.]+$/, '');
      await upload<Dataset>(`${base}?label=${encodeURIComponent(name)}`, body, type, setProgress);
      setLabel('');
      setFile(null);
      list.reload();
    } catch (err) {
      setError(err as Error);
    } finally {
      setProgress(null);
    }
  };

  return (
    <section className="card">
      <h2>Datasets</h2>
      <ErrorBox error={list.error ?? error} />
      <form className="inline upload" onSubmit={submit}>
        <label>
          Label
          <input value={label} onChange={(e) => setLabel(e.target.value)} placeholder="from the file name" />
        </label>
        <label>
          File (.csv, .jsonl, .ndjson or a .json array)
          <input
            type="file"
            accept=".csv,.jsonl,.ndjson,.json"
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
            required
          />
        </label>
        <button type="submit" className="primary" disabled={!file || progress !== null}>
          Upload
        </button>
        {progress !== null && (
          <span className="progress-wrap">
            <progress value={progress} max={1} aria-label="upload progress" />
            <span className="progress-text">{Math.round(progress * 100)}%</span>
          </span>
        )}
      </form>
      {!list.data ? (
        <Loading />
      ) : list.data.data.length === 0 ? (
        <Empty>No datasets yet. Rows have input, output and expected fields; other fields are kept.</Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Label</th>
              <th>Rows</th>
              <th>Description</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((d) => (
              <tr key={d.id}>
                <td>
                  <Link to={`/projects/${props.project.id}/datasets/${d.id}`}>{d.label}</Link>
                </td>
                <td>{d.item_count}</td>
                <td>{d.description ?? ''}</td>
                <td>{fmtDate(d.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

interface Item {
  position: number;
  id: string;
  data: Record<string, unknown>;
}

export function DatasetPage(props: { project: Project; id: string }) {
  const base = `/projects/${props.project.id}/datasets/${props.id}`;
  const dataset = useApi<Dataset>(base);
  const [offset, setOffset] = useState(0);
  const items = useApi<ListOf<Item>>(`${base}/items?limit=${PAGE}&offset=${offset}`);
  if (!dataset.data) return dataset.error ? <ErrorBox error={dataset.error} /> : <Loading />;
  return (
    <section className="card">
      <p className="crumbs">
        <Link to={`/projects/${props.project.id}/datasets`}>Datasets</Link> /
      </p>
      <h2>
        {dataset.data.label} <span className="muted">{dataset.data.item_count} rows</span>
      </h2>
      <ErrorBox error={items.error} />
      {!items.data ? (
        <Loading />
      ) : (
        <table className="rows">
          <thead>
            <tr>
              <th>#</th>
              <th>Input</th>
              <th>Output</th>
              <th>Expected</th>
              <th>Other fields</th>
            </tr>
          </thead>
          <tbody>
            {items.data.data.map((item) => {
              const { input, output, expected, ...rest } = item.data;
              return (
                <tr key={item.position}>
                  <td>{item.position}</td>
                  <td>
                    <pre className="value">{asText(input)}</pre>
                  </td>
                  <td>
                    <pre className="value">{asText(output)}</pre>
                  </td>
                  <td>
                    <pre className="value">{asText(expected)}</pre>
                  </td>
                  <td>
                    <pre className="value">{Object.keys(rest).length ? asText(rest) : ''}</pre>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {items.data && <Pager offset={offset} limit={PAGE} total={items.data.total} onChange={setOffset} />}
    </section>
  );
}
