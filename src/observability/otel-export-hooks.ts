import type { Kysely } from 'kysely';
import type { CaptureExporter } from '../capture/export-queue.js';
import { callTrace } from '../capture/traceparent.js';
import { INGESTED_LOG_PREFIX, type TaskLogRecord } from '../capture/types.js';
import type { Database } from '../db/schema.js';
import type { EvaluationEvent, OtelExport } from './otel-export.js';

/**
 * Where the exporter hooks into the process: a sink of the capture processor (every recorded call, once it
 * is journaled and handed to the task-log store) and the engine's stored scores.
 */

/**
 * The OTLP export as a sink of the capture processor. A call that carries no trace of its own (no
 * `traceparent`) gets fresh ids before it is journaled and stored, so that its task log and its exported
 * span share them and its scores can be parented to it later. Task logs made of ingested spans are not
 * exported again (they are spans of the application that sent them).
 */
export function otlpCallExporter(exporter: OtelExport): CaptureExporter {
  return {
    name: 'OTLP',
    takes: (record) => !record.id.startsWith(INGESTED_LOG_PREFIX),
    prepare(record: TaskLogRecord) {
      if (!record.traceId || !record.spanId) Object.assign(record, callTrace(undefined));
    },
    // The exporter queues and batches spans itself (the OpenTelemetry SDK's batch processor).
    async export(batch) {
      for (const record of batch) exporter.call(record);
      return { code: 'success' };
    },
    forceFlush: () => exporter.flush(),
    shutdown: () => exporter.close(),
  };
}

/** A stored per-sample row over a task log, as the engine reports it. */
export interface StoredScore {
  projectId: string;
  runId: string;
  evaluatorId: string;
  evaluatorName: string;
  taskLogId: string;
  score: number | null;
  /** 1 pass, 0 fail, null unknown. */
  passed: number | null;
  reasoning: string | null;
  /** ISO time the row was stored. */
  createdAt: string;
}

const LOOKUP_CHUNK = 500;

function responseIdOf(response: string | null): string | null {
  if (!response) return null;
  try {
    const body = JSON.parse(response) as { id?: unknown } | null;
    return typeof body?.id === 'string' && body.id !== '' ? body.id : null;
  } catch {
    return null;
  }
}

/**
 * The engine's listener: scores over task logs become evaluation events on their calls' spans. The task
 * logs' trace ids are read after the rows are stored, off the engine's path (never awaited by it).
 */
export function scoreExporter(
  db: Kysely<Database>,
  exporter: OtelExport,
  warn: (message: string) => void,
): (scores: StoredScore[]) => void {
  const emit = async (scores: StoredScore[]) => {
    const byProject = new Map<string, StoredScore[]>();
    for (const s of scores) {
      const list = byProject.get(s.projectId);
      if (list) list.push(s);
      else byProject.set(s.projectId, [s]);
    }
    for (const [projectId, list] of byProject) {
      const ids = [...new Set(list.map((s) => s.taskLogId))];
      const logs = new Map<string, { trace_id: string | null; span_id: string | null; response: string }>();
      for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
        const rows = await db
          .selectFrom('task_logs')
          .select(['id', 'trace_id', 'span_id', 'response'])
          .where('project_id', '=', projectId)
          .where('id', 'in', ids.slice(i, i + LOOKUP_CHUNK))
          .execute();
        for (const r of rows)
          logs.set(r.id, { trace_id: r.trace_id ?? null, span_id: r.span_id ?? null, response: r.response });
      }
      const events: EvaluationEvent[] = [];
      for (const s of list) {
        const log = logs.get(s.taskLogId);
        if (!log?.trace_id || !log.span_id) continue;
        const at = Date.parse(s.createdAt);
        events.push({
          traceId: log.trace_id,
          spanId: log.span_id,
          name: s.evaluatorName,
          evaluatorId: s.evaluatorId,
          score: s.score,
          label: s.passed === null ? null : s.passed === 1 ? 'pass' : 'fail',
          explanation: s.reasoning,
          responseId: responseIdOf(log.response),
          attributes: { 'evalgate.run.id': s.runId, 'evalgate.task_log.id': s.taskLogId },
          timeMs: Number.isNaN(at) ? Date.now() : at,
        });
      }
      exporter.evaluations(events);
    }
  };
  return (scores) => {
    if (scores.length === 0) return;
    emit(scores).catch((err: unknown) => warn(`otel export: scores could not be exported: ${String(err)}`));
  };
}
