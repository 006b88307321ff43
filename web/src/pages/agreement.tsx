import { useApi } from '../api';
import { asText, Empty, ErrorBox, fmtNum, fmtPct, Loading } from '../components';
import { Link } from '../router';
import type { Project } from '../types';
import type { Agreement, Figures, Interval } from './review-types';

const interval = (i: Interval, pct = false) =>
  i === null ? '' : pct ? ` [${fmtPct(i[0])}, ${fmtPct(i[1])}]` : ` [${fmtNum(i[0])}, ${fmtNum(i[1])}]`;

/** One figure with its 95 % interval, shown only when the scale has it. */
function Stat(props: { label: string; name: string; value: number | null; range: Interval; pct?: boolean }) {
  if (props.value === null) return null;
  return (
    <div className="stat" data-testid={`figure-${props.name}`}>
      <div className="label">{props.label}</div>
      <div className="figure">{props.pct ? fmtPct(props.value) : fmtNum(props.value)}</div>
      <div className="muted small">{props.range ? `95 %${interval(props.range, props.pct)}` : ''}</div>
    </div>
  );
}

function Confusion(props: { confusion: NonNullable<Figures['confusion']> }) {
  const { labels, matrix } = props.confusion;
  return (
    <div className="table-scroll">
      <table aria-label="Confusion matrix">
        <thead>
          <tr>
            <th>judge ↓ / person →</th>
            {labels.map((l) => (
              <th key={String(l)}>{String(l)}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {matrix.map((row, i) => (
            <tr key={String(labels[i])}>
              <th>{String(labels[i])}</th>
              {row.map((n, j) => (
                <td key={String(labels[j])}>{n}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Group(props: { figures: Figures; itemLink: (id: string) => string }) {
  const f = props.figures;
  return (
    <section aria-label={`Prompt ${f.prompt_hash ?? 'unknown'}`}>
      <h4>
        Judge prompt <code>{f.prompt_hash ?? 'unknown'}</code> · <span data-testid="figure-n">{f.n}</span>{' '}
        pairs
      </h4>
      <div className="stats">
        <Stat label="Cohen's κ" name="kappa" value={f.kappa} range={f.intervals.kappa} />
        <Stat
          label="Weighted κ"
          name="weighted_kappa"
          value={f.weighted_kappa}
          range={f.intervals.weighted_kappa}
        />
        <Stat
          label="Agreement"
          name="percent_agreement"
          value={f.percent_agreement}
          range={f.intervals.percent_agreement}
          pct
        />
        <Stat label="Pearson r" name="pearson" value={f.pearson} range={f.intervals.pearson} />
        <Stat label="Spearman ρ" name="spearman" value={f.spearman} range={f.intervals.spearman} />
        <Stat label="Mean abs. error" name="mae" value={f.mae} range={f.intervals.mae} />
      </div>
      {f.confusion ? <Confusion confusion={f.confusion} /> : null}
      <h4>Disagreements</h4>
      {f.disagreements.length === 0 ? (
        <Empty>None.</Empty>
      ) : (
        <ul aria-label="Disagreements" className="id-list">
          {f.disagreements.map((d) => (
            <li key={d.item_id}>
              <Link to={props.itemLink(d.item_id)}>{d.item_id}</Link>: judge {asText(d.judge)}, person{' '}
              {asText(d.human)}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** Agreement among the reviewers: the first two of each item, and all of them (Fleiss' κ, Krippendorff's α). */
function Reviewers(props: { figures: NonNullable<Agreement['inter_annotator']> }) {
  const f = props.figures;
  return (
    <section aria-label="Between reviewers" data-testid="inter-annotator">
      <h4>
        Between reviewers · {f.n} items reviewed twice or more (up to {f.reviewers} reviewers an item)
      </h4>
      <div className="stats">
        <Stat label="Cohen's κ (first two)" name="ia_kappa" value={f.kappa} range={f.intervals.kappa} />
        <Stat
          label="Weighted κ (first two)"
          name="ia_weighted_kappa"
          value={f.weighted_kappa}
          range={f.intervals.weighted_kappa}
        />
        <Stat
          label="Agreement (first two)"
          name="ia_percent_agreement"
          value={f.percent_agreement}
          range={f.intervals.percent_agreement}
          pct
        />
        <Stat label="Fleiss' κ" name="fleiss_kappa" value={f.fleiss_kappa} range={f.intervals.fleiss_kappa} />
        <Stat
          label={`Krippendorff's α (${f.alpha_level})`}
          name="krippendorff_alpha"
          value={f.krippendorff_alpha}
          range={f.intervals.krippendorff_alpha}
        />
      </div>
    </section>
  );
}

/** Judge–human agreement of each of a queue's rubric evaluators, per judge prompt. */
export function AgreementPage(props: { project: Project; queue: string }) {
  const p = encodeURIComponent(props.project.id);
  const q = encodeURIComponent(props.queue);
  const data = useApi<{ queue_id: string; evaluators: (Agreement & { object: string })[] }>(
    `/projects/${p}/review/queues/${q}/agreement`,
  );
  if (!data.data) return data.error ? <ErrorBox error={data.error} /> : <Loading />;
  const itemLink = (id: string) => `/projects/${props.project.id}/review/${data.data?.queue_id}/item/${id}`;
  return (
    <>
      <p>
        <Link to={`/projects/${props.project.id}/review/${data.data.queue_id}`}>Back to the queue</Link>
        {props.project.role === 'reviewer' ? null : (
          <>
            {' · '}
            <Link to={`/projects/${props.project.id}/review/${data.data.queue_id}/compare`}>
              Compare judge prompts
            </Link>
          </>
        )}
      </p>
      {data.data.evaluators.length === 0 ? <Empty>No evaluator in this queue's rubric.</Empty> : null}
      {data.data.evaluators.map((a) => (
        <section key={a.evaluator.id} className="card" aria-label={`Agreement of ${a.evaluator.name}`}>
          <h2>Agreement: {a.evaluator.name}</h2>
          <p className="muted">
            {a.n} judge–human pairs. κ: chance-corrected agreement (1 perfect, 0 chance); intervals are 95 %
            bootstrap intervals.
          </p>
          {a.groups.length === 0 ? <Empty>No item has both a judge score and a review yet.</Empty> : null}
          {a.groups.map((g) => (
            <Group key={g.prompt_hash ?? 'none'} figures={g} itemLink={itemLink} />
          ))}
          {a.inter_annotator ? <Reviewers figures={a.inter_annotator} /> : null}
        </section>
      ))}
    </>
  );
}
