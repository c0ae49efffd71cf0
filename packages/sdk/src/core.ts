import { APIConnectionError, APIError, APITimeoutError, OfferkitError } from './errors.js';
import type { Operation } from './generated/api.js';
import { APIPromise, responseInfo, type Answer } from './response.js';

/** Options every client takes. */
export interface ClientOptions {
  /** The service's address, e.g. `https://api.example.com` (no trailing path). */
  baseUrl: string;
  /** Milliseconds to wait for each attempt's answer (default 30,000). */
  timeout?: number;
  /**
   * Retries after a connection failure, a timeout, or a 408, 429, 500, 502, 503 or 504, for calls that are safe to
   * repeat: GET, PUT and DELETE, and POSTs that carry an idempotency key (default 2). A 503 whose body says
   * `outcome: "unknown"` (the change may have been applied) is not retried.
   */
  maxRetries?: number;
  /**
   * Send an `Idempotency-Key` with every POST (generated per call, the same on each retry), which also makes POSTs
   * retryable. Default true; with false, POSTs are sent once unless a call passes its own `idempotencyKey`.
   */
  idempotencyKeys?: boolean;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** A fetch implementation (default: the global one, Node 18+ and browsers). */
  fetch?: typeof fetch;
}

/** Options of a single call; they override the client's. */
export interface RequestOptions {
  timeout?: number;
  maxRetries?: number;
  /** The `Idempotency-Key` of this call (POSTs get a generated one unless `idempotencyKeys` is off). */
  idempotencyKey?: string;
  headers?: Record<string, string>;
  /** Cancels the call (an AbortError is thrown as is). */
  signal?: AbortSignal;
}

const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
const SAFE_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
const VERSION = '0.1.0';

export class Core {
  readonly baseUrl: string;
  readonly appId: string;
  private readonly credential: string;
  private readonly opts: ClientOptions;
  private readonly fetchImpl: typeof fetch;

  constructor(credential: string, appId: string, opts: ClientOptions) {
    if (!opts?.baseUrl) throw new OfferkitError('baseUrl is required');
    if (!credential) throw new OfferkitError('a credential is required');
    if (!appId) throw new OfferkitError('appId is required');
    this.credential = credential;
    this.appId = appId;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.opts = opts;
    const f = opts.fetch ?? globalThis.fetch;
    if (!f) throw new OfferkitError('no fetch implementation: pass one as `fetch` (Node 18+ has one built in)');
    this.fetchImpl = f.bind(globalThis);
  }

  /** Fills the operation's path and sends it. */
  call(
    op: Operation,
    pathArgs: string[],
    body: unknown,
    query: Record<string, unknown> | undefined,
    o?: RequestOptions,
  ) {
    let i = 0;
    const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
      if (name === 'appId') return encodeURIComponent(this.appId);
      const v = pathArgs[i++];
      if (typeof v !== 'string' || v === '') throw new OfferkitError(`${op.name}: ${name} is required`);
      return encodeURIComponent(v);
    });
    return this.request(op.method, path, { body: op.body ? (body ?? {}) : undefined, query, options: o });
  }

  /** Sends a request; the body, or with `.withResponse()` the body and the answer's status and headers. */
  request(
    method: string,
    path: string,
    req: { body?: unknown; query?: Record<string, unknown> | undefined; options?: RequestOptions | undefined } = {},
  ): APIPromise<unknown> {
    return new APIPromise(this.send(method, path, req));
  }

  private async send(
    method: string,
    path: string,
    req: { body?: unknown; query?: Record<string, unknown> | undefined; options?: RequestOptions | undefined },
  ): Promise<Answer<unknown>> {
    const o = req.options ?? {};
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = {
      Accept: 'application/json',
      Authorization: `Bearer ${this.credential}`,
      ...this.opts.headers,
      ...o.headers,
    };
    if (req.body !== undefined) headers['Content-Type'] = 'application/json';
    if (typeof process !== 'undefined' && process.versions?.node) headers['User-Agent'] = `offerkit-sdk/${VERSION}`;
    let idempotencyKey = o.idempotencyKey;
    if (!idempotencyKey && method === 'POST' && this.opts.idempotencyKeys !== false) idempotencyKey = newKey();
    if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
    const retryable = SAFE_METHODS.has(method) || !!idempotencyKey;
    const maxRetries = retryable ? (o.maxRetries ?? this.opts.maxRetries ?? 2) : 0;
    const timeout = o.timeout ?? this.opts.timeout ?? 30_000;
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);

    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.attempt(url, { method, headers, body: payload ?? null }, timeout, o.signal);
      } catch (err) {
        if (isAbort(err) && o.signal?.aborted) throw err;
        if (attempt < maxRetries) {
          await sleep(backoff(attempt, null));
          continue;
        }
        throw err;
      }
      if (res.ok) {
        const raw = res.clone();
        return { data: await parseBody(res), response: responseInfo(res), raw };
      }
      if (attempt < maxRetries && RETRY_STATUSES.has(res.status)) {
        // The database stopped answering while it committed the change: it may be applied. Not retried, so the
        // caller sees that answer rather than a later, plainer one (`body.outcome === 'unknown'`).
        if (res.status === 503) {
          const body = await parseBody(res.clone());
          if ((body as { outcome?: unknown } | null)?.outcome === 'unknown')
            throw APIError.from(res.status, body, res.headers);
        }
        await res.body?.cancel().catch(() => undefined);
        await sleep(backoff(attempt, res.headers.get('retry-after')));
        continue;
      }
      throw APIError.from(res.status, await parseBody(res), res.headers);
    }
  }

  private async attempt(url: URL, init: RequestInit, timeout: number, signal?: AbortSignal): Promise<Response> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeout);
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await this.fetchImpl(url, { ...init, signal: controller.signal });
      // The body is read inside the timeout too: a stalled body is a timeout, not a hang.
      const buf = await res.arrayBuffer();
      return new Response(res.status === 204 || res.status === 304 ? null : buf, {
        status: res.status,
        headers: res.headers,
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      if (controller.signal.aborted) throw new APITimeoutError(timeout);
      throw new APIConnectionError(`Connection error: ${describe(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

async function parseBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return null;
  if ((res.headers.get('content-type') ?? '').includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/** 0.5 s, 1 s, 2 s ... (at most 8 s) with jitter, or what `Retry-After` asks for (at most 60 s). */
function backoff(attempt: number, retryAfter: string | null): number {
  if (retryAfter) {
    const s = Number(retryAfter);
    const ms = Number.isFinite(s) ? s * 1000 : Date.parse(retryAfter) - Date.now();
    if (Number.isFinite(ms) && ms >= 0 && ms <= 60_000) return ms;
  }
  const base = Math.min(500 * 2 ** attempt, 8000);
  return base * (0.75 + Math.random() * 0.25);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function isAbort(err: unknown): boolean {
  return (err as { name?: string } | null)?.name === 'AbortError';
}

function describe(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } } | null;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return [e?.message ?? String(err), cause].filter(Boolean).join(': ');
}

function newKey(): string {
  const c = globalThis.crypto;
  if (c?.randomUUID) return `sdk_${c.randomUUID()}`;
  return `sdk_${Date.now().toString(36)}_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
}

declare const process: { versions?: { node?: string } } | undefined;
