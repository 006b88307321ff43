import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { principalOf } from '../auth/guard.js';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { isObject, type JsonObject } from '../shared/json.js';
import type { PromptVersion } from './schemas.js';
import { resolvePrompt, toVersion, type VersionRef } from './service.js';
import {
  PromptVariableError,
  renderText,
  type VariableType,
  variablesOfMessages,
  writeVariables,
} from './template.js';

/**
 * A gateway call that names a stored prompt: resolved and rendered before the body is validated, so that
 * the route sees an ordinary request (the prompt's messages before the request's own, the version's model,
 * parameters, tools and response format unless the request gives its own) and records which version made
 * it. Two forms:
 *
 * - Responses: `prompt: {id, version?, variables?}` as OpenAI's SDKs send it (`id`: the prompt's id or
 *   name; `version`: a number, or a label's name; variables as strings or input content objects).
 * - Chat completions: `prompt: {name | id, label?, version?, variables?}`, or the header
 *   `X-Evalgate-Prompt: name@label` (or `name@3`, or `name`) with the variables in `prompt.variables`.
 *
 * Without a version or label the latest version is used. Labels are read at every call (no cache), so a
 * moved label serves the next call.
 */
export const PROMPT_HEADER = 'x-evalgate-prompt';
/**
 * `X-Evalgate-Prompt-Compiled: <prompt id or name>@<version>`: the request's messages were compiled by
 * the client from that stored version (the clients' `compile`); nothing is rendered, the task log names it.
 */
export const COMPILED_HEADER = 'x-evalgate-prompt-compiled';

/** Which stored prompt version a call was made from, as the task log records it. */
export interface PromptUse {
  id: string;
  version: number;
}

const uses = new WeakMap<FastifyRequest, PromptUse>();

/** The prompt version the request was rendered from, if it named one. */
export function promptUseOf(req: FastifyRequest): PromptUse | undefined {
  return uses.get(req);
}

const badRequest = (message: string, param: string, extra: JsonObject = {}) =>
  new ApiError('bad_request', message, { param, ...extra });

/** A reference's version part: a positive integer is a version, anything else a label. */
function versionRef(value: unknown, param: string): VersionRef {
  if (value === undefined || value === null || value === '') return {};
  if (typeof value === 'number' && Number.isInteger(value) && value > 0) return { version: value };
  if (typeof value === 'string') {
    return /^[1-9]\d{0,8}$/.test(value) ? { version: Number(value) } : { label: value };
  }
  throw badRequest(`${param} must be a version number or a label`, param);
}

interface Reference {
  ref: string;
  which: VersionRef;
  variables: JsonObject;
}

function variablesOf(value: unknown, param: string): JsonObject {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw badRequest(`${param} must be an object`, param);
  return value;
}

/** The chat form: the body's `prompt` object, or the header (variables still in `prompt.variables`). */
function chatReference(req: FastifyRequest, body: JsonObject): Reference | null {
  const header = req.headers[PROMPT_HEADER];
  const named = typeof header === 'string' && header.trim() !== '' ? header.trim() : null;
  if (body.prompt === undefined && named === null) return null;
  const field = body.prompt ?? {};
  if (!isObject(field)) throw badRequest('prompt must be an object', 'prompt');
  const variables = variablesOf(field.variables, 'prompt.variables');
  if (named !== null) {
    const at = named.lastIndexOf('@');
    const ref = at > 0 ? named.slice(0, at) : named;
    return { ref, which: versionRef(at > 0 ? named.slice(at + 1) : undefined, PROMPT_HEADER), variables };
  }
  const ref = typeof field.id === 'string' ? field.id : typeof field.name === 'string' ? field.name : null;
  if (!ref) throw badRequest('prompt needs a name or an id', 'prompt.name');
  if (field.label !== undefined && field.version !== undefined) {
    throw badRequest('prompt takes a label or a version, not both', 'prompt.label');
  }
  const which =
    field.label !== undefined
      ? versionRef(String(field.label), 'prompt.label')
      : versionRef(field.version, 'prompt.version');
  return { ref, which, variables };
}

