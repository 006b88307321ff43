import { setImmediate as yieldLoop } from 'node:timers/promises';
import type { SpanLane } from '../capture/span-lane.js';
import { ApiError } from '../shared/errors.js';
import type { OtlpTraceRequest } from './otlp/proto.js';
import { attributesOf, type PendingSpan, toIngested } from './span.js';

/** The resource attribute naming the container of a resource's spans (it wins over the header). */
export const CONTAINER_ATTRIBUTE = 'evalgate.container';

/** Spans converted between two hand-overs to the span lane (and two turns of the event loop). */
const INGEST_CHUNK = 250;

export interface IngestResult {
  accepted: number;
  rejected: number;
  /** Why spans were rejected (the first few reasons). */
  errors: string[];
}

/**
 * An export request refused before any of its spans was taken: the spans of other requests not stored yet
 * (`backlog`) and its own would pass the trace store's bound. The exporter sends it again later (429).
 */
export class TraceStoreBusyError extends Error {
  override name = 'TraceStoreBusyError';
  constructor(
    readonly backlog: number,
    readonly spans: number,
  ) {
    super(
      `The trace store is busy: ${backlog} spans of other exports are not stored yet, and this export's ${spans} would pass its bound; nothing of it was taken`,
    );
  }
}

/** The spans of an export request. */
export function spansOf(request: OtlpTraceRequest): number {
  let n = 0;
  for (const rs of request.resourceSpans ?? [])
    for (const ss of rs.scopeSpans ?? []) n += ss.spans?.length ?? 0;
  return n;
}

/** What taking a request's spans needs: the lane, the container lookup, the wait for room, the client's signal. */
export interface TakeContext {
  lane: Pick<SpanLane<PendingSpan>, 'writeAll'>;
  container(projectId: string, ref: string | null): Promise<string>;
  waitMs: number;
  signal?: AbortSignal;
}

/**
 * Converts an export request's spans and hands them to the lane in parts of INGEST_CHUNK (a turn of the
 * event loop between parts), waiting for room as the lane requires; `settled(n)` is told of every span
 * handed over or rejected. Throws 404 for an unknown header container, 503 when the lane takes no more.
 */
export async function takeSpans(
  ctx: TakeContext,
  projectId: string,
  headerContainer: string | null,
  request: OtlpTraceRequest,
  settled: (n: number) => void,
): Promise<IngestResult> {
  const result: IngestResult = { accepted: 0, rejected: 0, errors: [] };
  const reject = (n: number, why: string) => {
    settled(n);
    result.rejected += n;
    if (result.errors.length < 5 && !result.errors.includes(why)) result.errors.push(why);
  };
  let pending: PendingSpan[] = [];
  let converted = 0;
  // Hands what is converted to the lane, waiting for room, and lets other requests run meanwhile.
  const handOver = async (last: boolean) => {
    if (pending.length > 0) {
      if (!(await ctx.lane.writeAll(pending, ctx.waitMs, ctx.signal))) {
        throw new ApiError('upstream_unavailable', 'The trace store is full; retry the export shortly', {
          reason: 'trace_store_full',
        });
      }
      settled(pending.length);
      result.accepted += pending.length;
      pending = [];
    }
    if (!last) await yieldLoop();
  };
  // The header's container must exist (404 otherwise, as on the gateway); resolved once per request.
  const fallback = headerContainer === null ? null : await ctx.container(projectId, headerContainer);
  for (const rs of request.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    const spans = (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({ s, scope: ss.scope })),
    );
    const named = resource[CONTAINER_ATTRIBUTE];
    let containerId: string | null = fallback;
    if (typeof named === 'string' && named !== '') {
      try {
        containerId = await ctx.container(projectId, named);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        reject(spans.length, `container '${named}' (resource attribute ${CONTAINER_ATTRIBUTE}) not found`);
        continue;
      }
    } else if (containerId === null) {
      containerId = await ctx.container(projectId, null);
    }
    for (const { s, scope } of spans) {
      const span = toIngested(s, resource, scope);
      if (typeof span === 'string') reject(1, span);
      else pending.push({ projectId, containerId, span });
      if (++converted % INGEST_CHUNK === 0) await handOver(false);
    }
  }
  await handOver(true);
  return result;
}
