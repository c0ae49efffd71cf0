/** The one error type routes and services throw; the error middleware turns it into `{ error, ...extra }`. */
export class AppError extends Error {
  readonly status: number;
  readonly extra?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(status: number, message: string, extra?: Record<string, unknown>, headers?: Record<string, string>) {
    super(message);
    this.name = 'AppError';
    this.status = status;
    this.extra = extra;
    this.headers = headers;
  }
}

export const badRequest = (message: string, extra?: Record<string, unknown>) => new AppError(400, message, extra);
export const unauthorized = () => new AppError(401, 'Unauthorized');

/**
 * A 401 for a credential that matched nothing (a guess, a rotated key, a typo), as opposed to a valid credential
 * on a route it may not use (also 401, as the spec says, but never counted as a failure).
 */
export class UnrecognizedCredential extends AppError {
  constructor() {
    super(401, 'Unauthorized');
  }
}
export const paymentRequired = (body: { error: string }) => {
  const { error, ...extra } = body;
  return new AppError(402, error, extra as Record<string, unknown>);
};
export const forbidden = (message = 'Forbidden') => new AppError(403, message);
export const notFound = (what: string) => new AppError(404, `${what} not found`);
export const methodNotAllowed = () => new AppError(405, 'Method not allowed');
export const conflict = (message: string, extra?: Record<string, unknown>) => new AppError(409, message, extra);
export const providerError = (provider: string, message: string) => new AppError(502, `${provider}: ${message}`);

/** Postgres unique_violation, so services can turn an id clash into a 409 without a prior read. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } } | null;
  return e?.code === '23505' || e?.cause?.code === '23505';
}
