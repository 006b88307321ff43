import type { Command } from 'commander';
import type { Agreement } from '../client/index.js';
import { clientFrom, wholeNumber } from './client-context.js';
import { fixed, print, printJson, table } from './output.js';

/** `evalgate evaluators agreement EVALUATOR [--compare EVALUATOR2]`: judge–human agreement, side by side. */

type Figures = Agreement['groups'][number];
type Interval = number[] | null;
type FigureName = keyof Figures['intervals'];

const FIGURES: [FigureName, string][] = [
  ['percent_agreement', '% agreement'],
  ['kappa', 'κ'],
  ['weighted_kappa', 'weighted κ'],
  ['pearson', 'Pearson'],
  ['spearman', 'Spearman'],
  ['mae', 'MAE'],
];

function interval(value: Interval): string {
  return value ? `[${fixed(value[0])}, ${fixed(value[1])}]` : '-';
}

interface Column {
  head: string;
  figures: Figures | null;
}

function columnsOf(agreement: Pick<Agreement, 'evaluator' | 'groups'>): Column[] {
  if (agreement.groups.length === 0) return [{ head: agreement.evaluator.name, figures: null }];
  return agreement.groups.map((g) => ({
    head: `${agreement.evaluator.name}\nprompt ${g.prompt_hash ?? '(unknown)'}`,
    figures: g,
  }));
}

/** One column per evaluator and prompt hash; a row per figure, its 95 % interval below it. */
export function agreementTable(agreement: Agreement): string {
  const columns = [...columnsOf(agreement), ...(agreement.compare ? columnsOf(agreement.compare) : [])];
  const rows: unknown[][] = [['n', ...columns.map((c) => c.figures?.n ?? 0)]];
  for (const [name, label] of FIGURES) {
    if (columns.every((c) => c.figures?.[name] === null || c.figures === null)) continue;
    rows.push([label, ...columns.map((c) => fixed(c.figures?.[name]))]);
    rows.push(['  95 % interval', ...columns.map((c) => interval(c.figures?.intervals[name] ?? null))]);
  }
  return table(['', ...columns.map((c) => c.head)], rows);
}

export function registerAgreementCommand(program: Command): void {
  const evaluators = program.commands.find((c) => c.name() === 'evaluators');
  if (!evaluators) throw new Error('the evaluators command is registered first');
  evaluators
    .command('agreement <evaluator>')
    .description(
      "the judge's agreement with human reviews (κ, % agreement, correlations, MAE, 95 % intervals, n), per prompt hash",
    )
    .option('--compare <evaluator2>', "a second evaluator's agreement, side by side")
    .option('--queue <queue>', "only this queue's reviews")
    .option('--run <run>', 'a run over reviewed items (an exported dataset): each row against its expected')
    .option('--seed <n>', 'bootstrap seed', wholeNumber('--seed', 0))
    .option('--resamples <n>', 'bootstrap resamples (100..10000)', wholeNumber('--resamples', 100))
    .option('--json', 'print the agreement as JSON')
    .action(
      async (
        ref: string,
        opts: {
          compare?: string;
          queue?: string;
          run?: string;
          seed?: number;
          resamples?: number;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const agreement = await clientFrom(cmd).evaluators.agreement(ref, {
          compare: opts.compare,
          queue: opts.queue,
          run: opts.run,
          seed: opts.seed,
          resamples: opts.resamples,
        });
        if (opts.json) return printJson(agreement);
        const over = agreement.run_id
          ? `run ${agreement.run_id}`
          : agreement.queue_id
            ? `queue ${agreement.queue_id}`
            : 'all reviews';
        print(`Agreement with human reviews over ${over}:`);
        print(agreementTable(agreement));
        const ia = agreement.inter_annotator;
        if (ia && ia.n > 0) {
          print(
            `Between reviewers: n ${ia.n}, % agreement ${fixed(ia.percent_agreement)}, κ ${fixed(ia.kappa)}`,
          );
        }
      },
    );
}
