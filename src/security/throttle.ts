import type { Context, Middleware } from 'koa';
import type { Deps } from '../deps.js';
import { bearer } from '../http/auth.js';
import { AppError } from '../http/errors.js';
import { staticPageCsp } from '../http/headers.js';
import { errorPage } from '../oauth/consent.js';
import { keyHash, limitsFor, tooManyRequests, type Outcome } from './rate-limits.js';

const SIGN_IN = '/oauth/consent/sign-in';
const REGISTER = '/oauth/register';

/**
 * Throttling where secrets are guessed or things are cheap to create, shared by every API process:
 *
 * - failed credentials per client address (a wrong bearer credential answered 401, or a wrong admin key
 *   on the consent page's sign-in form): past AUTH_FAILURE_LIMIT in AUTH_FAILURE_WINDOW_SECONDS, every
 *   request from that address that carries a credential gets 429 until the window ends, the right
 *   credential included (otherwise guessing would go on, told apart by the answer);
 * - requests per credential and second (RATE_LIMIT_PER_SECOND; the public publishable key counts per
 *   key and client address, so one visitor cannot use up an app's budget);
 * - OAuth client registrations per client address (OAUTH_REGISTER_LIMIT per OAUTH_REGISTER_WINDOW_SECONDS).
 */
export function throttle(deps: Deps): Middleware {
  return async (ctx, next) => {
    const c = deps.config;
    const limits = limitsFor(deps);
    const credential = bearer(ctx);
    const signIn = ctx.method === 'POST' && ctx.path === SIGN_IN;
    const guessing = (credential !== null || signIn) && c.AUTH_FAILURE_LIMIT > 0;

    if (guessing) {
      const state = await limits.exhausted('authfail', ctx.ip, c.AUTH_FAILURE_LIMIT, c.AUTH_FAILURE_WINDOW_SECONDS);
      if (!state.ok) {
        if (signIn) return tooManyPage(ctx, state.retryAfterSeconds);
        throw tooManyRequests(
          `Too many failed credentials from this address; try again in ${state.retryAfterSeconds} seconds`,
          state.retryAfterSeconds,
        );
      }
    }

    if (ctx.method === 'POST' && ctx.path === REGISTER && c.OAUTH_REGISTER_LIMIT > 0) {
      const r = await limits.consume('register', ctx.ip, c.OAUTH_REGISTER_LIMIT, c.OAUTH_REGISTER_WINDOW_SECONDS);
      if (!r.ok)
        throw tooManyRequests('too_many_requests', r.retryAfterSeconds, {
          error_description: `Too many client registrations from this address; try again in ${r.retryAfterSeconds} seconds`,
        });
    }

    if (credential !== null && c.RATE_LIMIT_PER_SECOND > 0) {
      const key = credential.startsWith('pub_') ? `${keyHash(credential)}:${ctx.ip}` : keyHash(credential);
      const r = await limits.consume('req', key, c.RATE_LIMIT_PER_SECOND, 1);
      rateHeaders(ctx, r);
      if (!r.ok)
        throw tooManyRequests(
          `Rate limit exceeded: at most ${c.RATE_LIMIT_PER_SECOND} requests per second for this key`,
          r.retryAfterSeconds,
        );
    }

    let failed = false;
    try {
      await next();
      failed = ctx.status === 401;
    } catch (err) {
      failed = err instanceof AppError && err.status === 401;
      throw err;
    } finally {
      if (failed && guessing)
        await limits
          .consume('authfail', ctx.ip, c.AUTH_FAILURE_LIMIT, c.AUTH_FAILURE_WINDOW_SECONDS)
          .catch((err: unknown) => deps.logger.warn({ err }, 'could not count a failed credential'));
    }
  };
}

/** IETF RateLimit header fields (draft), so clients can pace themselves. */
function rateHeaders(ctx: Context, r: Outcome) {
  ctx.set('RateLimit-Limit', String(r.limit));
  ctx.set('RateLimit-Remaining', String(r.ok ? r.remaining : 0));
  ctx.set('RateLimit-Reset', String(r.ok ? Math.max(1, Math.ceil(r.resetMs / 1000)) : r.retryAfterSeconds));
}

function tooManyPage(ctx: Context, retryAfterSeconds: number) {
  ctx.status = 429;
  ctx.set('Retry-After', String(retryAfterSeconds));
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', staticPageCsp());
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = errorPage(
    'Too many attempts',
    `Too many wrong admin keys were tried from this address. Try again in ${Math.ceil(retryAfterSeconds / 60)} minutes.`,
  );
}
