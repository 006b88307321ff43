import type { Query, RequestOptions, Transport } from '../http.js';
import { type ListResponse, PagePromise } from '../pagination.js';

/** A path segment: ids, labels and slugs (`openai/gpt-4o`) are sent URL-encoded. */
export const seg = (value: string): string => encodeURIComponent(value);

/** A list endpoint as a PagePromise: the first page when awaited, every item when iterated. */
export function listPages<T>(
  transport: Transport,
  path: string,
  query: Query = {},
  options?: RequestOptions,
): PagePromise<T> {
  const first = typeof query.offset === 'number' ? query.offset : 0;
  return new PagePromise<T>(
    (offset) =>
      transport.request<ListResponse<T>>({
        method: 'GET',
        path,
        query: { ...query, offset: offset || undefined },
        options,
      }),
    first,
  );
}
