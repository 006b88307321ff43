/** Prompts (migration 034): named prompts of a project, their immutable versions, labels and label moves. */
export interface PromptTable {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  /** The highest version number (the implied `latest` label). */
  latest_version: number;
  created_at: string;
  updated_at: string;
}

export interface PromptVersionTable {
  prompt_id: string;
  version: number;
  /** JSON array of chat messages whose text holds `{{variables}}`. */
  messages: string;
  /** JSON object: variable name → declared type (`string`, `number`, `boolean`, `json`). */
  variables: string;
  model: string | null;
  /** JSON object: temperature, max_tokens, top_p, stop, … */
  parameters: string;
  /** JSON array of tools, or null. */
  tools: string | null;
  /** JSON response format, or null. */
  response_format: string | null;
  commit_message: string | null;
  /** Who made it: `key:<id>` or `user:<id>`. */
  author: string;
  created_at: string;
}

export interface PromptLabelTable {
  prompt_id: string;
  name: string;
  version: number;
  updated_by: string;
  updated_at: string;
}

/** Every move of a label (`move`, `rollback`, `delete`): what a rollback reverts. */
export interface PromptLabelMoveTable {
  id: string;
  prompt_id: string;
  label: string;
  action: string;
  from_version: number | null;
  to_version: number | null;
  /** 1 once a rollback has undone this move. */
  reverted: number;
  moved_by: string;
  moved_at: string;
}
