import { setImmediate as yieldLoop } from 'node:timers/promises';
import v8 from 'node:v8';
import type { OtlpRequests } from './decode.js';
import type { OtlpSignal } from './limits.js';

/*
 * A decoded export request handed from a decode thread to the event loop in serialized parts, each of at
 * most PART_ITEMS spans or log records: the thread serializes them, and the event loop deserializes one
 * part per turn. Handed over whole, a request at the span limit (100,000 spans) costs the event loop one
 * deserialization of about 150 ms, during which no other request (a gateway call) is answered; in parts,
 * each costs a few milliseconds.
 *
 * A part is a request of its own: the resource and scope of its items, with only them. Put back
 * together, a resource or scope split over several parts appears once per part, each with its share of
 * the items, which reads as the same spans of the same resource and scope.
 */

/** Spans or log records per part: a few milliseconds to deserialize. */
export const PART_ITEMS = 500;

/** The three levels of a request of each signal: resources, their scopes, the scopes' items. */
const LEVELS = {
  spans: ['resourceSpans', 'scopeSpans', 'spans'],
  logs: ['resourceLogs', 'scopeLogs', 'logRecords'],
} as const;

type Level = Record<string, unknown>;

const listOf = (value: Level, key: string): Level[] => {
  const list = value[key];
  return Array.isArray(list) ? (list as Level[]) : [];
};

/** The request's parts, each a request of at most `max` items (a request without items: one part). */
export function splitRequest(
  signal: OtlpSignal,
  request: OtlpRequests[OtlpSignal],
  max = PART_ITEMS,
): Level[] {
  const [resources, scopes, items] = LEVELS[signal];
  const parts: Level[] = [];
  let part: Level[] = [];
  let count = 0;
  const close = () => {
    parts.push({ [resources]: part });
    part = [];
    count = 0;
  };
  for (const resource of listOf(request as unknown as Level, resources)) {
    // A resource without scopes is kept as it is (it holds nothing to split).
    if (listOf(resource, scopes).length === 0) part.push(resource);
    for (const scope of listOf(resource, scopes)) {
      const all = listOf(scope, items);
      let at = 0;
      do {
        const take = all.slice(at, at + (max - count));
        part.push({ ...resource, [scopes]: [{ ...scope, [items]: take }] });
        count += take.length;
        at += take.length;
        if (count >= max) close();
      } while (at < all.length);
    }
  }
  if (part.length > 0 || parts.length === 0) close();
  return parts;
}

/** The parts serialized, each into memory of its own (so that it can be transferred, not copied). */
export function serializeParts(parts: Level[]): Uint8Array[] {
  return parts.map((part) => {
    const bytes = v8.serialize(part);
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    return whole ? bytes : new Uint8Array(bytes);
  });
}

/** The request put back together from its serialized parts, one part per turn of the event loop. */
export async function assembleRequest<S extends OtlpSignal>(
  signal: S,
  parts: readonly Uint8Array[],
): Promise<OtlpRequests[S]> {
  const [resources] = LEVELS[signal];
  const all: Level[] = [];
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) await yieldLoop();
    const part = v8.deserialize(parts[i] as Uint8Array) as Level;
    for (const r of listOf(part, resources)) all.push(r);
  }
  return { [resources]: all } as unknown as OtlpRequests[S];
}
