/** One page of a `page` / `per_page` list. */
export interface Page<T> {
  data: T[];
  total: number;
  page: number;
  per_page: number;
}

type PageOf<P> = P extends Page<infer T> ? T : never;

/**
 * What a paginated list method returns: `await` it for one page, or iterate it with `for await` to get every item
 * of every page (pages are fetched as the loop reaches them). `.pages()` iterates whole pages.
 */
export class PagePromise<P extends Page<unknown>> implements PromiseLike<P>, AsyncIterable<PageOf<P>> {
  private first?: Promise<P>;

  constructor(
    private readonly fetchPage: (page: number) => Promise<P>,
    private readonly startPage = 1,
  ) {}

  private firstPage(): Promise<P> {
    return (this.first ??= this.fetchPage(this.startPage));
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
      const seen = (page.page - 1) * page.per_page + page.data.length;
      if (page.data.length === 0 || seen >= page.total) return;
      page = await this.fetchPage(page.page + 1);
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<PageOf<P>, void, undefined> {
    for await (const page of this.pages()) {
      for (const item of page.data) yield item as PageOf<P>;
    }
  }

  /** Every item of every page in one array (mind the size of what you list). */
  async toArray(): Promise<PageOf<P>[]> {
    const all: PageOf<P>[] = [];
    for await (const item of this) all.push(item);
    return all;
  }
}
