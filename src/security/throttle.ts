import type { Context, Middleware } from 'koa';
import type { Deps } from '../deps.js';
import { bearer } from '../http/credentials.js';
import { AppError } from '../errors.js';
import type { RouteDef } from '../http/route.js';
import { staticPageCsp } from '../http/headers.js';
import { errorPage } from '../http/html.js';
import { keyHash, limitsFor, tooManyRequests } from './rate-limits.js';
import { deviceOf, normalEmail, rememberDevice } from './sign-in-devices.js';

/**
 * Throttles that belong to a route rather than to a caller, from the route's declared facts (`throttle`), never
 * from the spelling of its path: the middleware the router runs for that route, after its body is parsed and
 * before it is authenticated. Routes without such facts get none (the hot paths pay nothing here). Failed API
 * credentials and per-caller request rates are counted around authentication instead (src/security/admission.ts).
 *
 * Each counter protects one thing, and counts only what it protects (docs/security.md has the table):
 *
 * - `register`: OAuth client registrations per client address;
 * - `authorize`: authorization requests per client address (an HTML page past the limit);
 * - `consent-sign-in`: wrong admin keys on the consent page's form, in the failed-credential counter per address;
 *   the right key is never refused (as on the API);
 * - `token-grant`: failed grants at the token endpoint per address; a valid grant is never refused;
 * - `sign-in`: failed console sign-ins, per device cookie for a browser that signed in to that account before, else
 *   per account and per address (src/security/sign-in-devices.ts);
 * - `public-checkout`: checkouts created with a publishable key, per account and per address;
 * - `provider-notification`: payment provider notifications that fail verification, per address.
 *
 * Counters that bound an attempt's cost take their point before it (so attempts sent at once cannot all pass a
 * check made before any of them counted) and give it back when the attempt turned out not to be what they count.
 */
export function throttleFor(deps: Deps): (def: RouteDef) => Middleware | null {
  return (def) => {
    const facts = new Set(def.throttle ?? []);
    if (facts.size === 0) return null;
    return async (ctx, next) => {
      const c = deps.config;
      const limits = limitsFor(deps);

      if (facts.has('register') && c.OAUTH_REGISTER_LIMIT > 0) {
        const r = await limits.consume('register', ctx.ip, c.OAUTH_REGISTER_LIMIT, c.OAUTH_REGISTER_WINDOW_SECONDS);
        if (!r.ok)
          throw tooManyRequests('too_many_requests', r.retryAfterSeconds, {
            error_description: `Too many client registrations from this address; try again in ${r.retryAfterSeconds} seconds`,
          });
      }
      if (facts.has('authorize') && c.OAUTH_AUTHORIZE_LIMIT > 0) {
        const r = await limits.consume('authorize', ctx.ip, c.OAUTH_AUTHORIZE_LIMIT, c.OAUTH_AUTHORIZE_WINDOW_SECONDS);
        if (!r.ok)
          return tooManyPage(
            ctx,
            r.retryAfterSeconds,
            `Too many sign-ins were started from this address. Try again in ${minutes(r.retryAfterSeconds)}.`,
          );
      }

      const signIn = facts.has('sign-in') ? signInOf(ctx, deps) : null;
      const held = await hold(limits, deps, heldCounters(ctx, deps, facts, signIn));
      let status = 500;
      try {
        await next();
        status = ctx.status;
      } catch (err) {
        status = err instanceof AppError ? err.status : 500;
        const failedGrant =
          facts.has('token-grant') &&
          err instanceof AppError &&
          ((err.status === 400 && err.message === 'invalid_grant') || err.status === 401);
        if (failedGrant && c.OAUTH_TOKEN_FAILURE_LIMIT > 0) {
          const r = await countFailure(
            deps,
            'oauth-grant',
            ctx.ip,
            c.OAUTH_TOKEN_FAILURE_LIMIT,
            c.OAUTH_TOKEN_FAILURE_WINDOW_SECONDS,
          );
          if (r)
            throw tooManyRequests('too_many_requests', r, {
              error_description: `Too many failed grants from this address; try again in ${r} seconds`,
            });
        }
        throw err;
      } finally {
        await giveBack(
          limits,
          deps,
          held.filter((h) => !h.counts(status, ctx)),
        );
      }
      if (facts.has('consent-sign-in') && status === 401 && c.AUTH_FAILURE_LIMIT > 0) {
        const r = await countFailure(deps, 'authfail', ctx.ip, c.AUTH_FAILURE_LIMIT, c.AUTH_FAILURE_WINDOW_SECONDS);
        if (r)
          return tooManyPage(
            ctx,
            r,
            `Too many wrong admin keys were tried from this address. Try again in ${minutes(r)}.`,
          );
      }
      if (signIn && status === 200) rememberDevice(ctx, deps, signIn.email, signIn.device, def.path);
    };
  };
}

interface Held {
  name: string;
  key: string;
  points: number;
  seconds: number;
  /** Refused: the answer, given the seconds until the window ends. */
  refusal: (retryAfterSeconds: number) => AppError;
  /** Whether the attempt's answer is what this counter counts (else its point is given back). */
  counts: (status: number, ctx: Context) => boolean;
}

