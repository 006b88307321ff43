import type { Command } from 'commander';
import type { AnnotationItemView, AnnotationQueue, Evalgate, SubmitReview } from '../client/index.js';
import { ConflictError, EvalgateError } from '../client/index.js';
import type { Scale } from '../shared/scale.js';
import { clientFrom, describeError } from './client-context.js';
import { print } from './output.js';
import { type InputStream, ReviewInput } from './review-input.js';

/** `evalgate review QUEUE`: review a queue's items in a terminal, one key per answer. */

type RubricEvaluator = AnnotationQueue['rubric']['evaluators'][number];
type Score = SubmitReview['scores'][number];
/** What one prompt gives: a score, or what the reviewer chose instead. */
type Answer = Score | 'skip' | 'quit';

const MAX_SHOWN = 4000;

function block(title: string, value: unknown): void {
  if (value === null || value === undefined) return;
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  const cut = text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}… (${text.length} characters)` : text;
  print(`${title}:`);
  print(cut.replace(/^/gm, '  '));
}

function showItem(view: AnnotationItemView, remaining: number): void {
  const item = view.item;
  const where = item.kind === 'run_sample' ? `run ${item.run_id} position ${item.position}` : item.ref;
  print('');
  print(`── item ${item.id} (${item.kind}: ${where}) · ${remaining} left for you`);
  block('Input', view.content.input);
  block('Output', view.content.output);
  block('Expected', view.content.expected);
  block('Context', view.content.metadata);
  if (view.judge) showJudge(view);
}

function showJudge(view: AnnotationItemView): void {
  for (const j of view.judge ?? []) {
    const verdict = j.passed === null ? '' : j.passed ? ' pass' : ' fail';
    // A label grader's answer is its label; a score of 1 or 0 would only repeat pass or fail.
    const answer =
      j.status === 'error'
        ? `error (${j.error?.code ?? 'unknown'})`
        : j.label !== null
          ? `${j.label}${verdict ? ` (${verdict.trim()})` : ''}`
          : `${j.score ?? '-'}${verdict}`;
    print(`Judge ${j.evaluator}: ${answer}${j.reasoning ? ` (${j.reasoning})` : ''}`);
  }
}

/** The keys that answer on a scale, and what each one means. */
export function keysOf(scale: Scale): {
  hint: string;
  answer: (key: string) => Omit<Score, 'evaluator'> | null;
} {
  switch (scale.type) {
    case 'pass_fail':
      return {
        hint: 'p pass · f fail',
        answer: (key) => (key === 'p' ? { passed: true } : key === 'f' ? { passed: false } : null),
      };
    case 'labels': {
      const labels = scale.labels.slice(0, 9);
      return {
        hint: labels.map((label, i) => `${i + 1} ${label}`).join(' · '),
        answer: (key) => {
          const label = /^[1-9]$/.test(key) ? labels[Number(key) - 1] : scale.labels.find((l) => l === key);
          return label === undefined ? null : { label };
        },
      };
    }
    case 'ordinal':
      return {
        hint: `${scale.min}..${scale.max}`,
        answer: (key) => {
          const n = Number(key);
          return /^-?\d+$/.test(key) && n >= scale.min && n <= scale.max ? { score: n } : null;
        },
      };
    case 'continuous':
      return {
        hint: `a number ${scale.min ?? '-∞'}..${scale.max ?? '∞'}, then Enter`,
        answer: (key) => {
          const n = Number(key);
          if (key.trim() === '' || !Number.isFinite(n)) return null;
          if ((scale.min !== null && n < scale.min) || (scale.max !== null && n > scale.max)) return null;
          return { score: n };
        },
      };
  }
}

/** Whether a scale is answered with one key press (else a line, ended with Enter). */
function oneKey(scale: Scale): boolean {
  if (scale.type === 'ordinal') return scale.min >= 0 && scale.max <= 9;
  if (scale.type === 'labels') return true;
  return scale.type === 'pass_fail';
}

async function ask(input: ReviewInput, evaluator: RubricEvaluator): Promise<Answer> {
  const scale = evaluator.scale as Scale;
  const { hint, answer } = keysOf(scale);
  const line = !oneKey(scale);
  for (;;) {
    process.stdout.write(`${evaluator.name} [${hint} · s skip · q quit]: `);
    const key = line && input.raw ? await input.line() : await input.key();
    if (key === null) return 'quit';
    if (input.raw && !line) process.stdout.write(`${key}\n`);
    if (key === 'q') return 'quit';
    if (key === 's') return 'skip';
    const given = answer(key);
    if (given) return { evaluator: evaluator.id, ...given };
    print(`  "${key}" is not on the scale (${hint})`);
  }
}

interface Tally {
  reviewed: number;
  skipped: number;
}

/** Claims, shows and scores items until none is left or the reviewer quits. */
async function reviewLoop(
  client: Evalgate,
  queueRef: string,
  input: ReviewInput,
  hideJudge: boolean,
): Promise<Tally> {
  const tally = { reviewed: 0, skipped: 0 };
  const queue = await client.queues.get(queueRef);
  print(`Queue ${queue.name}: ${queue.counts.open} open of ${queue.counts.total}.`);
  for (;;) {
    const claim = await client.queues.claim(queue.id, { hideJudge });
    if (claim.item === null) {
      print('Nothing left to review in this queue.');
      return tally;
    }
    const view = claim.item;
    showItem(view, claim.remaining);
    const scores: Score[] = [];
    let choice: 'skip' | 'quit' | null = null;
    for (const evaluator of queue.rubric.evaluators) {
      const answer = await ask(input, evaluator);
      if (answer === 'skip' || answer === 'quit') {
        choice = answer;
        break;
      }
      scores.push(answer);
    }
    if (choice === 'quit') {
      print(
        `Stopped. Your claim on ${view.item.id} is kept until ${view.claim?.expires_at ?? 'it expires'}.`,
      );
      return tally;
    }
    if (choice === 'skip') {
      await client.queues.items.skip(queue.id, view.item.id);
      tally.skipped += 1;
      print('Skipped.');
      continue;
    }
    let comment: string | null = null;
    if (queue.rubric.comment) {
      process.stdout.write('Comment (Enter for none): ');
      const text = await input.line();
      if (text === null) {
        print(`Stopped. Your claim on ${view.item.id} is kept until it expires.`);
        return tally;
      }
      comment = text.trim() === '' ? null : text.trim();
    }
    try {
      await client.queues.items.review(queue.id, view.item.id, { scores, comment });
      tally.reviewed += 1;
      print('Saved.');
      if (hideJudge) showJudge(await client.queues.items.get(queue.id, view.item.id));
    } catch (err) {
      if (!(err instanceof EvalgateError)) throw err;
      print(`Not saved: ${describeError(err).lines.join('\n')}`);
      // Someone else holds it: go on with the next item; anything else: ask again.
      if (err instanceof ConflictError) continue;
    }
  }
}

export function registerReviewCommand(program: Command): void {
  program
    .command('review <queue>')
    .description(
      "review a queue's items in the terminal: number keys or p/f to score, s to skip, q to quit (piped: one answer a line)",
    )
    .option('--hide-judge', "show the judges' scores only after yours (blind review)")
    .action(async (queueRef: string, opts: { hideJudge?: boolean }, cmd: Command) => {
      const client = clientFrom(cmd);
      const input = new ReviewInput(process.stdin as InputStream, (text) => process.stdout.write(text));
      try {
        const tally = await reviewLoop(client, queueRef, input, opts.hideJudge === true);
        print(`Reviewed ${tally.reviewed}, skipped ${tally.skipped}.`);
      } finally {
        input.close();
      }
    });
}
