import type { Authenticator } from '../auth/authenticator.js';
import type { DatasetContext } from '../catalog/datasets/service.js';
import type { LogContext } from '../catalog/logs/service.js';
import type { EvaluatorContext } from '../evaluators/service.js';
import type { PromptPorts } from '../prompts/service.js';
import type { RateLimiter } from '../ratelimit/limiter.js';
import type { ReviewPorts } from '../review/ports.js';
import type { RunContext } from '../runs/context.js';
import type { SessionPorts } from '../sessions/routes.js';
import type { TracePorts } from '../traces/routes.js';

/**
 * What the MCP server is given: the same ports the REST routes of each operation get (its tools call the
 * same service functions), and the key check and rate limit of the API's guard.
 */
export interface McpPorts {
  auth: Authenticator;
  limiter: RateLimiter;
  logs: LogContext;
  traces: TracePorts;
  sessions: SessionPorts;
  runs: RunContext;
  evaluators: EvaluatorContext;
  review: ReviewPorts;
  datasets: DatasetContext;
  prompts: PromptPorts;
  /** Where users reach the dashboard (`EVALGATE_PUBLIC_URL`); null: the address the request was sent to. */
  publicUrl: string | null;
}
