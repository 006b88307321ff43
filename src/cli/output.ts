import Table from 'cli-table3';
import type { PagePromise } from '../client/index.js';

/** Output of the API commands: JSON for scripts (`--json`: the API objects, nothing else), tables for people. */

export function print(text = ''): void {
  process.stdout.write(`${text}\n`);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

// No colours: tables read the same in a terminal, a CI log and a file.
const plain = { head: [] as string[], border: [] as string[] };

/** A table with a header row; cells are text (null and undefined print as "-"). */
export function table(head: string[], rows: unknown[][]): string {
  const t = new Table({ head, style: plain });
  for (const row of rows) t.push(row.map(cell));
  return t.toString();
}

/** A vertical table of field and value, for one object. */
export function detail(fields: [string, unknown][]): string {
  const t = new Table({ style: plain });
  for (const [name, value] of fields) t.push({ [name]: cell(value) });
  return t.toString();
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** A figure with 3 decimals ("-" when there is none). */
export function fixed(value: number | null | undefined, digits = 3): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(digits);
}

/** A signed figure: +0.120, -0.050. */
export function signed(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '-';
  return `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`;
}

export function usd(value: number | null | undefined): string {
  if (value === null || value === undefined) return '-';
  if (value === 0) return '$0';
  // One notation for every amount: plain decimals, small ones to 1e-10 USD (never 9.00e-7).
  const abs = Math.abs(value);
  return `$${abs >= 0.01 ? value.toFixed(4) : value.toFixed(10).replace(/0+$/, '')}`;
}

export function seconds(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  // A run that ends in milliseconds says so, rather than "0.0 s".
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return s < 3600
    ? `${Math.floor(s / 60)} min ${s % 60} s`
    : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** Any value as one short line of text: strings as they are, the rest as JSON, cut at `max` characters. */
export function snippet(value: unknown, max = 60): string {
  if (value === null || value === undefined) return '-';
  const text = (typeof value === 'string' ? value : JSON.stringify(value)).replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * The first `count` items of a list, fetched in pages of at most 100 (the server's largest page), and the
 * list's total.
 */
export async function firstItems<T>(
  list: (limit: number) => PagePromise<T>,
  count: number,
): Promise<{ items: T[]; total: number }> {
  const pages = list(Math.min(count, 100));
  const first = await pages;
  const items: T[] = [];
  for await (const page of first.pages()) {
    for (const item of page.data) {
      if (items.length >= count) break;
      items.push(item);
    }
    if (items.length >= count) break;
  }
  return { items, total: first.total };
}

/** The closing line under a listing: "3 of 12 runs". */
export function countLine(shown: number, total: number, noun: string): string {
  return `${shown} of ${total} ${noun}`;
}
