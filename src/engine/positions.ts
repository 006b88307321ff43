import type { Item, Range, SessionValues } from '../catalog/items.js';
import type { ChatRequest, CompletionResult } from '../llm/types.js';
import type { Conversation, ConversationIO } from './conversation-types.js';
import type { GenerateSide, Layout, ReadSide, RunPlan, SideName } from './plan.js';
import { isGenerated } from './plan.js';

/** Reads the items of a side read from stored items, in a range of its own list (its source kind's reader). */
export type ItemReader = (side: ReadSide, range: Range) => Promise<Item[]>;

/**
 * How a generate side's requests are built and its answers kept, given by its source kind: the engine
 * calls the model and stores the rows, and knows nothing of the request's shape.
 */
export interface Generation {
  /**
   * The chat request for one item of launch `launch` (an experiment's launches render different prompt
   * versions); throws an error whose `code` is `template_error` when the item does not fit.
   */
  request(item: Item, model: string, launch: number): ChatRequest;
  /** What a generation row keeps of the answer. */
  keep(result: CompletionResult): string;
  /** A kept answer as the generated item's `output`. */
  output(kept: string): unknown;
  /**
   * A multi-turn generation (simulated conversations): the item's whole conversation, its calls made
   * through `io` (replayed when recorded by an earlier attempt). When given, `request` is not used.
   */
  converse?(item: Item, model: string, io: ConversationIO): Promise<Conversation>;
  /**
   * The conversation a kept answer carries, for the evaluators (the generated item's `session`), and the
   * session it was stored as (then the item's id, so that its scores show on the session).
   */
  session?(kept: string): { id: string | null; values: SessionValues } | undefined;
}

/** The generation of a generate side (its source kind's). */
export type GenerationOf = (side: GenerateSide) => Generation;

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
  const readOnce = (side: ReadSide, range: Range) => {
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
      if (!side || isGenerated(side) || offset === null || side.pairing !== undefined) return;
      const start = offset + from;
      const end = Math.min(offset + to, side.range.end);
      if (end <= start) return;
      const items = await readOnce(side, { start, end });
      items.forEach((item, i) => {
        list[i] = item;
      });
    }),
  );
  const truth = plan.sides.ground_truth;
  if (!isGenerated(truth) && truth.pairing === 'session') {
    out.ground_truth = pairBySession(out.sample, await readOnce(truth, truth.range));
  }
  return out;
}

const named = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/**
 * The row of `rows` that names each sample item's session: by the session's id (a row's
 * `metadata.session_id`, as a session saved to a dataset carries), else by its key (a row's
 * `metadata.session_key`: the `X-Evalgate-Session` value or conversation id the session was named by).
 * The first row naming a session is its; a session no row names has none.
 */
export function pairBySession(samples: (Item | null)[], rows: Item[]): (Item | null)[] {
  const byId = new Map<string, Item>();
  const byKey = new Map<string, Item>();
  for (const row of rows) {
    const id = named(row.metadata.session_id);
    const key = named(row.metadata.session_key);
    if (id !== null && !byId.has(id)) byId.set(id, row);
    if (key !== null && !byKey.has(key)) byKey.set(key, row);
  }
  return samples.map((s) => {
    if (s === null) return null;
    const id = named(s.metadata.session_id);
    const key = named(s.metadata.session_key);
    return (id !== null ? byId.get(id) : undefined) ?? (key !== null ? byKey.get(key) : undefined) ?? null;
  });
}

export function isBlank(value: unknown): boolean {
  return value === null || value === undefined || (typeof value === 'string' && value.trim() === '');
}
