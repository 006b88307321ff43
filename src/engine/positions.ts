import type { Item, Range } from '../catalog/items.js';
import type { ChatMessage } from '../inference/types.js';
import type { Layout, PlannedSide, RunPlan, SideName } from './plan.js';

/** Reads the items of a non-generate side (dataset rows or container task logs) in a range of its list. */
export type ItemReader = (side: PlannedSide, range: Range) => Promise<Item[]>;

/** The items of a chunk of positions, per side, indexed by position - from. */
export type ChunkItems = Record<SideName, (Item | null)[]>;

/** Loads the non-generate sides' items for positions [from, to) of the layout. */
export async function loadChunk(
  plan: RunPlan,
  layout: Layout,
  read: ItemReader,
  from: number,
  to: number,
): Promise<ChunkItems> {
  const out: ChunkItems = { sample: [], ground_truth: [], baseline: [] };
  const names: SideName[] = ['sample', 'ground_truth', 'baseline'];
  // Sides over the same source and slice (a dataset scored against its own expected values) read it once.
  const reads = new Map<string, Promise<Item[]>>();
  const readOnce = (side: PlannedSide, range: Range) => {
    const key = `${side.type}:${side.ref}:${range.start}:${range.end}`;
    let items = reads.get(key);
    if (!items) {
      items = read(side, range);
      reads.set(key, items);
    }
    return items;
  };
  await Promise.all(
    names.map(async (name) => {
      const side = name === 'baseline' ? plan.sides.baseline : plan.sides[name];
      const offset = layout.offsets[name];
      const list: (Item | null)[] = new Array(to - from).fill(null);
      out[name] = list;
      if (!side || side.type === 'generate' || offset === null) return;
      const start = offset + from;
      const end = Math.min(offset + to, side.range.end);
      if (end <= start) return;
      const items = await readOnce(side, { start, end });
      items.forEach((item, i) => {
        list[i] = item;
      });
    }),
  );
  return out;
}

/** An item's `input` as chat messages for generation. */
export function toMessages(input: unknown): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  if (Array.isArray(input) && input.every((m) => m && typeof m === 'object' && 'role' in m))
    return input as ChatMessage[];
  if (input && typeof input === 'object' && Array.isArray((input as { messages?: unknown }).messages)) {
    return (input as { messages: ChatMessage[] }).messages;
  }
  return [{ role: 'user', content: input === undefined || input === null ? '' : JSON.stringify(input) }];
}

export function isBlank(value: unknown): boolean {
  return value === null || value === undefined || (typeof value === 'string' && value.trim() === '');
}
