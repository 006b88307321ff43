import { type ListOf, useApi } from '../api';
import { Empty, ErrorBox, fmtDate, Loading } from '../components';
import { Link, navigate } from '../router';
import { type Evaluator, evaluatorType, isGrader, type Project } from '../types';

export { EvaluatorEditor } from './evaluator-editor';

/** The model an evaluator calls: a judge's, a model grader's, a cosine similarity's embeddings model. */
function modelOf(e: Evaluator): string {
  if (e.object === 'evaluator.judge') return e.model;
  if (isGrader(e)) return e.model ?? e.embedding_model ?? '—';
  return '—';
}

/** The type column: judge with its mode, code, or the grader type with what it measures. */
function typeText(e: Evaluator): string {
  const type = evaluatorType(e);
  if (e.object === 'evaluator.judge') return `${type}, ${e.mode}`;
  if (!isGrader(e)) return type;
  const detail = e.evaluation_metric ?? e.operation;
  return detail ? `${type}, ${detail}` : type;
}

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
        <Empty>No evaluators yet: an LLM judge with a prompt, a Python function, or a grader.</Empty>
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
                <td data-testid="evaluator-type">{typeText(e)}</td>
                <td>{modelOf(e)}</td>
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
