/**
 * The canonical shape every data source yields (ARCHITECTURE.md section 8). Dataset rows map their
 * `input`, `output`, `expected` fields; a task log maps its request messages to `input` and its
 * response text to `output`. The whole row stays available as `raw`.
 */
export interface Item {
  /** Stable id within its source: a dataset row's position/id or a task log's id. */
  id: string;
  input: unknown;
  output: unknown;
  expected: unknown;
  metadata: Record<string, unknown>;
  raw: unknown;
  /**
   * An OpenAI eval item (a row `{item, sample}` of an eval run's source): the grader templates' `item`
   * namespace is this object as given, and the row's `sample` is the item's `output`.
   */
  evalItem?: Record<string, unknown>;
  /**
   * A session's conversation (sessions as a run source): judge prompts read `{{conversation}}`,
   * `{{trajectory}}`, `{{final_output}}` and `{{first_input}}`, code evaluators `sample["turns"]` and
   * `sample["tool_calls"]`.
   */
  session?: SessionValues;
  /**
   * Why this position has nothing to score: the source could not give its whole content (a session
   * longer than a run reads), or the call it records failed (see `callFailure`). Scorers are not called
   * (so no judge is paid for), and the position's rows are errors with this code and message.
   */
  unreadable?: { code: string; message: string };
}

/** What a recorded call says of its outcome: a task log's (or a session turn's) status and error. */
export interface RecordedOutcome {
  status: string;
  error: unknown;
}

/**
 * The error of a recorded call that failed (a stream cut short, an upstream that answered 200 with no
 * answer, a refused request), as its position's error: the log's own code and message. Whatever text
 * such a call kept is no answer, so it is never scored as one. Null for a call that succeeded.
 */
export function callFailure(log: RecordedOutcome): { code: string; message: string } | null {
  if (log.status !== 'error') return null;
  const e = (typeof log.error === 'object' && log.error !== null ? log.error : {}) as Record<string, unknown>;
  const code = typeof e.code === 'string' && e.code !== '' ? e.code : 'call_failed';
  const said = typeof e.message === 'string' && e.message !== '' ? `: ${e.message}` : '';
  return { code, message: `The recorded call failed (${code})${said}` };
}

/** What evaluators see of a session beyond the item's input and output. */
export interface SessionValues {
  conversation: string;
  trajectory: string;
  final_output: string;
  first_input: string;
  turns: unknown[];
  tool_calls: unknown[];
  /**
   * A tool step's own call (tool steps as a run source): judge prompts read `{{tool_step.name}}`,
   * `{{tool_step.arguments}}`, `{{tool_step.result}}`, code evaluators `sample["tool_step"]`.
   */
  tool_step?: ToolStepValues;
}

/** What evaluators see of a tool step: one tool call of a session, where it is, and what it returned. */
export interface ToolStepValues {
  session_id: string;
  tool_call_id: string;
  name: string;
  arguments: unknown;
  result: string | null;
  turn: number;
  index: number;
  task_log_id: string;
}

/** `start:end`, 0-based, end exclusive. */
export interface Range {
  start: number;
  end: number;
}
