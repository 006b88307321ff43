import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { registerDocs } from './resources.js';
import { callTool, type ToolCall } from './tool.js';
import { TOOLS } from './tools/index.js';

export const SERVER_NAME = 'evalgate';

const INSTRUCTIONS = [
  "Evalgate's evaluation data of one project (the API key's): recorded model calls (task logs), traces,",
  'sessions, evaluators, evaluation runs and their paired comparisons, human-review agreement, datasets.',
  'Lists are paged: pass `next_cursor` back as `cursor`. Answers carry dashboard and API links.',
  'The documentation is available as resources (evalgate://docs/<page>).',
].join(' ');

/**
 * An MCP server for one caller: every tool (each checks the caller's key as its REST route does) and the
 * docs as resources. Made per request: it holds nothing between calls.
 */
export function buildMcpServer(call: ToolCall, version: string): McpServer {
  const server = new McpServer(
    { name: SERVER_NAME, version },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );
  for (const tool of TOOLS) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: `${tool.description} Needs '${tool.permission}'.`,
        inputSchema: tool.input,
        annotations: { title: tool.title, readOnlyHint: tool.readOnly, openWorldHint: false },
      },
      (args: Record<string, unknown>) => callTool(tool, call, args),
    );
  }
  registerDocs(server);
  return server;
}
