import type { CreateRun, DataSource, Evalgate } from '../client/index.js';
import { usage } from './client-context.js';

/** The contract's range for a side given without one. */
export const DEFAULT_RANGE = '0:100';

type SideName = 'sample' | 'ground_truth' | 'baseline';
const SIDES: SideName[] = ['sample', 'ground_truth', 'baseline'];

/** How many rows a dataset or container side holds (a generate side has no rows of its own). */
async function rowsOf(client: Evalgate, side: DataSource): Promise<number | null> {
  // A side names the resource it reads (`dataset` or `container`); a generate side names models.
  if (side.dataset) return (await client.datasets.get(side.dataset)).item_count;
  if (side.container) {
    return (await client.logs.list(side.container, { limit: 1 })).total;
  }
  return null;
}

/** The rows of every side that has them, looked up once. */
export async function sideRows(client: Evalgate, body: CreateRun): Promise<Map<SideName, number>> {
  const rows = new Map<SideName, number>();
  for (const name of SIDES) {
    const side = body[name];
    if (!side) continue;
    const n = await rowsOf(client, side);
    if (n !== null) rows.set(name, n);
  }
  return rows;
}

/** `--all`: every dataset or container side over all of its rows (a generate side follows its source). */
export function coverAll(body: CreateRun, rows: Map<SideName, number>): CreateRun {
  const out: CreateRun = { ...body };
  for (const name of SIDES) {
    const side = body[name];
    const n = rows.get(name);
    if (side && n !== undefined) out[name] = { ...side, range: `0:${n}` };
  }
  const source = rows.get('ground_truth') ?? rows.get('sample');
  for (const name of SIDES) {
    const side = out[name];
    if (side?.models && source !== undefined) out[name] = { ...side, range: `0:${source}` };
  }
  return out;
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * One line per side whose range leaves rows out: `sample: evaluating 100 of 10,000 rows (default range
 * 0:100); --range 0:10000 or --all`.
 */
export function rangeNotes(body: CreateRun, rows: Map<SideName, number>): string[] {
  const notes: string[] = [];
  for (const name of SIDES) {
    const side = body[name];
    const n = rows.get(name);
    if (!side || n === undefined) continue;
    const range = side.range ?? DEFAULT_RANGE;
    const [start, end] = range.split(':').map(Number) as [number, number];
    const taken = Math.max(0, Math.min(end, n) - Math.min(start, n));
    if (taken >= n) continue;
    const how = side.range === undefined ? `default range ${DEFAULT_RANGE}` : `range ${range}`;
    notes.push(
      `${name.replace('_', ' ')}: evaluating ${count(taken)} of ${count(n)} rows (${how}); --range 0:${n} or --all`,
    );
  }
  return notes;
}

/** Refuses `--all` with `--range`: they say different things. */
export function checkAll(flags: { all?: boolean; range?: string }): void {
  if (flags.all && flags.range !== undefined) throw usage('give --range or --all, not both');
}
