import { type Static, Type } from 'typebox';
import { GUARD_NAME_PATTERN, VERDICTS } from '../guards/schemas.js';
import { ListOf, Nullable, PageQuery } from '../http/schemas.js';
import { DIALECTS } from '../llm/dialects/registry.js';
import { WIRE_PROTOCOLS } from '../shared/wire-protocol.js';

const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^(?!mon_)\\S(.*\\S)?$',
  description: 'Unique in the project. Must not start with mon_ or with/end in spaces',
});
const Rate = Type.Number({
  exclusiveMinimum: 0,
  maximum: 1,
  description: 'Share of the matching calls scored, 0 < r <= 1 (default 1)',
});
const Iso = (description: string) => Type.String({ format: 'date-time', description });

/** The gateway's routes, as its task logs record them in `metadata.route`. */
export const GATEWAY_ROUTES = WIRE_PROTOCOLS;

/** Calls by the guard verdicts recorded on their task logs (`metadata.guards`). */
const GuardsFilter = Type.Object(
  {
    verdicts: Type.Optional(
      Type.Array(Type.Enum([...VERDICTS]), {
        minItems: 1,
        maxItems: VERDICTS.length,
        uniqueItems: true,
        description: 'Verdicts: passed, blocked, flagged, redacted, error (default: any)',
      }),
    ),
    names: Type.Optional(
      Type.Array(Type.String({ pattern: GUARD_NAME_PATTERN }), {
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
        description: "Guard checks, by the check's name (default: any)",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Only calls with a recorded guard verdict of one of these kinds, by one of these checks (the same ' +
      'verdict satisfies both). A call stopped by a guard is scored on its input, with the block as its output',
  },
);

export const MonitorFilter = Type.Object(
  {
    models: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
        minItems: 1,
        maxItems: 100,
        description: 'Only calls to these models (as recorded: the slug the caller asked for)',
      }),
    ),
    routes: Type.Optional(
      Type.Array(Type.Enum([...GATEWAY_ROUTES]), {
        minItems: 1,
        maxItems: GATEWAY_ROUTES.length,
        uniqueItems: true,
        description:
          "Only calls through these gateway routes (the task log's metadata.route): " +
          Object.values(DIALECTS)
            .map((d) => `${d.name} (${d.routes.call})`)
            .join(', '),
      }),
    ),
    metadata: Type.Optional(
      Type.Record(
        Type.String({ minLength: 1, maxLength: 200 }),
        Type.Union([Type.String(), Type.Number(), Type.Boolean()]),
        {
          maxProperties: 50,
          description: 'Only calls whose metadata has every one of these key/values',
        },
      ),
    ),
    guards: Type.Optional(GuardsFilter),
  },
  { additionalProperties: false },
);
export type MonitorFilter = Static<typeof MonitorFilter>;

export const ALERT_METRICS = ['pass_rate', 'avg_score'] as const;
export const MONITOR_UNITS = ['call', 'session'] as const;
/** How long a session must be idle before a session monitor scores it, unless the monitor says. */
export const DEFAULT_IDLE_SECONDS = 300;

export const AlertRule = Type.Object(
  {
    evaluator: Type.String({ minLength: 1, maxLength: 300, description: "One of the monitor's evaluators" }),
    metric: Type.Enum([...ALERT_METRICS]),
    below: Type.Number({ description: 'Fires when the metric over the window is below this' }),
    window: Type.Integer({ minimum: 60, maximum: 86_400 * 7, description: 'Seconds' }),
    min_samples: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, default: 10 })),
    webhook_url: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'http(s) URL receiving the POSTs',
    }),
  },
  { additionalProperties: false },
);
export type AlertRule = Static<typeof AlertRule>;

export const CreateMonitor = Type.Object(
  {
    name: Name,
    container: Type.String({ minLength: 1, maxLength: 200, description: 'Container id or label' }),
    evaluators: Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
      minItems: 1,
      maxItems: 20,
      description: 'Evaluator ids or names (none that needs ground truth)',
    }),
    sampling_rate: Type.Optional(Rate),
    unit: Type.Optional(
      Type.Enum([...MONITOR_UNITS], {
        description:
          "What is scored: 'call' (default; each sampled task log) or 'session' (each sampled session, once it has been idle for idle_seconds)",
      }),
    ),
    idle_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 86_400 * 7,
        description: "unit 'session': seconds without a call after which a session is scored (default 300)",
      }),
    ),
    filter: Type.Optional(MonitorFilter),
    enabled: Type.Optional(Type.Boolean({ default: true })),
    environment: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    alert: Type.Optional(Nullable(AlertRule)),
    backfill: Type.Optional(
      Type.Object(
        { since: Iso('Calls recorded at or after'), until: Type.Optional(Iso('Calls recorded before')) },
        { additionalProperties: false, description: "Also score the container's calls of this past window" },
      ),
    ),
  },
  { additionalProperties: false },
);
export type CreateMonitor = Static<typeof CreateMonitor>;

