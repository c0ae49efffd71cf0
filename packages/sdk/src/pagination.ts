/** One page of a `page` / `per_page` list. */
export interface Page<T> {
  data: T[];
  total: number;
  page: number;
  per_page: number;
}

/** One page of a cursor list (`limit` / `cursor`): pass `next_cursor` as `cursor` for the next; null on the last. */
export interface CursorPage<T> {
  data: T[];
  next_cursor: string | null;
}

type ItemOf<P> = P extends { data: (infer T)[] } ? T : never;

/**
 * What a list method returns: `await` it for one page, or iterate it with `for await` to get every item of every
 * page (pages are fetched as the loop reaches them). `.pages()` iterates whole pages.
 */
abstract class ListPromise<P extends { data: unknown[] }> implements PromiseLike<P>, AsyncIterable<ItemOf<P>> {
  private first?: Promise<P>;

  /** The first page asked for. */
  protected abstract fetchFirst(): Promise<P>;
  /** The page after `page`, or null when `page` is the last. */
  protected abstract fetchNext(page: P): Promise<P> | null;

  private firstPage(): Promise<P> {
    return (this.first ??= this.fetchFirst());
  }

  then<R1 = P, R2 = never>(
    onfulfilled?: ((value: P) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.firstPage().then(onfulfilled, onrejected);
  }

  catch<R = never>(onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<P | R> {
    return this.firstPage().catch(onrejected);
  }

  /** Every page from the first asked for to the last. */
  async *pages(): AsyncGenerator<P, void, undefined> {
    let page = await this.firstPage();
    for (;;) {
      yield page;
      if (page.data.length === 0) return;
      const next = this.fetchNext(page);
      if (!next) return;
      page = await next;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ItemOf<P>, void, undefined> {
    for await (const page of this.pages()) {
      for (const item of page.data) yield item as ItemOf<P>;
    }
  }

  /** Every item of every page in one array (mind the size of what you list). */
  async toArray(): Promise<ItemOf<P>[]> {
    const all: ItemOf<P>[] = [];
    for await (const item of this) all.push(item);
    return all;
  }
}

/** A `page` / `per_page` list: the next page until `total` items have been seen. */
export class PagePromise<P extends Page<unknown>> extends ListPromise<P> {
  constructor(
    private readonly fetchPage: (page: number) => Promise<P>,
    private readonly startPage = 1,
  ) {
    super();
  }

  protected fetchFirst(): Promise<P> {
    return this.fetchPage(this.startPage);
  }

  protected fetchNext(page: P): Promise<P> | null {
    const seen = (page.page - 1) * page.per_page + page.data.length;
    return seen >= page.total ? null : this.fetchPage(page.page + 1);
  }
}

/** A cursor list: the next page from each page's `next_cursor` until it is null. */
export class CursorPagePromise<P extends CursorPage<unknown>> extends ListPromise<P> {
  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<P>,
    private readonly startCursor?: string,
  ) {
    super();
  }

  protected fetchFirst(): Promise<P> {
    return this.fetchPage(this.startCursor);
  }

  protected fetchNext(page: P): Promise<P> | null {
    return page.next_cursor ? this.fetchPage(page.next_cursor) : null;
  }
}
