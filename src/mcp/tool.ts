import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Principal } from '../auth/authenticator.js';
import { requireNeeds } from '../auth/content.js';
import type { Permission } from '../auth/permissions.js';
import { ApiError } from '../shared/errors.js';
import type { McpPorts } from './ports.js';

/** What a tool call acts with: the caller's key, the features' ports, and where links point. */
export interface ToolCall {
  principal: Principal;
  ports: McpPorts;
  /** The server's origin for links (`https://evalgate.example.com`). */
  origin: string;
  /** Reports a failure that is not the caller's (the agent is told only that the tool failed). */
  fail(err: unknown): void;
}

/** A tool's answer: one short line for the model to read, and the compact structured content. */
export interface ToolAnswer {
  summary: string;
  content: Record<string, unknown>;
}

/** A tool as the server registers it. `input` is a strict zod object: unknown arguments are refused. */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  /** The permission of the REST route of the same operation, checked before the tool runs. */
  permission: Permission;
  /** True when the tool changes nothing (MCP's `readOnlyHint`). */
  readOnly: boolean;
  input: z.ZodObject;
  run(call: ToolCall, args: Record<string, unknown>): Promise<ToolAnswer>;
}

interface ToolSpec<Input extends z.ZodObject> extends Omit<McpTool, 'input' | 'run'> {
  input: Input;
  run(call: ToolCall, args: z.infer<Input>): Promise<ToolAnswer>;
}

/** A tool whose `run` sees its arguments typed by its schema (the server has validated them). */
export function defineTool<Input extends z.ZodObject>(spec: ToolSpec<Input>): McpTool {
  return { ...spec, run: (call, args) => spec.run(call, args as z.infer<Input>) };
}

/** Throws 403 as the API's guard does when the key lacks the permission. */
export function requirePermission(principal: Principal, permission: Permission, why?: string): void {
  requireNeeds(principal.permissions, [{ permission, why: why ?? `the tool needs it` }]);
}

/** The answer of a tool call, or of its failure (an MCP tool error, which the agent can read and act on). */
export async function callTool(tool: McpTool, call: ToolCall, args: unknown): Promise<CallToolResult> {
  try {
    requirePermission(call.principal, tool.permission, `as the REST route of ${tool.name}`);
    const answer = await tool.run(call, args as Record<string, unknown>);
    return {
      content: [{ type: 'text', text: `${answer.summary}\n${JSON.stringify(answer.content)}` }],
      structuredContent: answer.content,
    };
  } catch (err) {
    if (!(err instanceof ApiError)) {
      call.fail(err);
      return {
        isError: true,
        content: [
          { type: 'text', text: `500 internal_error: ${tool.name} failed; the server's log says why` },
        ],
        structuredContent: { error: { code: 'internal_error', status: 500, message: `${tool.name} failed` } },
      };
    }
    const error = {
      code: err.code,
      status: err.status,
      message: err.message,
      ...(err.issues.length > 0 ? { issues: err.issues } : {}),
    };
    const where = err.issues.map((i) => ` ${i.loc.join('.')}: ${i.msg}`).join(';');
    return {
      isError: true,
      content: [{ type: 'text', text: `${err.status} ${err.code}: ${err.message}${where}` }],
      structuredContent: { error },
    };
  }
}

// ---- paging -----------------------------------------------------------------------------------------

/** The page arguments of every listing tool: a page size and the cursor of the previous answer. */
export const PageArgs = {
  limit: z.number().int().min(1).max(100).optional().describe('Items per page, 1..100 (default 20)'),
  cursor: z.string().max(200).optional().describe('`next_cursor` of the previous page'),
};

/** An opaque cursor: the offset of the next page. */
export function cursorAt(offset: number): string {
  return Buffer.from(`o:${offset}`).toString('base64url');
}

/** The page a listing tool reads: its size and offset (from the cursor). */
export function pageFrom(args: { limit?: number | undefined; cursor?: string | undefined }): {
  limit: number;
  offset: number;
} {
  const limit = args.limit ?? 20;
  if (args.cursor === undefined) return { limit, offset: 0 };
  const m = /^o:(\d{1,15})$/.exec(Buffer.from(args.cursor, 'base64url').toString());
  if (!m) throw ApiError.invalid(['cursor'], 'Not a cursor of this server: pass `next_cursor` as answered');
  return { limit, offset: Number(m[1]) };
}

/** `next_cursor` when items remain after this page, else null. */
export function nextCursor(page: { limit: number; offset: number }, shown: number, total: number) {
  const next = page.offset + shown;
  return shown > 0 && next < total ? cursorAt(next) : null;
}

// ---- compact content --------------------------------------------------------------------------------

const MAX_TEXT = 2_000;

/** The value with long strings cut (a marker says how much was left out), for answers an agent reads. */
export function compact(value: unknown, maxText = MAX_TEXT): unknown {
  if (typeof value === 'string') {
    return value.length <= maxText
      ? value
      : `${value.slice(0, maxText)}… [${value.length - maxText} more characters]`;
  }
  if (Array.isArray(value)) return value.map((v) => compact(v, maxText));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, compact(v, maxText)]));
  }
  return value;
}

/** Dashboard and API links of one object of the caller's project. */
export function links(call: ToolCall, dashboardPath: string | null, apiPath: string) {
  const project = encodeURIComponent(call.principal.projectId);
  return {
    ...(dashboardPath === null ? {} : { dashboard: `${call.origin}/projects/${project}/${dashboardPath}` }),
    api: `${call.origin}${apiPath}`,
  };
}

/** An id or label in a URL path. */
export const seg = (value: string) => encodeURIComponent(value);
