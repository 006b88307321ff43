import type { RequestOptions, Transport } from '../http.js';
import type { PagePromise } from '../pagination.js';
import type { ApiKey, CreateApiKey, CreatedApiKey, PageParams, UpdateApiKey } from '../types.js';
import { listPages, seg } from './shared.js';

/** `/v1/api-keys`: keys of the calling key's project (`keys:read` / `keys:write`). */
export class ApiKeys {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** A new key; its secret `key` is in this response only. A key can grant only what it holds itself. */
  create(body: CreateApiKey, options?: RequestOptions): Promise<CreatedApiKey> {
    return this.#transport.request({ method: 'POST', path: '/v1/api-keys', json: body, options });
  }

  list(params: PageParams = {}, options?: RequestOptions): PagePromise<ApiKey> {
    return listPages(this.#transport, '/v1/api-keys', params, options);
  }

  /** One key, with its budget and the spend of its current period. */
  retrieve(keyId: string, options?: RequestOptions): Promise<ApiKey> {
    return this.#transport.request({ method: 'GET', path: `/v1/api-keys/${seg(keyId)}`, options });
  }

  /** Renames a key or sets its budget (`budget: null` removes it); a key cannot change its own budget. */
  update(keyId: string, body: UpdateApiKey, options?: RequestOptions): Promise<ApiKey> {
    return this.#transport.request({
      method: 'PATCH',
      path: `/v1/api-keys/${seg(keyId)}`,
      json: body,
      options,
    });
  }

  /** Revokes a key by id (`key_…`); it is refused from then on. Returns the revoked key. */
  revoke(keyId: string, options?: RequestOptions): Promise<ApiKey> {
    return this.#transport.request({ method: 'DELETE', path: `/v1/api-keys/${seg(keyId)}`, options });
  }
}
