import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import type { Model, ModelDeletedResponse, PatchModel, RegisterModel } from '../types.js';
import { listPages, seg } from './shared.js';

/** `/v1/models`: frontier models enabled by the operator and the project's registered models. */
export class Models {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Every model usable by the project (one page: the server does not paginate this list). */
  list(options?: RequestOptions): PagePromise<Model> {
    return listPages(this.#transport, '/v1/models', {}, options);
  }

  /** Registers a customer-specific model (an OpenAI-compatible server or an Anthropic endpoint). */
  register(body: RegisterModel, options?: RequestOptions): Promise<Model> {
    return this.#transport.request({ method: 'POST', path: '/v1/models', json: body, options });
  }

  /** A registered model by id or label, or a frontier model by slug (`openai/gpt-4o-mini`). */
  get(model: string, options?: RequestOptions): Promise<Model> {
    return this.#transport.request({ method: 'GET', path: `/v1/models/${seg(model)}`, options });
  }

  /** A registered model by id or label; `null` clears a nullable field. */
  update(model: string, patch: PatchModel, options?: RequestOptions): Promise<Model> {
    return this.#transport.request({
      method: 'PATCH',
      path: `/v1/models/${seg(model)}`,
      json: patch,
      options,
    });
  }

  /** A registered model by id (`mdl_…`). */
  delete(modelId: string, options?: RequestOptions): Promise<ModelDeletedResponse> {
    return this.#transport.request({ method: 'DELETE', path: `/v1/models/${seg(modelId)}`, options });
  }
}
