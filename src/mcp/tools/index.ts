import type { McpTool } from '../tool.js';
import { DATASET_TOOLS } from './datasets.js';
import { EVALUATOR_TOOLS } from './evaluators.js';
import { EXPERIMENT_TOOLS } from './experiments.js';
import { LOG_TOOLS } from './logs.js';
import { PROMPT_TOOLS } from './prompts.js';
import { RUN_TOOLS } from './runs.js';

/**
 * Every tool of the MCP server. A new group of tools is one file in
 * this folder exporting its `McpTool`s, each calling the feature's service functions as its REST route
 * does, and one line here.
 */
export const TOOLS: readonly McpTool[] = [
  ...LOG_TOOLS,
  ...RUN_TOOLS,
  ...EXPERIMENT_TOOLS,
  ...EVALUATOR_TOOLS,
  ...DATASET_TOOLS,
  ...PROMPT_TOOLS,
];
