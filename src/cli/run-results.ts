import type { Run } from '../client/index.js';
import { detail, fixed, seconds, table, usd } from './output.js';

/** One launch × evaluator line of a run's results. */
export interface ResultRow {
  launch: number;
  model: string | null;
  /** An experiment's launch: the prompt version it rendered, `name@version`. */
  prompt: string | null;
  evaluatorId: string;
  evaluator: string;
  avgScore: number | null;
  accuracy: number | null;
  passed: number;
  failed: number;
  errors: number;
  missing: number;
  total: number;
}

const count = (v: unknown): number => (typeof v === 'number' ? v : 0);
const figure = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The per-model × per-evaluator figures of a run (empty until it has results). */
export function resultRows(run: Run): ResultRow[] {
  const rows: ResultRow[] = [];
  for (const [i, launch] of (run.results?.per_model ?? []).entries()) {
    const slug = (launch.model as { slug?: unknown } | null)?.slug;
    const prompt = launch.prompt ? `${launch.prompt.name}@${launch.prompt.version}` : null;
    for (const [id, e] of Object.entries(launch.per_eval ?? {})) {
      if (!e) continue;
      const name = (e as Record<string, unknown>).evaluator_name;
      rows.push({
        launch: launch.launch_index ?? i,
        model: typeof slug === 'string' ? slug : null,
        prompt,
        evaluatorId: id,
        evaluator: typeof name === 'string' ? name : id,
        avgScore: figure(e.avg_score),
        accuracy: figure(e.accuracy),
        passed: count(e.num_passed),
        failed: count(e.num_failed),
        errors: count(e.num_errors),
        missing: count(e.num_missing),
        total: count(e.num_total),
      });
    }
  }
  return rows;
}

const HEAD = [
  'launch',
  'model',
  'evaluator',
  'avg score',
  'accuracy',
  'passed',
  'failed',
  'errors',
  'missing',
];

function cells(r: ResultRow): (string | number)[] {
  return [
    r.launch,
    r.model ?? '-',
    r.evaluator,
    fixed(r.avgScore),
    fixed(r.accuracy),
    r.passed,
    r.failed,
    r.errors,
    r.missing,
  ];
}

export function resultsTable(run: Run): string {
  const rows = resultRows(run);
  if (rows.length === 0) return '(no results yet)';
  // An experiment's table says which prompt version each launch rendered.
  if (rows.some((r) => r.prompt !== null)) {
    const head = [...HEAD.slice(0, 2), 'prompt', ...HEAD.slice(2)];
    return table(
      head,
      rows.map((r) => {
        const c = cells(r);
        return [...c.slice(0, 2), r.prompt ?? '-', ...c.slice(2)];
      }),
    );
  }
  return table(HEAD, rows.map(cells));
}

export const progressOf = (run: Run): { done: number; total: number | null } | null => {
  const p = (run.metrics as { progress?: { done?: unknown; total?: unknown } } | null)?.progress;
  if (!p || typeof p.done !== 'number') return null;
  return { done: p.done, total: typeof p.total === 'number' ? p.total : null };
};

export function progressText(run: Run): string {
  const p = progressOf(run);
  return p ? `${p.done}/${p.total ?? '?'}` : '-';
}

export function durationMs(run: Run): number | null {
  const d = (run.metrics as { duration_ms?: unknown } | null)?.duration_ms;
  if (typeof d === 'number') return d;
  // Without the metric (runs stored before it), the run's own timestamps.
  const [start, end] = [Date.parse(run.started_at ?? ''), Date.parse(run.finished_at ?? '')];
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, end - start) : null;
}

/** A side for people: `dataset qa [0:100]`. */
export const sideText = (side: Run['sample']): string | null => {
  if (!side) return null;
  const ref = side.dataset ?? side.container ?? side.models?.join(',') ?? '';
  return `${side.type}${ref ? ` ${ref}` : ''} [${side.range}]`;
};

/** A run for people: its fields, then its results. */
export function runDetail(run: Run): string {
  const fields: [string, unknown][] = [
    ['id', run.id],
    ['name', run.name],
    ['status', run.status],
    ['container', run.container],
    ['environment', run.environment],
    ['evaluators', run.evaluators?.join(', ')],
    ['sample', sideText(run.sample)],
    ['ground truth', sideText(run.ground_truth)],
    ['baseline', sideText(run.baseline)],
    ['progress', progressText(run)],
    ['spend', usd(run.spend)],
    ['duration', seconds(durationMs(run))],
    ['created', run.created_at],
    ['finished', run.finished_at],
  ];
  if (run.error) fields.push(['error', `${run.error.code}: ${run.error.message}`]);
  if (run.metadata && Object.keys(run.metadata).length) fields.push(['metadata', run.metadata]);
  return `${detail(fields)}\n${resultsTable(run)}`;
}

const md = (text: string): string => text.replace(/\|/g, '\\|');

/** The results as a markdown table, for CI job summaries. `gates` are the checked thresholds' lines. */
export function markdownSummary(run: Run, gates: { passed: boolean; text: string }[]): string {
  const lines = [`### Evalgate run \`${run.id}\`: ${run.status}`, ''];
  const rows = resultRows(run);
  if (rows.length) {
    lines.push(`| ${HEAD.join(' | ')} |`, `|${HEAD.map((_, i) => (i >= 3 ? ' ---: ' : ' --- ')).join('|')}|`);
    for (const r of rows)
      lines.push(
        `| ${cells(r)
          .map((c) => md(String(c)))
          .join(' | ')} |`,
      );
  } else {
    lines.push('No results.');
  }
  lines.push(
    '',
    `Samples ${progressText(run)} · spend ${usd(run.spend)} · duration ${seconds(durationMs(run))}`,
  );
  if (run.error) lines.push('', `**Error** \`${run.error.code}\`: ${md(run.error.message)}`);
  if (gates.length) {
    lines.push('');
    for (const g of gates) lines.push(`- ${g.passed ? '✅' : '❌'} ${md(g.text)}`);
  }
  return `${lines.join('\n')}\n`;
}
