export {
  AccountTokenClient,
  PublishableClient,
  SecretClient,
  decodeAccountToken,
  type AccountTokenClientOptions,
  type AccountTokenInfo,
  type PublishableClientOptions,
  type SecretClientOptions,
  type SecretClientResources,
} from './client.js';
export type { ClientOptions, RequestOptions } from './core.js';
export {
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  InternalServerError,
  LimitReachedError,
  NotFoundError,
  OfferkitError,
  PermissionDeniedError,
  ProviderError,
  RateLimitError,
  WebhookVerificationError,
  type ErrorBody,
} from './errors.js';
export { CursorPagePromise, PagePromise, type CursorPage, type Page } from './pagination.js';
export { APIPromise, type ResponseInfo } from './response.js';
export { signWebhook, verifyWebhook, type HeadersLike, type VerifyOptions } from './webhooks.js';
export * from './generated/api.js';
export type { components, paths } from './generated/openapi.js';
export { streamChanges, type ChangeEvent, type StreamOptions } from './stream.js';
export { LocalEvaluator, type BufferedUsage, type LocalOptions } from './local.js';
