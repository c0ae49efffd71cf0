import type { ConflictReason, LimitReachedBody } from './generated/api.js';
import { responseInfo, type ResponseInfo } from './response.js';

/** Every error the SDK throws is an OfferkitError. */
export class OfferkitError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The body the service answers errors with: `{ error, ...extra }`. */
export interface ErrorBody {
  error: string;
  [key: string]: unknown;
}

/**
 * The service answered with a status outside 2xx. `status`, `message` (the body's `error`, or its plain-language
 * `message` when `error` is a code such as `limit_reached`) and the parsed `body` are always there.
 */
export class APIError<B = ErrorBody> extends OfferkitError {
  readonly status: number;
  readonly body: B;
  readonly headers: Headers;
  /** The `X-Request-Id` the service logged the request under, when it sent one. */
  readonly requestId: string | null;
  /** What the headers say, as `.withResponse()` gives it: `retryAfter` and `rateLimit` on a 429, for example. */
  readonly response: ResponseInfo;

  constructor(status: number, body: B, headers: Headers, message?: string) {
    super(message ?? messageOf(status, body));
    this.status = status;
    this.body = body;
    this.headers = headers;
    this.requestId = headers.get('x-request-id');
    this.response = responseInfo({ status, headers });
  }

  /** The subclass for a status: `catch (e) { if (e instanceof NotFoundError) ... }`. */
  static from(status: number, body: unknown, headers: Headers): APIError<unknown> {
    const b = body as ErrorBody;
    switch (status) {
      case 400:
        return new BadRequestError(status, b, headers);
      case 401:
        return new AuthenticationError(status, b, headers);
      case 402:
        return new LimitReachedError(status, body as LimitReachedBody, headers);
      case 403:
        return new PermissionDeniedError(status, b, headers);
      case 404:
        return new NotFoundError(status, b, headers);
      case 409:
        return new ConflictError(status, b, headers);
      case 429:
        return new RateLimitError(status, b, headers);
      case 502:
        return new ProviderError(status, b, headers);
      default:
        return status >= 500 ? new InternalServerError(status, b, headers) : new APIError(status, body, headers);
    }
  }
}

function messageOf(status: number, body: unknown): string {
  if (body && typeof body === 'object') {
    const b = body as { error?: unknown; message?: unknown };
    if (typeof b.message === 'string' && b.message) return b.message;
    if (typeof b.error === 'string' && b.error) return b.error;
  }
  if (typeof body === 'string' && body) return `${status}: ${body.slice(0, 200)}`;
  return `HTTP ${status}`;
}

/** 400: invalid JSON or an invalid field (`<field>: <message>`). */
export class BadRequestError extends APIError {}
/** 401: no credential, a wrong one, or one this route does not take. */
export class AuthenticationError extends APIError {}
/** 403: not allowed for this credential. */
export class PermissionDeniedError extends APIError {}
/** 404: a record in the path (or named by the body) does not exist. */
export class NotFoundError extends APIError {}
/**
 * 409: conflicts with the current state. `reason` says why when the caller can act on it (an offer that cannot be
 * bought, a plan change refused, ...): one of `ConflictReason`, so a `switch` on it is checked by the compiler.
 */
export class ConflictError extends APIError<ErrorBody & { reason?: ConflictReason }> {
  get reason(): ConflictReason | undefined {
    return this.body.reason;
  }
}
/** 429: too many requests. `retryAfter`: the seconds the service asks to wait (`Retry-After`), when it says. */
export class RateLimitError extends APIError {
  get retryAfter(): number | null {
    return this.response.retryAfter;
  }
}
/** 5xx: the service failed. */
export class InternalServerError extends APIError {}
/** 502: the payment provider returned an error (the message starts with its name). */
export class ProviderError extends InternalServerError {}

/**
 * 402: the call would pass a blocking usage limit; the counter did not move. `body.offer` is the upgrade to show
 * (null when there is none), with its `checkout_url`.
 */
export class LimitReachedError extends APIError<LimitReachedBody> {
  get offer(): LimitReachedBody['offer'] {
    return this.body.offer;
  }
  get entitlement(): LimitReachedBody['entitlement'] {
    return this.body.entitlement;
  }
}

/** No answer: the connection failed (DNS, refused, reset, CORS in a browser). */
export class APIConnectionError extends OfferkitError {}

/** No answer within the timeout. */
export class APITimeoutError extends APIConnectionError {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`Request timed out after ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/** A webhook delivery failed verification (forged, altered, too old, or signed with another secret). */
export class WebhookVerificationError extends OfferkitError {}
