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
   * Why the source could not give this position's whole content (a session longer than a run reads):
   * scorers are not called, and the position's rows are errors with this code and message.
   */
  unreadable?: { code: string; message: string };
}

/** What evaluators see of a session beyond the item's input and output. */
export interface SessionValues {
  conversation: string;
  trajectory: string;
  final_output: string;
  first_input: string;
  turns: unknown[];
  tool_calls: unknown[];
}

/** `start:end`, 0-based, end exclusive. */
export interface Range {
  start: number;
  end: number;
}
