import type {
  CreatePrompt,
  CreatePromptVersion,
  ListPromptsQuery,
  Prompt,
  PromptDiff,
  PromptLabel,
  PromptSummary,
  PromptVersion,
} from '../../prompts/schemas.js';
import { type PromptMessage, renderMessages } from '../../prompts/template.js';
import { APIConnectionError, APIError } from '../errors.js';
import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import { listPages, seg } from './shared.js';

export type {
  CreatePrompt,
  CreatePromptVersion,
  Prompt,
  PromptDiff,
  PromptLabel,
  PromptSummary,
  PromptVersion,
};

/** The header that tells the gateway a request's messages were compiled from a stored version. */
export const PROMPT_COMPILED_HEADER = 'X-Evalgate-Prompt-Compiled';

export interface GetPromptOptions {
  /** A label (`production`, `staging`, …); default: the latest version. */
  label?: string;
  /** A version number instead of a label. */
  version?: number;
  /** Seconds a fetched prompt is served from the cache before it is fetched again (default 60; 0: always fetch). */
  ttl?: number;
}

/**
 * A prompt version fetched for local use: `compile(variables)` renders its messages with the server's
 * template engine (typed variables checked the same way); `headers` go with a gateway call made with
 * the compiled messages, so that its task log names this version.
 */
export class FetchedPrompt {
  /** True when the server could not be reached and this is the last version fetched. */
  readonly stale: boolean;
  constructor(
    readonly prompt: Prompt,
    stale = false,
  ) {
    this.stale = stale;
  }

  get id(): string {
    return this.prompt.id;
  }
  get name(): string {
    return this.prompt.name;
  }
  get version(): number {
    return this.prompt.version.version;
  }
  get model(): string | null {
    return this.prompt.version.model;
  }
  get parameters(): Record<string, unknown> {
    return this.prompt.version.parameters as Record<string, unknown>;
  }

  /** The messages rendered at `variables`; throws `PromptVariableError` for a missing or mistyped one. */
  compile(variables: Record<string, unknown> = {}): PromptMessage[] {
    return renderMessages(this.prompt.version.messages, this.prompt.version.variables, variables);
  }

  /** `X-Evalgate-Prompt-Compiled: <id>@<version>`, for the gateway call made with the compiled messages. */
  get headers(): Record<string, string> {
    return { [PROMPT_COMPILED_HEADER]: `${this.prompt.id}@${this.version}` };
  }
}

interface Cached {
  prompt: Prompt;
  fetchedAt: number;
}

/** `/v1/prompts`: versioned prompts, their labels, diffs and rollbacks, and a cached fetch for local use. */
export class Prompts {
  readonly #transport: Transport;
  readonly #cache = new Map<string, Cached>();

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  list(params: ListPromptsQuery = {}, options?: RequestOptions): PagePromise<PromptSummary> {
    return listPages(this.#transport, '/v1/prompts', params, options);
  }

  create(body: CreatePrompt, options?: RequestOptions): Promise<Prompt> {
    return this.#transport.request({ method: 'POST', path: '/v1/prompts', json: body, options });
  }

  /** By id or name, at a label or a version (default: the latest). */
  get(
    prompt: string,
    which: { label?: string; version?: number } = {},
    options?: RequestOptions,
  ): Promise<Prompt> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/prompts/${seg(prompt)}`,
      query: { label: which.label, version: which.version },
      options,
    });
  }

  createVersion(prompt: string, body: CreatePromptVersion, options?: RequestOptions): Promise<PromptVersion> {
    return this.#transport.request({
      method: 'POST',
      path: `/v1/prompts/${seg(prompt)}/versions`,
      json: body,
      options,
    });
  }

  listVersions(prompt: string, params: { limit?: number; offset?: number } = {}, options?: RequestOptions) {
    return listPages<PromptVersion>(this.#transport, `/v1/prompts/${seg(prompt)}/versions`, params, options);
  }

  getVersion(prompt: string, version: number, options?: RequestOptions): Promise<PromptVersion> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/prompts/${seg(prompt)}/versions/${version}`,
      options,
    });
  }

  diff(prompt: string, from: number, to: number, options?: RequestOptions): Promise<PromptDiff> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/prompts/${seg(prompt)}/diff`,
      query: { from, to },
      options,
    });
  }

  moveLabel(prompt: string, label: string, version: number, options?: RequestOptions): Promise<PromptLabel> {
    return this.#transport.request({
      method: 'PUT',
      path: `/v1/prompts/${seg(prompt)}/labels/${seg(label)}`,
      json: { version },
      options,
    });
  }

  rollbackLabel(prompt: string, label: string, options?: RequestOptions): Promise<PromptLabel> {
    return this.#transport.request({
      method: 'POST',
      path: `/v1/prompts/${seg(prompt)}/labels/${seg(label)}/rollback`,
      options,
    });
  }

  deleteLabel(prompt: string, label: string, options?: RequestOptions) {
    return this.#transport.request<{
      object: 'prompt.label';
      prompt_id: string;
      name: string;
      deleted: true;
    }>({
      method: 'DELETE',
      path: `/v1/prompts/${seg(prompt)}/labels/${seg(label)}`,
      options,
    });
  }

  /**
   * A prompt for local use, cached for `ttl` seconds (default 60). When the server cannot be reached the
   * last version fetched is answered (`stale: true`); other errors (404, 403) are thrown.
   */
  async getPrompt(
    name: string,
    opts: GetPromptOptions = {},
    options?: RequestOptions,
  ): Promise<FetchedPrompt> {
    const key = `${name}\u0000${opts.label ?? ''}\u0000${opts.version ?? ''}`;
    const ttlMs = (opts.ttl ?? 60) * 1000;
    const hit = this.#cache.get(key);
    if (hit && Date.now() - hit.fetchedAt < ttlMs) return new FetchedPrompt(hit.prompt);
    try {
      const prompt = await this.get(name, { label: opts.label, version: opts.version }, options);
      this.#cache.set(key, { prompt, fetchedAt: Date.now() });
      return new FetchedPrompt(prompt);
    } catch (err) {
      // Unreachable: no connection, or a proxy in front answering that the server is down.
      const unreachable = err instanceof APIConnectionError || (err instanceof APIError && err.status >= 502);
      if (hit && unreachable) return new FetchedPrompt(hit.prompt, true);
      throw err;
    }
  }

  /** Forgets cached prompts (all, or one name's). */
  clearCache(name?: string): void {
    if (name === undefined) this.#cache.clear();
    else for (const key of this.#cache.keys()) if (key.startsWith(`${name}\u0000`)) this.#cache.delete(key);
  }
}
