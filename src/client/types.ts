/**
 * The client's request and response types, inferred from the very TypeBox schemas the server validates
 * with, so the two cannot drift apart. Every import here is type-only: the client loads none of the
 * server's code at run time.
 */
import type { Static } from 'typebox';
import type { ApiKeyView } from '../auth/key-store.js';
import type {
  Container,
  ContainerDeleted,
  CreateContainer,
  ListContainersQuery,
  PatchContainer,
} from '../catalog/containers/schemas.js';
import type {
  CreateDataset,
  Dataset,
  DatasetDeleted,
  DatasetItem,
  ListDatasetsQuery,
  ListItemsQuery,
  PatchDataset,
  UploadDatasetQuery,
} from '../catalog/datasets/schemas.js';
import type {
  DatasetDiff,
  DatasetVersion,
  DiffQuery,
  ExportQuery,
  ItemDeleted,
  ItemsChanged,
  ListVersionsQuery,
  NewItem,
  PatchItem,
} from '../catalog/datasets/version-schemas.js';
import type { ImportLog, ListLogsQuery, LogImport, TaskLog } from '../catalog/logs/schemas.js';
import type { Model, ModelDeleted, PatchModel, RegisterModel } from '../catalog/models/schemas.js';
import type {
  CreateEvaluator,
  Evaluator,
  EvaluatorDeleted,
  ListEvaluatorsQuery,
  PatchEvaluator,
} from '../evaluators/schemas.js';
import type { ListMonitorsQuery, MonitorDeleted, ResultsQuery, SamplesQuery } from '../monitors/schemas.js';
import type { RunSpend } from '../runs/events.js';
import type {
  CompareQuery,
  CreateRun,
  ListRunsQuery,
  ListSamplesQuery,
  PatchRun,
  Run,
  RunComparison,
  RunSample,
  RunStatus,
} from '../runs/schemas.js';
import type { queueState } from '../runs/service.js';
import type { Budget, BudgetState } from '../shared/budget.js';
import type { ErrorCode, ValidationIssue } from '../shared/errors.js';
import type { ListTracesQuery } from '../traces/types.js';

export type { CodeEvaluator, GraderEvaluator, JudgeEvaluator } from '../evaluators/schemas.js';
export type { DataSource, EvaluatorComparison, ResolvedSource, RunResults } from '../runs/schemas.js';
export type {
  Container,
  CreateContainer,
  CreateDataset,
  CreateEvaluator,
  CreateRun,
  Dataset,
  DatasetItem,
  ErrorCode,
  Evaluator,
  ImportLog,
  LogImport,
  Model,
  PatchContainer,
  PatchDataset,
  PatchEvaluator,
  PatchModel,
  PatchRun,
  RegisterModel,
  Run,
  RunComparison,
  RunSample,
  RunStatus,
  TaskLog,
  ValidationIssue,
};

export type ContainerDeletedResponse = Static<typeof ContainerDeleted>;
export type DatasetDeletedResponse = Static<typeof DatasetDeleted>;
export type EvaluatorDeletedResponse = Static<typeof EvaluatorDeleted>;
export type ModelDeletedResponse = Static<typeof ModelDeleted>;