/** The counters an attempt on this route takes a point from before it runs. */
function heldCounters(ctx: Context, deps: Deps, facts: Set<string>, signIn: ReturnType<typeof signInOf>): Held[] {
  const c = deps.config;
  const failed = (status: number) => status === 401;
  const held: Held[] = [];
  if (facts.has('sign-in')) {
    const window = c.SIGN_IN_FAILURE_WINDOW_SECONDS;
    const refusal = (what: string) => (retry: number) =>
      tooManyRequests(`Too many failed sign-ins ${what}; try again in ${retry} seconds`, retry);
    if (signIn?.device) {
      // A browser that signed in to this account before: its own failures only.
      if (c.SIGN_IN_FAILURE_LIMIT > 0)
        held.push({
          name: 'signin-device',
          key: signIn.device,
          points: c.SIGN_IN_FAILURE_LIMIT,
          seconds: window,
          refusal: refusal('for this account in this browser'),
          counts: failed,
        });
    } else {
      if (c.SIGN_IN_FAILURE_LIMIT_PER_ADDRESS > 0)
        held.push({
          name: 'signin-ip',
          key: ctx.ip,
          points: c.SIGN_IN_FAILURE_LIMIT_PER_ADDRESS,
          seconds: window,
          refusal: refusal('from this address (a browser that has signed in to this account before is not held to it)'),
          counts: failed,
        });
      if (signIn && c.SIGN_IN_FAILURE_LIMIT > 0)
        held.push({
          name: 'signin',
          key: keyHash(signIn.email),
          points: c.SIGN_IN_FAILURE_LIMIT,
          seconds: window,
          refusal: refusal('for this account (a browser that has signed in to it before is not held to it)'),
          counts: failed,
        });
    }
  }
  const credential = bearer(ctx);
  if (facts.has('public-checkout') && credential?.startsWith('pub_')) {
    const app = keyHash(credential);
    const account = (ctx.request.body as { account?: unknown } | undefined)?.account;
    const window = c.PUBLIC_CHECKOUT_WINDOW_SECONDS;
    // Only a checkout made counts: a refused, invalid or replayed request gives its point back.
    const created = (status: number, x: Context) => status === 201 && !x.response.get('Idempotent-Replayed');
    const refusal = (what: string, points: number) => (retry: number) =>
      tooManyRequests(
        `Too many checkouts opened ${what} with the publishable key (at most ${points} per ${window} seconds); ` +
          `try again in ${retry} seconds`,
        retry,
      );
    // The account's first: a request its account is refused for does not use up the address's allowance.
    if (c.PUBLIC_CHECKOUT_LIMIT_PER_ACCOUNT > 0 && typeof account === 'string')
      held.push({
        name: 'pubcheckout-account',
        key: `${app}:${keyHash(account)}`,
        points: c.PUBLIC_CHECKOUT_LIMIT_PER_ACCOUNT,
        seconds: window,
        refusal: refusal('for this account', c.PUBLIC_CHECKOUT_LIMIT_PER_ACCOUNT),
        counts: created,
      });
    if (c.PUBLIC_CHECKOUT_LIMIT_PER_ADDRESS > 0)
      held.push({
        name: 'pubcheckout-ip',
        key: `${app}:${ctx.ip}`,
        points: c.PUBLIC_CHECKOUT_LIMIT_PER_ADDRESS,
        seconds: window,
        refusal: refusal('from this address', c.PUBLIC_CHECKOUT_LIMIT_PER_ADDRESS),
        counts: created,
      });
  }
  if (facts.has('provider-notification') && c.NOTIFICATION_FAILURE_LIMIT > 0)
    // Each notification is verified by calling the provider: forged ones are bounded before that call.
    held.push({
      name: 'notification-fail',
      key: ctx.ip,
      points: c.NOTIFICATION_FAILURE_LIMIT,
      seconds: c.NOTIFICATION_FAILURE_WINDOW_SECONDS,
      refusal: (retry) =>
        tooManyRequests(
          `Too many notifications that failed verification from this address; try again in ${retry} seconds`,
          retry,
        ),
      counts: failed,
    });
  return held;
}

/** The sign-in's account (normalized email) and the browser's device cookie for it, or null without an email. */
function signInOf(ctx: Context, deps: Deps): { email: string; device: string | null } | null {
  const raw = (ctx.request.body as { email?: unknown } | undefined)?.email;
  if (typeof raw !== 'string' || raw.trim().length === 0) return null;
  const email = normalEmail(raw);
  return { email, device: deviceOf(ctx, deps, email) };
}

/** Takes a point from each counter in order; when one is used up, gives back those taken and throws its refusal. */
async function hold(limits: ReturnType<typeof limitsFor>, deps: Deps, counters: Held[]): Promise<Held[]> {
  const taken: Held[] = [];
  for (const h of counters) {
    const r = await limits.consume(h.name, h.key, h.points, h.seconds);
    if (!r.ok) {
      // The refused attempt's own point too: only what the counter counts stays counted.
      await giveBack(limits, deps, [...taken, h]);
      throw h.refusal(r.retryAfterSeconds);
    }
    taken.push(h);
  }
  return taken;
}

async function giveBack(limits: ReturnType<typeof limitsFor>, deps: Deps, counters: Held[]) {
  for (const h of counters)
    await limits
      .reward(h.name, h.key, h.points, h.seconds)
      .catch((err: unknown) => deps.logger.warn({ err }, 'could not give back a throttle point'));
}

/** Counts a failure after the fact; the seconds to wait when the window is now used up, else null. */
async function countFailure(deps: Deps, name: string, key: string, points: number, seconds: number) {
  const r = await limitsFor(deps)
    .consume(name, key, points, seconds)
    .catch((err: unknown) => {
      deps.logger.warn({ err }, 'could not count a failure');
      return null;
    });
  return r && !r.ok ? r.retryAfterSeconds : null;
}

const minutes = (seconds: number) => {
  const m = Math.ceil(seconds / 60);
  return m === 1 ? '1 minute' : `${m} minutes`;
};

function tooManyPage(ctx: Context, retryAfterSeconds: number, message: string) {
  ctx.status = 429;
  ctx.set('Retry-After', String(retryAfterSeconds));
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', staticPageCsp());
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = errorPage('Too many attempts', message);
}
