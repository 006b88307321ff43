import { type ListOf, useApi } from '../api';
import { Empty, ErrorBox, Loading } from '../components';
import type { Model, Project } from '../types';

const price = (v: number | null) => (v === null ? '—' : `$${v}`);

/** The models the project can name: the operator's frontier models and the project's registered ones. */
export function ModelsPage(props: { project: Project }) {
  const models = useApi<ListOf<Model>>(`/projects/${props.project.id}/models`);
  if (!models.data) return models.error ? <ErrorBox error={models.error} /> : <Loading />;
  const list = models.data.data;
  return (
    <section>
      <h2>Models</h2>
      <p className="muted small">
        What a judge or a generate side can name: a registered model by its label, or a frontier model the
        operator enabled (<code>openai/…</code>, <code>anthropic/…</code>). Register one with{' '}
        <code>evalgate models register</code> or <code>POST /v1/models</code>.
      </p>
      {list.length === 0 ? (
        <Empty>No model yet: register one, or ask the operator to enable a provider.</Empty>
      ) : (
        <div className="table-scroll">
          <table className="models">
            <thead>
              <tr>
                <th>Model</th>
                <th>Kind</th>
                <th>Provider</th>
                <th>Upstream</th>
                <th>Input / Mtok</th>
                <th>Output / Mtok</th>
              </tr>
            </thead>
            <tbody>
              {list.map((m) => (
                <tr key={m.id}>
                  <td>
                    <code>{m.id}</code>
                  </td>
                  <td>{m.kind}</td>
                  <td>{m.provider}</td>
                  <td>{m.base_url ? `${m.upstream_model} at ${m.base_url}` : m.upstream_model}</td>
                  <td>{price(m.input_price_per_mtok)}</td>
                  <td>{price(m.output_price_per_mtok)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
