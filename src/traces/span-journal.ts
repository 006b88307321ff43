import type { SpanSpool } from '../capture/span-spool.js';
import { spanFacts } from './mapping/index.js';
import type { IngestedSpan, PendingSpan } from './span.js';
import type { SpanJournal, SpanWriter } from './writer.js';

/*
 * The trace store writer's spans as lines of the span spool (`capture/span-spool.ts`): what the writer takes
 * is written there before the export is answered, and what a process gone before left is taken again at
 * the next start.
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

/** A spooled line as the writer takes it again; null for one that cannot be read (torn by a kill). */
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

/** The span writer's journal in `spool`: each part it takes written as one append. */
export function spoolJournal(spool: SpanSpool): SpanJournal<PendingSpan> {
  return {
    record(items, from, to, taken) {
      let text = '';
      for (let i = from; i < to; i++) text += lineOf(items[i]!);
      return spool.record(text, taken);
    },
    settled: (done) => spool.settled(done),
  };
}

/**
 * Takes again the spans that processes gone before (killed, or stopped with the database away) had
 * spooled: each file's spans handed to `writer` (spooled again here as they are taken), then the file
 * deleted; a file whose spans find no room within `waitMs` is left for the next start, and so are the
 * files after it. A span already stored is skipped by the store. Returns how many spans were taken.
 */
export async function replaySpans(
  spool: SpanSpool | null,
  writer: SpanWriter<PendingSpan>,
  waitMs: number,
  warn?: (message: string) => void,
): Promise<number> {
  if (!spool) return 0;
  let taken = 0;
  let left = 0;
  for (const file of spool.claimOrphans()) {
    // Once one file found no room, the others are not waited for (the start would wait once per file).
    if (left > 0) {
      spool.giveBack(file);
      left++;
      continue;
    }
    const spans: PendingSpan[] = [];
    for (const line of spool.read(file)) {
      const p = pendingOf(line);
      if (p) spans.push(p);
    }
    if (await writer.writeAll(spans, waitMs)) {
      spool.replayed(file);
      taken += spans.length;
    } else {
      spool.giveBack(file);
      left++;
    }
  }
  if (taken > 0)
    warn?.(`Spans spooled by a stopped process: ${taken} taken again (those not yet stored are stored now)`);
  if (left > 0)
    warn?.(
      `Spans spooled by a stopped process: ${left} file(s) left in ${spool.dir} for the next start (no room in the trace store)`,
    );
  return taken;
}

/**
 * Replays spooled spans before serving (`start`, resolving with how many were taken) and then every
 * `everyMs` while the process runs: files left at the start for want of room, and files of processes
 * gone since (a worker killed and forked again), are taken without waiting for another start. One replay
 * at a time; `stop` ends the looking and waits for a replay under way (within its wait), which gives
 * back what it cannot take.
 */
export function spanReplayer(
  spool: SpanSpool | null,
  writer: SpanWriter<PendingSpan>,
  waitMs: number,
  everyMs: number,
  warn?: (message: string) => void,
): { start(): Promise<number>; stop(): Promise<void> } {
  let replaying: Promise<number> | null = null;
  let timer: NodeJS.Timeout | null = null;
  const once = (): Promise<number> =>
    (replaying ??= replaySpans(spool, writer, waitMs, warn).finally(() => {
      replaying = null;
    }));
  return {
    async start() {
      const taken = await once();
      if (spool && !timer) {
        timer = setInterval(() => {
          once().catch((err: Error) => warn?.(`Spooled spans not taken again: ${err.message}`));
        }, everyMs);
        timer.unref();
      }
      return taken;
    },
    async stop() {
      if (timer) clearInterval(timer);
      await replaying?.catch(() => 0);
    },
  };
}