export type ListEvaluatorsParams = Static<typeof ListEvaluatorsQuery>;
export type ListRunsParams = Static<typeof ListRunsQuery>;
export type ListSamplesParams = Static<typeof ListSamplesQuery>;
/** `baseline`: the run to compare against; `limit`: regressions listed per evaluator and launch. */
export type CompareParams = CompareQuery;
export type ListContainersParams = Static<typeof ListContainersQuery>;
export type ListDatasetsParams = Static<typeof ListDatasetsQuery>;
export type ListDatasetItemsParams = Static<typeof ListItemsQuery>;
/** An item to add: given fields, or `from` a task log, span, session or review (fields beside it override). */
export type NewDatasetItem = Static<typeof NewItem>;
/** Fields of an item to replace (`data`: other fields, merged in). */
export type PatchDatasetItem = Static<typeof PatchItem>;
/** What adding or editing items made: the new version and the items written. */
export type DatasetItemsChanged = ItemsChanged;
export type DatasetItemDeletedResponse = ItemDeleted;
export type { DatasetDiff, DatasetVersion };
export type ListDatasetVersionsParams = Static<typeof ListVersionsQuery>;
export type DatasetDiffParams = Static<typeof DiffQuery>;
export type ExportDatasetParams = Static<typeof ExportQuery>;
export type ListTaskLogsParams = Static<typeof ListLogsQuery>;
export type ListTracesParams = ListTracesQuery;
export type { Session, SessionDetail, SessionTurnsQuery, ToolStepDetail } from '../sessions/schemas.js';
export type { Trace, TraceSpan, TraceSummary } from '../traces/types.js';
/** Label and description of a JSON-lines dataset upload (sent as query parameters). */
export type UploadDatasetParams = Static<typeof UploadDatasetQuery>;
export type PageParams = { limit?: number; offset?: number };

/** An API key as listings show it (never the secret), with its budget and the spend of its period. */
export type ApiKey = ApiKeyView & BudgetState;
/** A key just created: the only time its secret `key` is shown. */
export type CreatedApiKey = ApiKey & { key: string };
/** A spend limit, and the spend of its current period. */
export type { Budget, BudgetPeriod, BudgetState, Spend } from '../shared/budget.js';
/** `PATCH /v1/api-keys/{id}`: a new name, or a budget (null removes it). */
export interface UpdateApiKey {
  name?: string;
  budget?: Budget | null;
}
/** `/v1/projects/{project}/budget`: the project's budget and the spend of its current period. */
export type ProjectBudget = { object: 'project_budget'; project_id: string } & BudgetState;
/**
 * `POST /v1/api-keys`. Written out here because src/auth/routes.ts keeps that schema to itself; keep the
 * two in step (test/client/resources.test.ts creates keys through the client against the server).
 */
export interface CreateApiKey {
  name: string;
  /** `<resource>:<action>` strings, wildcards allowed; default: the creating key's own permissions. */
  permissions?: string[];
  /** Caches the key's gateway calls for this many seconds (1..2592000); null: only requests that ask. */
  cache_ttl_seconds?: number | null;
  /** What calls through the key may spend per period. */
  budget?: Budget | null;
}

/** `GET /healthz`. */
export interface Health {
  ok: boolean;
}

/** The `queue` event of a queued run: whether its environment has a live worker to execute it. */
export type QueueState = Awaited<ReturnType<typeof queueState>>;

/** The `spend` event of a run: its spend so far, and the judge and generation calls behind it. */
export type { RunSpend };

/** Server-sent events of `GET /v1/evaluation/runs/{id}/events`; the last one is the terminal `status`. */
export type RunEvent =
  | { event: 'status'; data: { id: string; status: RunStatus | (string & {}); finished_at: string | null } }
  | { event: 'progress'; data: RunProgress }
  | { event: 'spend'; data: RunSpend }
  | { event: 'queue'; data: QueueState };

/** Positions done out of the total (null until the run is planned). */
export interface RunProgress {
  done: number;
  total: number | null;
}

/** Monitors (`/v1/monitors`): types inferred from the server's schemas. */
export type {
  AlertRule,
  CreateMonitor,
  EvaluatorStats,
  Monitor,
  MonitorFilter,
  MonitorResults,
  MonitorSample,
  PatchMonitor,
} from '../monitors/schemas.js';
export type MonitorDeletedResponse = Static<typeof MonitorDeleted>;
export type ListMonitorsParams = Static<typeof ListMonitorsQuery>;
export type MonitorResultsParams = Static<typeof ResultsQuery>;
export type ListMonitorSamplesParams = Static<typeof SamplesQuery>;