export const PatchMonitor = Type.Object(
  {
    name: Type.Optional(Name),
    sampling_rate: Type.Optional(Rate),
    filter: Type.Optional(MonitorFilter),
    enabled: Type.Optional(Type.Boolean()),
    alert: Type.Optional(Nullable(AlertRule)),
  },
  { additionalProperties: false },
);
export type PatchMonitor = Static<typeof PatchMonitor>;

export const Monitor = Type.Object({
  object: Type.Literal('monitor'),
  id: Type.String(),
  name: Type.String(),
  container: Type.String({ description: 'Container id' }),
  evaluators: Type.Array(Type.String(), { description: 'Evaluator ids' }),
  sampling_rate: Type.Number(),
  unit: Type.Enum([...MONITOR_UNITS], { description: 'call or session' }),
  idle_seconds: Nullable(Type.Integer({ description: 'Session monitors: idle time before scoring' })),
  filter: MonitorFilter,
  enabled: Type.Boolean(),
  environment: Type.String(),
  alert: Nullable(AlertRule),
  alert_state: Nullable(Type.Enum(['firing', 'resolved'])),
  /** Returned once, at creation: the key the alert webhooks are signed with. */
  alert_secret: Type.Optional(Type.String()),
  run_id: Type.String({ description: "The monitor's long-lived run" }),
  selected: Type.Integer({ description: 'Calls (or sessions) selected so far' }),
  spend: Type.Number({ description: 'USD spent on judge calls' }),
  lag_seconds: Type.Number({ description: 'Age of the oldest selected call not scored yet (0: none)' }),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type Monitor = Static<typeof Monitor>;

export const MonitorList = ListOf(Monitor);
export const ListMonitorsQuery = Type.Object({
  ...PageQuery,
  container: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});
export const MonitorRefParam = Type.Object({
  monitor: Type.String({ minLength: 1, maxLength: 300, description: 'Monitor id or name' }),
});
export const MonitorDeleted = Type.Object({
  object: Type.Literal('monitor'),
  id: Type.String(),
  deleted: Type.Literal(true),
});

export const BUCKETS = ['minute', 'hour', 'day'] as const;
export type Bucket = (typeof BUCKETS)[number];

export const ResultsQuery = Type.Object({
  since: Type.Optional(Iso('Calls recorded at or after')),
  until: Type.Optional(Iso('Calls recorded before')),
  bucket: Type.Optional(Type.Enum([...BUCKETS], { default: 'hour' })),
});

export const EvaluatorStats = Type.Object({
  evaluator: Type.String({ description: 'Evaluator id' }),
  name: Type.String(),
  num_scored: Type.Integer(),
  num_passed: Type.Integer(),
  num_failed: Type.Integer(),
  num_errors: Type.Integer(),
  avg_score: Nullable(Type.Number()),
  stdev: Nullable(Type.Number()),
  stderr: Nullable(Type.Number()),
});
export type EvaluatorStats = Static<typeof EvaluatorStats>;

export const MonitorResults = Type.Object({
  object: Type.Literal('monitor.results'),
  monitor: Type.String(),
  bucket: Type.Enum([...BUCKETS]),
  totals: Type.Array(EvaluatorStats),
  buckets: Type.Array(Type.Object({ start: Type.String(), evaluators: Type.Array(EvaluatorStats) })),
});
export type MonitorResults = Static<typeof MonitorResults>;

export const SamplesQuery = Type.Object({
  ...PageQuery,
  failed: Type.Optional(Type.Boolean({ description: 'Only samples that did not pass' })),
  evaluator: Type.Optional(
    Type.String({ minLength: 1, maxLength: 300, description: 'Evaluator id or name' }),
  ),
  since: Type.Optional(Iso('Calls recorded at or after')),
  until: Type.Optional(Iso('Calls recorded before')),
});

export const MonitorSample = Type.Object({
  object: Type.Literal('monitor.sample'),
  task_log_id: Type.String(),
  evaluator: Type.String(),
  status: Type.Enum(['scored', 'error', 'missing']),
  score: Nullable(Type.Number()),
  passed: Nullable(Type.Boolean()),
  reasoning: Nullable(Type.String()),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
  input: Type.Unknown(),
  output: Type.Unknown(),
  log_created_at: Type.String(),
  scored_at: Type.String(),
});
export type MonitorSample = Static<typeof MonitorSample>;
export const MonitorSampleList = ListOf(MonitorSample);
