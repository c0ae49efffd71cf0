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
  /** `Retry-After` in seconds (on a 429 or 503, for example), when the service sent it. */
  retryAfter: number | null;
}

export function responseInfo(res: { status: number; headers: Headers }): ResponseInfo {
  const h = res.headers;
  const limit = h.get('ratelimit-limit');
  const retryAfter = h.get('retry-after');
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
    retryAfter: retryAfter === null ? null : secondsOf(retryAfter),
  };
}

/** `Retry-After` as seconds: a number of seconds, or an HTTP date. */
function secondsOf(value: string): number | null {
  const s = Number(value);
  if (value.trim() !== '' && Number.isFinite(s)) return s;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - Date.now()) / 1000)) : null;
}

/** What the client's transport hands an APIPromise: the parsed body, what the headers say, and the raw answer. */
export interface Answer<T> {
  data: T;
  response: ResponseInfo;
  /** The answer as fetch gave it, its body unread (a copy: reading it does not disturb `data`). */
  raw: Response;
}

/**
 * What every method returns: a promise of the answer's body (`await client.accounts.get('alice')`), which can also
 * give the answer's status and headers: `const { data, response } = await client.usage.add(...).withResponse()`, or
 * the fetch `Response` itself: `await client.accounts.get('alice').asResponse()`. Either way the call is made once.
 */
export class APIPromise<T> extends Promise<T> {
  private parsed: Promise<T> | undefined;

  constructor(private readonly answer: Promise<Answer<T>>) {
    // The executor resolves a placeholder: `then` below reads `answer` instead (so the call runs once).
    super((resolve) => resolve(null as T));
  }

  /** Promise methods that make a new promise (`then`, `catch`, `finally`) make a plain Promise, not an APIPromise. */
  static override get [Symbol.species]() {
    return Promise;
  }

  /**
   * The body and what the answer's headers say: `status`, `requestId` (`X-Request-Id`), `replayed`
   * (`Idempotent-Replayed`), `rateLimit` (`RateLimit-*`), `retryAfter`, and every header as `headers`.
   */
  withResponse(): Promise<{ data: T; response: ResponseInfo }> {
    return this.answer.then(({ data, response }) => ({ data, response }));
  }

  /** The answer as fetch gave it (status, headers, the body unread), like openai-node's `asResponse()`. */
  asResponse(): Promise<Response> {
    return this.answer.then((a) => a.raw.clone());
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
