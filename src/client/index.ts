/**
 * `evalgate/client`: the typed client of the Evalgate API.
 *
 *   import { Evalgate } from 'evalgate/client';
 *   const client = new Evalgate();            // EVALGATE_API_KEY, EVALGATE_BASE_URL, … or the config file
 *   const run = await client.runs.create({ container: 'support-bot', evaluators: ['helpfulness'],
 *     sample: { type: 'container', container: 'support-bot' } });
 *   const done = await client.runs.wait(run.id, { onProgress: (p) => console.log(p.done, p.total) });
 *
 * See docs/client.md.
 */
import { type ClientOptions, type ResolvedConfig, resolveConfig } from './config.js';
import { APIError } from './errors.js';
import { type RequestOptions, Transport } from './http.js';
import { ApiKeys } from './resources/api-keys.js';
import { Containers } from './resources/containers.js';
import { Datasets } from './resources/datasets.js';
import { Evaluators } from './resources/evaluators.js';
import { Guards } from './resources/guards.js';
import { TaskLogs } from './resources/logs.js';
import { Models } from './resources/models.js';
import { Monitors } from './resources/monitors.js';
import { Projects } from './resources/projects.js';
import { Prompts } from './resources/prompts.js';
import { AnnotationQueues, EvaluatorTemplates } from './resources/review.js';
import { Runs } from './resources/runs.js';
import { Sessions } from './resources/sessions.js';
import { Traces } from './resources/traces.js';
import type { Health } from './types.js';

export class Evalgate {
  /** The settings in force, after options, environment variables and the config file (not the key). */
  readonly baseURL: string;
  readonly environment: ResolvedConfig['environment'];
  readonly region: string | null;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  /** The config-file endpoint in use, if any (its name, environment, region and base URL). */
  readonly endpoint: string | null;

  readonly evaluators: Evaluators;
  readonly monitors: Monitors;
  readonly runs: Runs;
  readonly datasets: Datasets;
  readonly containers: Containers;
  readonly logs: TaskLogs;
  readonly models: Models;
  readonly apiKeys: ApiKeys;
  /** The project's budget. */
  readonly projects: Projects;
  /** Conversations and agent runs. */
  readonly sessions: Sessions;
  /** Traces sent over OTLP and gateway calls, as span trees. */
  readonly traces: Traces;
  /** Human review queues: items, claims, reviews, agreement, export. */
  readonly queues: AnnotationQueues;
  /** The judge catalog. */
  readonly evaluatorTemplates: EvaluatorTemplates;
  /** Versioned prompts and their labels; `getPrompt` fetches one for local use, cached. */
  readonly prompts: Prompts;
  /** Guard policies the gateway applies, and their verdicts. */
  readonly guards: Guards;

  readonly #transport: Transport;

  /** Throws a ConfigurationError when no API key is found or a setting is invalid. */
  constructor(options: ClientOptions = {}) {
    const config = resolveConfig(options);
    this.#transport = new Transport({
      ...config,
      fetch: options.fetch ?? globalThis.fetch,
      defaultHeaders: options.defaultHeaders ?? {},
    });
    this.baseURL = config.baseURL;
    this.environment = config.environment;
    this.region = config.region;
    this.timeoutMs = config.timeoutMs;
    this.maxRetries = config.maxRetries;
    this.endpoint = config.endpoint?.name ?? null;
    this.evaluators = new Evaluators(this.#transport);
    this.monitors = new Monitors(this.#transport);
    this.runs = new Runs(this.#transport);
    this.datasets = new Datasets(this.#transport);
    this.containers = new Containers(this.#transport);
    this.logs = new TaskLogs(this.#transport);
    this.models = new Models(this.#transport);
    this.apiKeys = new ApiKeys(this.#transport);
    this.sessions = new Sessions(this.#transport);
    this.projects = new Projects(this.#transport);
    this.traces = new Traces(this.#transport);
    this.queues = new AnnotationQueues(this.#transport);
    this.evaluatorTemplates = new EvaluatorTemplates(this.#transport);
    this.prompts = new Prompts(this.#transport);
    this.guards = new Guards(this.#transport);
  }

  /**
   * `GET /healthz` (no key needed): `{ok: true}` while the server and its database answer, `{ok: false}`
   * when it answers 503 (after the retries); other failures throw.
   */
  async health(options?: RequestOptions): Promise<Health> {
    try {
      return await this.#transport.request<Health>({ method: 'GET', path: '/healthz', options });
    } catch (err) {
      if (err instanceof APIError && err.status === 503) return { ok: false };
      throw err;
    }
  }
}

export default Evalgate;

export { type PromptMessage, PromptVariableError, type VariableProblem } from '../prompts/template.js';
export {
  type ClientOptions,
  DEFAULT_BASE_URL,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  type ResolvedConfig,
  resolveConfig,
  type SettingSource,
} from './config.js';
export type { ConfigEndpoint, ConfigFile, EvalgateEnvironment } from './config-file.js';
export {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  AuthenticationError,
  ConfigurationError,
  ConflictError,
  EvalgateError,
  InternalServerError,
  isRecoverable,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
  WaitTimeoutError,
} from './errors.js';
export type { RequestOptions } from './http.js';
export { Page, PagePromise } from './pagination.js';
export type { ApiKeys } from './resources/api-keys.js';
export type { Containers } from './resources/containers.js';
export type { DatasetRow, Datasets, UploadDatasetOptions } from './resources/datasets.js';
export type { Evaluators } from './resources/evaluators.js';
export type {
  CreateGuardPolicy,
  GuardPolicy,
  Guards,
  GuardVerdict,
  UpdateGuardPolicy,
} from './resources/guards.js';
export type { TaskLogs } from './resources/logs.js';
export type { Models } from './resources/models.js';
export type { Monitors } from './resources/monitors.js';
export type { Projects } from './resources/projects.js';
export {
  type CreatePrompt,
  type CreatePromptVersion,
  FetchedPrompt,
  type GetPromptOptions,
  PROMPT_COMPILED_HEADER,
  type Prompt,
  type PromptDiff,
  type PromptLabel,
  type PromptSummary,
  type Prompts,
  type PromptVersion,
} from './resources/prompts.js';
export type {
  AnnotationItems,
  AnnotationQueues,
  AnnotationReviews,
  EvaluatorTemplates,
} from './resources/review.js';
export type * from './resources/review-types.js';
export {
  type CreateRunOptions,
  isTerminal,
  type Runs,
  TERMINAL_STATUSES,
  type WaitOptions,
} from './resources/runs.js';
export type { Sessions } from './resources/sessions.js';
export type { Traces } from './resources/traces.js';
export type * from './types.js';
export type { UploadOptions, UploadProgress, UploadSource } from './upload.js';
