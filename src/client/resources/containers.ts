import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import type {
  Container,
  ContainerDeletedResponse,
  CreateContainer,
  ListContainersParams,
  PatchContainer,
} from '../types.js';
import { listPages, seg } from './shared.js';

/** `/v1/containers`: the scopes of applications, their traffic, evaluators and runs. */
export class Containers {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  list(params: ListContainersParams = {}, options?: RequestOptions): PagePromise<Container> {
    return listPages(this.#transport, '/v1/containers', params, options);
  }

  create(body: CreateContainer, options?: RequestOptions): Promise<Container> {
    return this.#transport.request({ method: 'POST', path: '/v1/containers', json: body, options });
  }

  /** By id or label. */
  get(container: string, options?: RequestOptions): Promise<Container> {
    return this.#transport.request({ method: 'GET', path: `/v1/containers/${seg(container)}`, options });
  }

  /** By id or label. */
  update(container: string, patch: PatchContainer, options?: RequestOptions): Promise<Container> {
    return this.#transport.request({
      method: 'PATCH',
      path: `/v1/containers/${seg(container)}`,
      json: patch,
      options,
    });
  }

  /** By id. */
  delete(containerId: string, options?: RequestOptions): Promise<ContainerDeletedResponse> {
    return this.#transport.request({ method: 'DELETE', path: `/v1/containers/${seg(containerId)}`, options });
  }
}