/** The Responses form, as `ResponsePrompt` of OpenAI's SDK. */
function responsesReference(body: JsonObject): Reference | null {
  if (body.prompt === undefined || body.prompt === null) return null;
  const field = body.prompt;
  if (!isObject(field) || typeof field.id !== 'string' || field.id === '') {
    throw badRequest('prompt must be an object with an id (the prompt id or name)', 'prompt.id');
  }
  return {
    ref: field.id,
    which: versionRef(field.version, 'prompt.version'),
    variables: variablesOf(field.variables, 'prompt.variables'),
  };
}

async function load(db: Kysely<Database>, projectId: string, r: Reference): Promise<PromptVersion> {
  const resolved = await resolvePrompt(db, projectId, r.ref, r.which);
  return toVersion(resolved.prompt, resolved.version, resolved.labels);
}

function variableError(err: unknown): never {
  if (err instanceof PromptVariableError) {
    throw badRequest(`Prompt variables: ${err.message}`, 'prompt.variables', { problems: err.problems });
  }
  throw err;
}

/** The version's sampling parameters, each unless the request has its own. */
function withDefaults(body: JsonObject, defaults: JsonObject): JsonObject {
  const out: JsonObject = { ...body };
  for (const [k, v] of Object.entries(defaults)) if (out[k] === undefined || out[k] === null) out[k] = v;
  return out;
}

function requireModel(model: unknown, version: PromptVersion): void {
  if (model === undefined || model === null) {
    throw badRequest(
      `Prompt '${version.name}' version ${version.version} names no model: give one in the request`,
      'model',
    );
  }
}

/** The chat body with the prompt rendered in (its `prompt` field removed). */
export function renderChat(body: JsonObject, version: PromptVersion, variables: JsonObject): JsonObject {
  let written: Record<string, string> = {};
  try {
    written = writeVariables(version.messages, version.variables, variables);
  } catch (err) {
    variableError(err);
  }
  const messages = version.messages.map((m) => ({ ...m, content: renderText(m.content, written) }));
  const { prompt: _, ...rest } = body;
  const out = withDefaults(rest, {
    ...version.parameters,
    model: version.model,
    tools: version.tools,
    response_format: version.response_format,
  });
  requireModel(out.model, version);
  out.messages = [...messages, ...(Array.isArray(body.messages) ? body.messages : [])];
  return out;
}

const CONTENT_TYPES = new Set(['input_text', 'input_image', 'input_file']);
// A content object's place in the rendered text (private-use characters, which no variable writes).
const SLOT = /\uE000(\d+)\uE001/;

/**
 * Responses variables: strings, or input content objects (`input_text` as its text; an image or a file
 * becomes a content part of its own where the variable stands). Numbers and booleans come as text.
 */
function responsesMessages(version: PromptVersion, variables: JsonObject): JsonObject[] {
  const parts: JsonObject[] = [];
  const values: JsonObject = {};
  const declared: Record<string, VariableType> = { ...version.variables };
  for (const [name, value] of Object.entries(variables)) {
    if (!isObject(value)) values[name] = value;
    else if (value.type === 'input_text' && typeof value.text === 'string') values[name] = value.text;
    else if (typeof value.type === 'string' && CONTENT_TYPES.has(value.type)) {
      if ((declared[name] ?? 'string') !== 'string') {
        throw badRequest(
          `variable '${name}' is declared ${declared[name]}: a content object cannot fill it`,
          `prompt.variables.${name}`,
        );
      }
      values[name] = `\uE000${parts.length}\uE001`;
      parts.push(value);
    } else
      throw badRequest(
        `variable '${name}' must be a string or an input content object`,
        `prompt.variables.${name}`,
      );
  }
  let written: Record<string, string> = {};
  try {
    written = writeVariables(version.messages, declared, values, true);
  } catch (err) {
    variableError(err);
  }
  return version.messages.map((m) => {
    const text = renderText(m.content, written);
    if (!SLOT.test(text)) return { type: 'message', role: m.role, content: text };
    const content: JsonObject[] = [];
    text.split(SLOT).forEach((piece, i) => {
      if (i % 2 === 1) content.push(parts[Number(piece)] as JsonObject);
      else if (piece !== '')
        content.push({ type: m.role === 'assistant' ? 'output_text' : 'input_text', text: piece });
    });
    return { type: 'message', role: m.role, content };
  });
}

