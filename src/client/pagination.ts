import type { ListResponse } from '../http/schemas.js';

/** The server's list shape: one page of items and the total across all pages. */
export type { ListResponse };

/** Fetches the page that starts at `offset` (with the list's other parameters). */
export type PageFetcher<T> = (offset: number) => Promise<ListResponse<T>>;

/**
 * One page of a list (`data`, `total`, `offset`), which is also an async iterable over every item from
 * this page on, fetching the following pages as it goes (by `limit`/`offset`, until `total`). Items
 * created or deleted during an iteration shift the pages (lists are newest first), so an item may then
 * be seen twice or not at all.
 */
export class Page<T> implements AsyncIterable<T> {
  readonly object = 'list' as const;
  readonly data: T[];
  readonly total: number;
  /** The position of `data[0]` in the whole list. */
  readonly offset: number;

  constructor(
    private readonly fetchPage: PageFetcher<T>,
    body: ListResponse<T>,
    offset: number,
  ) {
    this.data = body.data;
    this.total = body.total;
    this.offset = offset;
  }

  hasNextPage(): boolean {
    return this.data.length > 0 && this.offset + this.data.length < this.total;
  }

  /** The next page, or null after the last one. */
  async nextPage(): Promise<Page<T> | null> {
    if (!this.hasNextPage()) return null;
    const offset = this.offset + this.data.length;
    return new Page(this.fetchPage, await this.fetchPage(offset), offset);
  }

  /** This page and every following one. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let page: Page<T> | null = this;
    while (page) {
      yield page;
      page = await page.nextPage();
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item from this page on, in one array (mind the size of the list). */
  async toArray(): Promise<T[]> {
    const all: T[] = [];
    for await (const item of this) all.push(item);
    return all;
  }
}

/**
 * What list methods return: awaited, the first page; iterated with `for await`, every item of every page.
 * Nothing is requested until it is awaited or iterated.
 */
export class PagePromise<T> implements Promise<Page<T>>, AsyncIterable<T> {
  readonly [Symbol.toStringTag] = 'PagePromise';
  #page: Promise<Page<T>> | null = null;

  constructor(
    private readonly fetchPage: PageFetcher<T>,
    private readonly firstOffset = 0,
  ) {}

  #load(): Promise<Page<T>> {
    this.#page ??= this.fetchPage(this.firstOffset).then(
      (body) => new Page(this.fetchPage, body, this.firstOffset),
    );
    return this.#page;
  }

  // biome-ignore lint/suspicious/noThenProperty: a PagePromise is a promise of the first page by design.
  then<A = Page<T>, B = never>(
    onFulfilled?: ((page: Page<T>) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.#load().then(onFulfilled, onRejected);
  }

  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<Page<T> | B> {
    return this.#load().catch(onRejected);
  }

  finally(onFinally?: (() => void) | null): Promise<Page<T>> {
    return this.#load().finally(onFinally);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    yield* await this.#load();
  }

  /** Every item of the list, in one array (mind the size of the list). */
  async toArray(): Promise<T[]> {
    return (await this.#load()).toArray();
  }
}
