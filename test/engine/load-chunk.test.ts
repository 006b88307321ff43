// Database-independent: loading a chunk's items goes through the reader handed in (an in-memory one here).
import { describe, expect, it } from 'vitest';
import type { Item, Range } from '../../src/catalog/items.js';
import type { Layout, ReadSide, RunPlan } from '../../src/engine/plan.js';
import { isBlank, loadChunk } from '../../src/engine/positions.js';

const item = (id: string): Item => ({ id, input: id, output: null, expected: null, metadata: {}, raw: null });

/** A reader over named in-memory lists, recording every read it is asked for. */
function memoryReader(lists: Record<string, Item[]>) {
  const reads: string[] = [];
  const read = async (side: ReadSide, range: Range) => {
    reads.push(`${side.ref}[${range.start}:${range.end}]`);
    return (lists[side.ref] ?? []).slice(range.start, range.end);
  };
  return { read, reads };
}

const readSide = (ref: string, start: number, end: number): ReadSide => ({
  type: 'dataset',
  ref,
  models: [],
  range: { start, end },
});

function plan(sides: RunPlan['sides']): RunPlan {
  return {
    projectId: 'p',
    containerId: 'c',
    sides,
    generated: null,
    launches: [],
    evaluators: [],
  };
}

const list = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => item(`${prefix}${i}`));

describe('loadChunk', () => {
  it("reads each side's items at its own offset, aligned by position", async () => {
    const { read, reads } = memoryReader({ a: list('a', 10), b: list('b', 10) });
    const p = plan({ sample: readSide('a', 2, 10), ground_truth: readSide('b', 5, 10), baseline: null });
    const layout: Layout = {
      positions: 5,
      expected: 5,
      offsets: { sample: 2, ground_truth: 5, baseline: null },
    };
    const chunk = await loadChunk(p, layout, read, 1, 4);
    expect(chunk.sample.map((i) => i?.id)).toEqual(['a3', 'a4', 'a5']);
    expect(chunk.ground_truth.map((i) => i?.id)).toEqual(['b6', 'b7', 'b8']);
    expect(chunk.baseline).toEqual([null, null, null]);
    expect(reads.sort()).toEqual(['a[3:6]', 'b[6:9]']);
  });

  it('reads a source and slice shared by two sides once', async () => {
    const { read, reads } = memoryReader({ d: list('d', 6) });
    const side = readSide('d', 0, 6);
    const p = plan({ sample: side, ground_truth: side, baseline: null });
    const layout: Layout = {
      positions: 6,
      expected: 6,
      offsets: { sample: 0, ground_truth: 0, baseline: null },
    };
    const chunk = await loadChunk(p, layout, read, 0, 6);
    expect(reads).toEqual(['d[0:6]']);
    expect(chunk.sample.map((i) => i?.id)).toEqual(chunk.ground_truth.map((i) => i?.id));
  });

  it("leaves positions past a side's range, and generate sides, empty without reading them", async () => {
    const { read, reads } = memoryReader({ a: list('a', 10) });
    const p = plan({
      sample: readSide('a', 0, 3),
      ground_truth: { type: 'generate', ref: null, models: ['m'], range: { start: 0, end: 10 } },
      baseline: null,
    });
    const layout: Layout = {
      positions: 5,
      expected: 5,
      offsets: { sample: 0, ground_truth: null, baseline: null },
    };
    const chunk = await loadChunk(p, layout, read, 2, 5);
    expect(chunk.sample.map((i) => i?.id ?? null)).toEqual(['a2', null, null]);
    expect(chunk.ground_truth).toEqual([null, null, null]);
    expect(reads).toEqual(['a[2:3]']);
    const past = await loadChunk(p, layout, read, 3, 5);
    expect(past.sample).toEqual([null, null]);
    expect(reads).toEqual(['a[2:3]']);
  });
});

describe('isBlank', () => {
  it('is true of null, undefined and whitespace-only text only', () => {
    for (const v of [null, undefined, '', '  \n\t']) expect(isBlank(v)).toBe(true);
    for (const v of ['x', 0, false, [], {}]) expect(isBlank(v)).toBe(false);
  });
});
