import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import type {
  CreateEvaluator,
  Evaluator,
  EvaluatorDeletedResponse,
  ListEvaluatorsParams,
  PatchEvaluator,
} from '../types.js';
import type { Agreement, AgreementParams } from './review-types.js';
import { listPages, seg } from './shared.js';

/** `/v1/evaluators`: LLM judges and code evaluators. */
export class Evaluators {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Newest first, optionally of one container (id or label). */
  list(params: ListEvaluatorsParams = {}, options?: RequestOptions): PagePromise<Evaluator> {
    return listPages(this.#transport, '/v1/evaluators', params, options);
  }

  create(body: CreateEvaluator, options?: RequestOptions): Promise<Evaluator> {
    return this.#transport.request({ method: 'POST', path: '/v1/evaluators', json: body, options });
  }

  /** By id or name. */
  get(evaluator: string, options?: RequestOptions): Promise<Evaluator> {
    return this.#transport.request({ method: 'GET', path: `/v1/evaluators/${seg(evaluator)}`, options });
  }

  /** By id or name; `null` clears a nullable field. */
  update(evaluator: string, patch: PatchEvaluator, options?: RequestOptions): Promise<Evaluator> {
    return this.#transport.request({
      method: 'PATCH',
      path: `/v1/evaluators/${seg(evaluator)}`,
      json: patch,
      options,
    });
  }

  /** By id. */
  delete(evaluatorId: string, options?: RequestOptions): Promise<EvaluatorDeletedResponse> {
    return this.#transport.request({ method: 'DELETE', path: `/v1/evaluators/${seg(evaluatorId)}`, options });
  }

  /**
   * Judge–human agreement per prompt hash: over the evaluator's reviews (`queue` for one queue's), or over
   * a run of reviewed items (`run`); `compare` adds a second evaluator's figures side by side.
   */
  agreement(evaluator: string, params: AgreementParams = {}, options?: RequestOptions): Promise<Agreement> {
    return this.#transport.request({
      method: 'GET',
      path: `/v1/evaluators/${seg(evaluator)}/agreement`,
      query: params,
      options,
    });
  }
}
