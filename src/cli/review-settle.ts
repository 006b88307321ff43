import fs from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Command } from 'commander';
import type { SettleItem } from '../client/index.js';
import { clientFrom, numberOption, usage } from './client-context.js';
import { print, printJson } from './output.js';

/** `evalgate queues settle|scores`: settling reviewers' disagreements and exporting every human score. */

interface SettleFlags {
  evaluator?: string;
  item?: string;
  majority?: boolean;
  review?: string;
  score?: string;
  pass?: boolean;
  fail?: boolean;
  label?: string;
  comment?: string;
  json?: boolean;
}

/** The body of one item's settlement from the flags: exactly one of a majority, a review or a value. */
export function settleBodyOf(flags: SettleFlags): SettleItem {
  const base = {
    ...(flags.evaluator === undefined ? {} : { evaluator: flags.evaluator }),
    ...(flags.comment === undefined ? {} : { comment: flags.comment }),
  };
  const values = [flags.score !== undefined, flags.pass || flags.fail, flags.label !== undefined];
  const chosen = [flags.majority === true, flags.review !== undefined, values.some(Boolean)];
  if (
    chosen.filter(Boolean).length !== 1 ||
    values.filter(Boolean).length > 1 ||
    (flags.pass && flags.fail)
  ) {
    throw usage(
      'give one of --majority, --review <id>, or a value (--score <n>, --pass, --fail or --label <l>)',
    );
  }
  if (flags.majority) return { ...base, method: 'majority' };
  if (flags.review !== undefined) return { ...base, method: 'review', review: flags.review };
  if (flags.score !== undefined)
    return { ...base, method: 'value', score: numberOption('--score', flags.score) };
  if (flags.label !== undefined) return { ...base, method: 'value', label: flags.label };
  return { ...base, method: 'value', passed: flags.pass === true };
}

export function registerSettleCommands(queues: Command): void {
  queues
    .command('settle <queue>')
    .description(
      "settle reviewers' disagreements (needs review:admin): every open one by majority, or one item's with --item",
    )
    .option('--evaluator <evaluator>', "the rubric evaluator (the rubric's first)")
    .option('--item <item>', 'settle this item only')
    .option('--majority', 'the answer most reviewers gave (ties stay open)')
    .option('--review <review>', "with --item: this review's answer")
    .option('--score <n>', 'with --item: this score')
    .option('--pass', 'with --item: pass')
    .option('--fail', 'with --item: fail')
    .option('--label <label>', 'with --item: this label')
    .option('--comment <text>', 'with --item: why')
    .option('--json', 'print the result as JSON')
    .action(async (ref: string, opts: SettleFlags, cmd: Command) => {
      const client = clientFrom(cmd);
      if (opts.item === undefined) {
        if (!opts.majority) throw usage('without --item, settle takes --majority (every open disagreement)');
        const r = await client.queues.settle(ref, {
          method: 'majority',
          ...(opts.evaluator === undefined ? {} : { evaluator: opts.evaluator }),
        });
        if (opts.json) return printJson(r);
        print(
          `Settled ${r.settled} disagreements by majority; ${r.ties} ties left open (settle each with --item)`,
        );
        return;
      }
      const s = await client.queues.items.settle(ref, opts.item, settleBodyOf(opts));
      if (opts.json) return printJson(s);
      const answer = s.label ?? (s.passed === null ? s.score : s.passed ? 'pass' : 'fail');
      print(`Settled item ${s.item_id} on ${s.evaluator}: ${answer} (${s.method})`);
    });

  queues
    .command('scores <queue>')
    .description(
      "export every human score: each reviewer's answer and comment, and the settled answer (JSON lines or CSV)",
    )
    .option('--format <format>', 'jsonl (one item and evaluator a line) or csv (one review a row)', 'jsonl')
    .option('--evaluator <evaluator>', 'one rubric evaluator (all by default)')
    .option('--out <file>', 'write to this file (standard output by default)')
    .action(async (ref: string, opts: { format: string; evaluator?: string; out?: string }, cmd: Command) => {
      if (opts.format !== 'jsonl' && opts.format !== 'csv') throw usage('--format must be jsonl or csv');
      const res = await clientFrom(cmd).queues.scores(ref, {
        format: opts.format,
        ...(opts.evaluator === undefined ? {} : { evaluator: opts.evaluator }),
      });
      if (!res.body) return;
      const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
      if (opts.out === undefined) {
        // Standard output stays open for what follows: the body is written, not piped to its end.
        for await (const chunk of body) process.stdout.write(chunk as Buffer);
        return;
      }
      await pipeline(body, fs.createWriteStream(opts.out));
    });
}
