import type { RunComparison } from '../client/index.js';
import { fixed, signed, snippet, table } from './output.js';

/** `evalgate runs compare` for people: the paired differences per evaluator × launch, then the regressions. */

type Launch = RunComparison['comparisons'][number]['launch'];

const launchText = (l: Launch): string =>
  `${l.index}${l.model ? ` ${l.model}` : ''}${l.prompt ? ` ${l.prompt.name}@${l.prompt.version}` : ''}`;

const percent = (v: number | null): string => (v === null ? '-' : `${(v * 100).toFixed(1)}%`);
const points = (v: number | null): string =>
  v === null ? '-' : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)} pt`;

/**
 * The summary line the CLI and the dashboard share: better/worse of comparisons (by their interval) and
 * of matched positions (by their scores), each named; always baseline → run.
 */
export function compareSummary(c: RunComparison): string {
  const s = c.summary;
  return (
    `${s.comparisons} comparison(s): ${s.comparisons_better} better, ${s.comparisons_worse} worse, ` +
    `${s.inconclusive} inconclusive; ${s.matched} matched positions: ${s.positions_better} better, ` +
    `${s.ties} tied, ${s.positions_worse} worse; mean difference ${signed(s.mean_difference)}; ` +
    `pass rate change ${points(s.pass_rate_change)}`
  );
}

export function comparisonReport(c: RunComparison): string {
  const out: string[] = [];
  const partial = c.partial ? ` (partial: run ${c.run_status}, baseline ${c.baseline_status})` : '';
  const within = c.by === 'prompt_version' ? 'prompt versions' : 'models';
  out.push(
    c.by === 'run'
      ? `${c.run_id} against baseline ${c.baseline_id}${partial}`
      : `${c.run_id}: its ${within} compared (candidate vs reference launch)${partial}`,
  );
  out.push(
    table(
      ['evaluator', 'launch', 'matched', 'mean diff', '95% CI', 'verdict', 'W/T/L', 'pass rate', 'change'],
      c.comparisons.map((x) => [
        x.evaluator.name,
        c.by === 'run' &&
        x.launch.index === x.baseline_launch.index &&
        x.launch.model === x.baseline_launch.model
          ? launchText(x.launch)
          : `${launchText(x.launch)} vs ${launchText(x.baseline_launch)}`,
        x.matched,
        signed(x.mean_difference),
        x.confidence_interval
          ? `[${signed(x.confidence_interval.lower)}, ${signed(x.confidence_interval.upper)}]`
          : '-',
        x.verdict,
        `${x.wins}/${x.ties}/${x.losses}`,
        `${percent(x.pass_rate.baseline)} → ${percent(x.pass_rate.run)}`,
        points(x.pass_rate.change),
      ]),
    ),
  );
  out.push(compareSummary(c));
  for (const [side, list] of Object.entries(c.unmatched_evaluators)) {
    if (list.length) out.push(`Evaluators only in the ${side}: ${list.map((e) => e.name).join(', ')}`);
  }
  for (const [side, list] of Object.entries(c.unmatched_launches)) {
    if (list.length) out.push(`Launches only in the ${side}: ${list.map(launchText).join(', ')}`);
  }
  const regressions = c.comparisons.flatMap((x) => x.regressions.map((r) => ({ x, r })));
  if (regressions.length === 0) {
    out.push('No regressions.');
    return out.join('\n');
  }
  out.push('', 'Regressions (largest score drops first):');
  out.push(
    table(
      [
        'evaluator',
        'launch',
        'item',
        'position',
        'baseline',
        'run',
        'diff',
        'input',
        'baseline output',
        'run output',
      ],
      regressions.map(({ x, r }) => [
        x.evaluator.name,
        launchText(x.launch),
        r.item_id ?? '-',
        r.run.position,
        fixed(r.baseline.score),
        fixed(r.run.score),
        signed(r.difference),
        snippet(r.input, 30),
        snippet(r.baseline.output, 30),
        snippet(r.run.output, 30),
      ]),
    ),
  );
  return out.join('\n');
}