/** A chat tool as the Responses API declares it. */
function responsesTool(tool: NonNullable<PromptVersion['tools']>[number]): JsonObject {
  const { name, description, parameters, strict } = tool.function;
  return { type: 'function', name, description, parameters, strict: strict ?? null };
}

/** The Responses body with the prompt rendered in as input items before the request's own. */
export function renderResponses(body: JsonObject, version: PromptVersion, variables: JsonObject): JsonObject {
  const messages = responsesMessages(version, variables);
  const { prompt: _, ...rest } = body;
  const { max_tokens, ...parameters } = version.parameters as JsonObject;
  const format = version.response_format as JsonObject | null;
  // The Responses API's text.format carries a json_schema's name and schema beside its type.
  const text = format
    ? {
        format:
          format.type === 'json_schema' && isObject(format.json_schema)
            ? { type: 'json_schema', ...format.json_schema }
            : format,
      }
    : undefined;
  const out = withDefaults(rest, {
    ...parameters,
    ...(max_tokens !== undefined ? { max_output_tokens: max_tokens } : {}),
    model: version.model,
    tools: version.tools?.map(responsesTool),
    text,
  });
  requireModel(out.model, version);
  const input = body.input;
  const own =
    typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? input : [];
  out.input = [...messages, ...own];
  return out;
}

/** The declared variables a version uses (what a client must give). */
export function variablesNeeded(version: PromptVersion): string[] {
  return variablesOfMessages(version.messages);
}

/**
 * `preValidation` hooks of the gateway's chat and Responses routes: when the body names a prompt, the
 * body (and its text, which the task log keeps) is replaced by the rendered request before validation.
 */
export interface PromptHooks {
  chat(req: FastifyRequest): Promise<void>;
  responses(req: FastifyRequest): Promise<void>;
}

export function promptHooks(db: Kysely<Database>): PromptHooks {
  async function apply(
    req: FastifyRequest,
    reference: (body: JsonObject) => Reference | null,
    render: (body: JsonObject, version: PromptVersion, variables: JsonObject) => JsonObject,
  ): Promise<void> {
    if (!isObject(req.body)) return;
    const body = req.body;
    const r = reference(body);
    if (!r) {
      await compiledBy(req);
      return;
    }
    const version = await load(db, principalOf(req).projectId, r);
    const rendered = render(body, version, r.variables);
    req.body = rendered;
    req.bodyText = JSON.stringify(rendered);
    uses.set(req, { id: version.prompt_id, version: version.version });
  }
  /** A request compiled by the client: the version named must be one of the project's. */
  async function compiledBy(req: FastifyRequest): Promise<void> {
    const header = req.headers[COMPILED_HEADER];
    if (typeof header !== 'string' || header.trim() === '') return;
    const at = header.lastIndexOf('@');
    const which = at > 0 ? versionRef(header.slice(at + 1).trim(), COMPILED_HEADER) : {};
    if (which.version === undefined) {
      throw badRequest(`${COMPILED_HEADER} must name a version: <prompt>@<version>`, COMPILED_HEADER);
    }
    const r: Reference = { ref: header.slice(0, at).trim(), which, variables: {} };
    const version = await load(db, principalOf(req).projectId, r);
    uses.set(req, { id: version.prompt_id, version: version.version });
  }

  return {
    chat: (req: FastifyRequest) => apply(req, (body) => chatReference(req, body), renderChat),
    responses: (req: FastifyRequest) => apply(req, responsesReference, renderResponses),
  };
}
