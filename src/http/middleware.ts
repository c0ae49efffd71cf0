import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { DatabaseOutage } from '../db/outage.js';
import { isDatabaseUnavailable, isOutcomeUnknown, isServerBound } from '../db/unavailable.js';
import type { Logger } from '../logger.js';
import { AppError } from '../errors.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Seconds a client is asked to wait before retrying while the database is unreachable. */
export const DATABASE_RETRY_AFTER_S = 5;

/**
 * Request id (kept from `X-Request-Id` when sane), one structured log line per request (at debug level when `quiet`
 * says so), error mapping.
 */
export function requestLifecycle(
  logger: Logger,
  outage = new DatabaseOutage(logger),
  quiet: (ctx: Parameters<Middleware>[0]) => boolean = () => false,
): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const given = ctx.get('X-Request-Id');
    const requestId = REQUEST_ID.test(given) ? given : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        ctx.status = 404;
        ctx.body = { error: `No route for ${ctx.method} ${ctx.path}` };
      }
    } catch (err) {
      respondWithError(ctx, err, logger, requestId, outage);
    } finally {
      // The line is built only when it is written (LOG_LEVEL=warn, as in production benches, skips it).
      const level = quiet(ctx) ? 'debug' : 'info';
      if (logger.isLevelEnabled(level)) {
        const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
        logger[level](
          {
            requestId,
            method: ctx.method,
            path: ctx.path,
            status: ctx.status,
            durationMs: Math.round(durationMs * 100) / 100,
          },
          'request',
        );
      }
    }
  };
}

function respondWithError(
  ctx: Parameters<Middleware>[0],
  err: unknown,
  logger: Logger,
  requestId: string,
  outage: DatabaseOutage,
) {
  if (err instanceof AppError) {
    ctx.status = err.status;
    ctx.body = { error: err.message, ...err.extra };
    for (const [k, v] of Object.entries(err.headers ?? {})) ctx.set(k, v);
    return;
  }
  if (isDatabaseUnavailable(err)) {
    // An outage is not a bug: one log line per outage (not per request), and a status clients retry. A statement the
    // server cancelled at its bound is a 503 too, but the server is there: no outage.
    if (!isServerBound(err)) outage.failed(err, { requestId });
    ctx.status = 503;
    ctx.set('Retry-After', String(DATABASE_RETRY_AFTER_S));
    ctx.body = databaseUnavailableBody(err, ctx.method);
    return;
  }
  logger.error({ err, requestId, method: ctx.method, path: ctx.path }, 'unhandled error');
  ctx.status = 500;
  ctx.body = { error: 'Internal server error' };
}

/**
 * The 503 body of a database outage: `outcome: "unknown"` when the change may have been applied (a read changes
 * nothing, whatever statement of its was left unanswered; only a POST takes an Idempotency-Key).
 */
export function databaseUnavailableBody(err: unknown, method: string): { error: string; outcome?: 'unknown' } {
  if (!isOutcomeUnknown(err) || method === 'GET' || method === 'HEAD')
    return { error: 'Service unavailable: the database cannot be reached; retry shortly' };
  return {
    error:
      'Service unavailable: the database stopped answering while it committed this change, so whether it was ' +
      'applied is unknown; look before repeating it' +
      (method === 'POST' ? ' (a retry with the same Idempotency-Key never applies it twice)' : ''),
    outcome: 'unknown',
  };
}
