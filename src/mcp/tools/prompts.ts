import { z } from 'zod';
import { CreatePromptVersion, type PromptVersion } from '../../prompts/schemas.js';
import { createVersion, listPrompts, resolvePrompt, toPrompt } from '../../prompts/service.js';
import { checked } from '../body.js';
import {
  compact,
  defineTool,
  links,
  type McpTool,
  nextCursor,
  PageArgs,
  pageFrom,
  seg,
  type ToolCall,
} from '../tool.js';

const promptLinks = (call: ToolCall, ref: string) => links(call, 'prompts', `/v1/prompts/${seg(ref)}`);

/** A version as an agent reads it: its messages and settings, long texts cut. */
function versionView(v: PromptVersion) {
  return compact(v, 4000) as Record<string, unknown>;
}

const listPromptsTool = defineTool({
  name: 'list_prompts',
  title: 'List prompts',
  description: "The project's versioned prompts, newest first, with their latest version and labels.",
  permission: 'prompts:read',
  readOnly: true,
  input: z
    .object({
      name: z.string().min(1).max(200).optional().describe('Only prompts whose name contains this'),
      ...PageArgs,
    })
    .strict(),
  async run(call, args) {
    const page = pageFrom(args);
    const list = await listPrompts(call.ports.prompts, call.principal.projectId, page, args.name);
    return {
      summary: `${list.total} prompt(s); showing ${list.data.length} from ${page.offset}`,
      content: {
        total: list.total,
        prompts: list.data.map((p) => ({ ...p, links: promptLinks(call, p.id) })),
        next_cursor: nextCursor(page, list.data.length, list.total),
      },
    };
  },
});

const getPromptTool = defineTool({
  name: 'get_prompt',
  title: 'Get a prompt version',
  description:
    'A prompt (by id or name) at a label (production, staging, …) or a version number; the latest when neither is given. Returns its messages with {{variables}}, declared variable types, model, parameters, tools and labels.',
  permission: 'prompts:read',
  readOnly: true,
  input: z
    .object({
      prompt: z.string().min(1).max(200).describe('Prompt id (prm_…) or name'),
      label: z.string().min(1).max(63).optional(),
      version: z.number().int().min(1).optional(),
    })
    .strict(),
  async run(call, args) {
    const which = {
      ...(args.label === undefined ? {} : { label: args.label }),
      ...(args.version === undefined ? {} : { version: args.version }),
    };
    const prompt = toPrompt(
      await resolvePrompt(call.ports.prompts.db, call.principal.projectId, args.prompt, which),
    );
    return {
      summary: `Prompt ${prompt.name} version ${prompt.version.version}`,
      content: { ...prompt, version: versionView(prompt.version), links: promptLinks(call, prompt.id) },
    };
  },
});

const createVersionTool = defineTool({
  name: 'create_prompt_version',
  title: 'Create a prompt version',
  description:
    'Adds the next version of a prompt (versions never change once made), optionally moving labels to it. Takes the same fields as POST /v1/prompts/{prompt}/versions: messages, variables, model, parameters, tools, response_format, commit_message, labels.',
  permission: 'prompts:write',
  readOnly: false,
  input: z
    .object({
      prompt: z.string().min(1).max(200).describe('Prompt id (prm_…) or name'),
      version: z.record(z.string(), z.unknown()).describe('The version: { messages: [{role, content}], … }'),
    })
    .strict(),
  async run(call, args) {
    const body = checked(CreatePromptVersion, args.version, 'body');
    const created = await createVersion(call.ports.prompts, call.principal, args.prompt, body);
    return {
      summary: `Version ${created.version} of ${args.prompt} created`,
      content: { version: versionView(created), links: promptLinks(call, args.prompt) },
    };
  },
});

export const PROMPT_TOOLS: readonly McpTool[] = [listPromptsTool, getPromptTool, createVersionTool];
