import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../logger.js';
import { AppError } from './errors.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Request id (kept from `X-Request-Id` when sane), one structured log line per request, error mapping. */
export function requestLifecycle(logger: Logger): Middleware {
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
      respondWithError(ctx, err, logger, requestId);
    } finally {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info(
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
  };
}

function respondWithError(ctx: Parameters<Middleware>[0], err: unknown, logger: Logger, requestId: string) {
  if (err instanceof AppError) {
    ctx.status = err.status;
    ctx.body = { error: err.message, ...err.extra };
    for (const [k, v] of Object.entries(err.headers ?? {})) ctx.set(k, v);
    return;
  }
  logger.error({ err, requestId, method: ctx.method, path: ctx.path }, 'unhandled error');
  ctx.status = 500;
  ctx.body = { error: 'Internal server error' };
}
