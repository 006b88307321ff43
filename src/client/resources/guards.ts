import type {
  CreateGuardPolicy,
  GuardPolicy,
  GuardVerdict,
  UpdateGuardPolicy,
  VerdictKind,
} from '../../guards/schemas.js';
import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import { listPages, seg } from './shared.js';

export type { CreateGuardPolicy, GuardPolicy, GuardVerdict, UpdateGuardPolicy };

/** `/v1/guards`: the project's guard policies (checks the gateway runs on calls) and their verdicts. */
export class Guards {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Policies in the order the gateway applies them. */
  list(query: { limit?: number; offset?: number } = {}, options?: RequestOptions): PagePromise<GuardPolicy> {
    return listPages(this.#transport, '/v1/guards', { ...query }, options);
  }

  create(body: CreateGuardPolicy, options?: RequestOptions): Promise<GuardPolicy> {
    return this.#transport.request({ method: 'POST', path: '/v1/guards', json: body, options });
  }

  /** A policy by id (`grd_…`) or name. */
  get(policy: string, options?: RequestOptions): Promise<GuardPolicy> {
    return this.#transport.request({ method: 'GET', path: `/v1/guards/${seg(policy)}`, options });
  }

  update(policy: string, patch: UpdateGuardPolicy, options?: RequestOptions): Promise<GuardPolicy> {
    return this.#transport.request({
      method: 'PATCH',
      path: `/v1/guards/${seg(policy)}`,
      json: patch,
      options,
    });
  }

  delete(
    policy: string,
    options?: RequestOptions,
  ): Promise<{ id: string; object: 'guard_policy'; deleted: true }> {
    return this.#transport.request({ method: 'DELETE', path: `/v1/guards/${seg(policy)}`, options });
  }

  /** Verdicts, newest first: one score per check per recorded call. */
  verdicts(
    filter: { task_log_id?: string; guard?: string; verdict?: VerdictKind; limit?: number } = {},
    options?: RequestOptions,
  ): PagePromise<GuardVerdict> {
    return listPages(this.#transport, '/v1/guards/verdicts', { ...filter }, options);
  }
}
