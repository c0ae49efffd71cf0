import type { Context, Middleware } from 'koa';
import type { Deps } from '../deps.js';
import { bearer } from '../http/credentials.js';
import { AppError } from '../errors.js';
import type { RouteDef } from '../http/route.js';
import { staticPageCsp } from '../http/headers.js';
import { errorPage } from '../http/html.js';
import { keyHash, limitsFor, tooManyRequests } from './rate-limits.js';

/**
 * Throttles that belong to a route rather than to a caller, from the route's declared facts (`throttle`), never
 * from the spelling of its path: the middleware the router runs for that route, after its body is parsed and
 * before it is authenticated. Routes without such facts get none (the hot paths pay nothing here). Failed
 * credentials and per-caller request rates are counted around authentication instead (src/security/admission.ts).
 *
 * - OAuth client registrations per client address (OAUTH_REGISTER_LIMIT per OAUTH_REGISTER_WINDOW_SECONDS);
 * - the consent page's admin-key form: wrong keys per client address (AUTH_FAILURE_LIMIT), then a 429 page;
 * - console sign-ins: failures per account (SIGN_IN_FAILURE_LIMIT) and per address (AUTH_FAILURE_LIMIT);
 * - checkouts opened with a publishable key, per account and per client address (PUBLIC_CHECKOUT_LIMIT_*).
 */
export function throttleFor(deps: Deps): (def: RouteDef) => Middleware | null {
  return (def) => {
    const facts = new Set(def.throttle ?? []);
    if (facts.size === 0) return null;
    return async (ctx, next) => {
      const c = deps.config;
      const limits = limitsFor(deps);
      const consentSignIn = facts.has('consent-sign-in') && c.AUTH_FAILURE_LIMIT > 0;

      if (consentSignIn) {
        const state = await limits.exhausted('authfail', ctx.ip, c.AUTH_FAILURE_LIMIT, c.AUTH_FAILURE_WINDOW_SECONDS);
        if (!state.ok) return tooManyPage(ctx, state.retryAfterSeconds);
      }

      if (facts.has('register') && c.OAUTH_REGISTER_LIMIT > 0) {
        const r = await limits.consume('register', ctx.ip, c.OAUTH_REGISTER_LIMIT, c.OAUTH_REGISTER_WINDOW_SECONDS);
        if (!r.ok)
          throw tooManyRequests('too_many_requests', r.retryAfterSeconds, {
            error_description: `Too many client registrations from this address; try again in ${r.retryAfterSeconds} seconds`,
          });
      }

      // Sign-ins take their points before the attempt (so attempts sent at once cannot all pass a check made
      // before any of them counted) and give them back when the attempt did not fail.
      const signIn = facts.has('sign-in') ? signInKeys(ctx, c.AUTH_FAILURE_LIMIT, c.SIGN_IN_FAILURE_LIMIT) : [];
      const signInWindow = (name: string) =>
        name === 'authfail' ? c.AUTH_FAILURE_WINDOW_SECONDS : c.SIGN_IN_FAILURE_WINDOW_SECONDS;
      const taken: typeof signIn = [];
      for (const k of signIn) {
        const state = await limits.consume(k.name, k.key, k.points, signInWindow(k.name));
        if (!state.ok) {
          for (const t of taken)
            await limits.reward(t.name, t.key, t.points, signInWindow(t.name)).catch(() => undefined);
          throw tooManyRequests(
            `Too many failed sign-ins ${k.name === 'authfail' ? 'from this address' : 'for this account'}; ` +
              `try again in ${state.retryAfterSeconds} seconds`,
            state.retryAfterSeconds,
          );
        }
        taken.push(k);
      }

      const credential = bearer(ctx);
      if (facts.has('public-checkout') && credential?.startsWith('pub_')) await publicCheckout(ctx, deps, credential);

      let failed = false;
      try {
        await next();
        failed = ctx.status === 401;
      } catch (err) {
        failed = err instanceof AppError && err.status === 401;
        throw err;
      } finally {
        if (failed && consentSignIn)
          await limits
            .consume('authfail', ctx.ip, c.AUTH_FAILURE_LIMIT, c.AUTH_FAILURE_WINDOW_SECONDS)
            .catch((err: unknown) => deps.logger.warn({ err }, 'could not count a failed credential'));
        if (!failed)
          for (const k of taken)
            await limits
              .reward(k.name, k.key, k.points, signInWindow(k.name))
              .catch((err: unknown) => deps.logger.warn({ err }, 'could not give back a sign-in attempt'));
      }
    };
  };
}

/** The counters a sign-in attempt is held to: its client address, and the account it names. */
function signInKeys(ctx: Context, perAddress: number, perAccount: number) {
  const keys: { name: string; key: string; points: number }[] = [];
  if (perAddress > 0) keys.push({ name: 'authfail', key: ctx.ip, points: perAddress });
  const email = (ctx.request.body as { email?: unknown } | undefined)?.email;
  if (perAccount > 0 && typeof email === 'string' && email.length > 0)
    keys.push({ name: 'signin', key: keyHash(email.trim().toLowerCase()), points: perAccount });
  return keys;
}

/** A checkout opened with a publishable key makes provider objects: bounded per account and per client address. */
async function publicCheckout(ctx: Context, deps: Deps, credential: string) {
  const c = deps.config;
  const limits = limitsFor(deps);
  const app = keyHash(credential);
  const account = (ctx.request.body as { account?: unknown } | undefined)?.account;
  const checks: { name: string; key: string; points: number; what: string }[] = [];
  // The account's first: a request its account is refused for does not use up the address's allowance.
  if (c.PUBLIC_CHECKOUT_LIMIT_PER_ACCOUNT > 0 && typeof account === 'string')
    checks.push({
      name: 'pubcheckout-account',
      key: `${app}:${keyHash(account)}`,
      points: c.PUBLIC_CHECKOUT_LIMIT_PER_ACCOUNT,
      what: 'for this account',
    });
  if (c.PUBLIC_CHECKOUT_LIMIT_PER_ADDRESS > 0)
    checks.push({
      name: 'pubcheckout-ip',
      key: `${app}:${ctx.ip}`,
      points: c.PUBLIC_CHECKOUT_LIMIT_PER_ADDRESS,
      what: 'from this address',
    });
  for (const k of checks) {
    const r = await limits.consume(k.name, k.key, k.points, c.PUBLIC_CHECKOUT_WINDOW_SECONDS);
    if (!r.ok)
      throw tooManyRequests(
        `Too many checkouts opened ${k.what} with the publishable key (at most ${k.points} per ` +
          `${c.PUBLIC_CHECKOUT_WINDOW_SECONDS} seconds); try again in ${r.retryAfterSeconds} seconds`,
        r.retryAfterSeconds,
      );
  }
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
