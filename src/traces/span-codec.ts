import type { SpanCodec } from '../capture/span-replay.js';
import { spanFacts } from './mapping/index.js';
import type { IngestedSpan, PendingSpan } from './span.js';

/*
 * Ingested spans as lines of the span spool (`capture/span-spool.ts`), the codec the capture processor's
 * span lane is given (`capture/span-replay.ts`): what the lane takes is written there before the export
 * is answered, and what a process gone before left is taken again at the next start.
 *
 * A line is `{"p":<project>,"c":<container|null>,"s":<span>}`, the span as converted from OTLP without
 * what its conventions say (`facts`): that is derived again from its name, attributes and events when it
 * is read, as it was when it arrived.
 */

type SpooledSpan = Omit<IngestedSpan, 'facts'>;

function lineOf(p: PendingSpan): string {
  const s = p.span;
  const span: SpooledSpan = {
    traceId: s.traceId,
    spanId: s.spanId,
    parentSpanId: s.parentSpanId,
    name: s.name,
    kind: s.kind,
    startedAt: s.startedAt,
    endedAt: s.endedAt,
    durationMs: s.durationMs,
    status: s.status,
    attributes: s.attributes,
    events: s.events,
    resource: s.resource,
    scope: s.scope,
  };
  return `{"p":${JSON.stringify(p.projectId)},"c":${JSON.stringify(p.containerId)},"s":${JSON.stringify(span)}}\n`;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A spooled line as the span lane takes it again; null for one that cannot be read (torn by a kill). */
export function pendingOf(line: string): PendingSpan | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return null;
  }
  if (!isObject(parsed) || typeof parsed.p !== 'string' || !isObject(parsed.s)) return null;
  const s = parsed.s as unknown as SpooledSpan;
  if (typeof s.traceId !== 'string' || typeof s.spanId !== 'string' || !isObject(s.attributes)) return null;
  if (!Array.isArray(s.events) || !isObject(s.resource)) return null;
  const containerId = typeof parsed.c === 'string' ? parsed.c : null;
  const facts = spanFacts({ spanId: s.spanId, name: s.name, attributes: s.attributes, events: s.events });
  return { projectId: parsed.p, containerId, span: { ...s, facts } };
}

/** The span lane's codec for ingested spans. */
export const spanCodec: SpanCodec<PendingSpan> = { encode: lineOf, decode: pendingOf };
