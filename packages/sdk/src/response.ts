/** What a call's answer said besides its body: read it with `.withResponse()`. */
export interface ResponseInfo {
  status: number;
  headers: Headers;
  /** `X-Request-Id`: the id the service logged the request under (quote it in a support request). */
  requestId: string | null;
  /** `Idempotent-Replayed: true`: the answer is the first one of an earlier call with the same idempotency key. */
  replayed: boolean;
  /** `RateLimit-*` (the publishable key's per-client limit, for example), when the service sent them. */
  rateLimit: { limit: number; remaining: number; resetSeconds: number } | null;
}

export function responseInfo(res: { status: number; headers: Headers }): ResponseInfo {
  const h = res.headers;
  const limit = h.get('ratelimit-limit');
  return {
    status: res.status,
    headers: h,
    requestId: h.get('x-request-id'),
    replayed: h.get('idempotent-replayed') === 'true',
    rateLimit:
      limit === null
        ? null
        : {
            limit: Number(limit),
            remaining: Number(h.get('ratelimit-remaining') ?? 0),
            resetSeconds: Number(h.get('ratelimit-reset') ?? 0),
          },
  };
}

/**
 * What every method returns: a promise of the answer's body (`await client.accounts.get('alice')`), which can also
 * give the answer's status and headers: `const { data, response } = await client.usage.add(...).withResponse()`.
 */
export class APIPromise<T> extends Promise<T> {
  private parsed: Promise<T> | undefined;

  constructor(private readonly answer: Promise<{ data: T; response: ResponseInfo }>) {
    // The executor resolves a placeholder: `then` below reads `answer` instead (so the call runs once).
    super((resolve) => resolve(null as T));
  }

  /** Promise methods that make a new promise (`then`, `catch`, `finally`) make a plain Promise, not an APIPromise. */
  static override get [Symbol.species]() {
    return Promise;
  }

  /** The body and the answer's status and headers. */
  withResponse(): Promise<{ data: T; response: ResponseInfo }> {
    return this.answer;
  }

  private body(): Promise<T> {
    return (this.parsed ??= this.answer.then((a) => a.data));
  }

  override then<R1 = T, R2 = never>(
    onfulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    // `any`, as the standard library's Promise has it: a handler may name the error type it expects.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    onrejected?: ((reason: any) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.body().then(onfulfilled, onrejected);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override catch<R = never>(onrejected?: ((reason: any) => R | PromiseLike<R>) | null): Promise<T | R> {
    return this.body().catch(onrejected);
  }

  override finally(onfinally?: (() => void) | null): Promise<T> {
    return this.body().finally(onfinally);
  }
}
