import type { IApp } from '../apps/apps.entities.js';
import type { Deps } from '../deps.js';
import { AppError } from '../errors.js';
import type { Caller } from '../http/route.js';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { keyHash, limitsFor, tooManyRequests } from './rate-limits.js';

/**
 * What the router asks of the throttle around authentication (src/http/router.ts `runRoute`):
 *
 * - `unrecognized`: a credential that matched nothing (a guess, a rotated key) is counted per client address and
 *   per credential, in PostgreSQL (shared by every API process; only failures pay for it); past
 *   AUTH_FAILURE_LIMIT in AUTH_FAILURE_WINDOW_SECONDS on either, the guess is answered 429 instead of 401. A valid
 *   credential is recognized before any of this is read, so it is never refused for someone else's failures (a
 *   neighbour behind the same NAT, a service left with a rotated key), and a valid credential on a route it may
 *   not use is not a failure.
 * - `admit`: requests per recognized caller and second, in this process's memory (no database round trip): the
 *   publishable key per app and client address, account tokens per account, OAuth connections per connection
 *   (RATE_LIMIT_PER_SECOND); secret and admin keys only when SECRET_KEY_RATE_LIMIT_PER_SECOND is set (a backend
 *   calls on its own users' behalf and must not feel a limit). Several API processes each count their own.
 * - `readOnlyWrite`: the writes a read-only app (the demo workspace's) allows anyway (a test send or a retry to the
 *   demo's receiver, open to every signed-in person), per caller and app, in PostgreSQL: past DEMO_SEND_LIMIT in
 *   DEMO_SEND_WINDOW_SECONDS, 429. Nobody else's sends count against a caller.
 *
 * Console sign-ins are not API credentials: their failures have counters of their own (src/security/throttle.ts),
 * so failed passwords never refuse a valid key and failed keys never refuse a correct password.
 */
export interface Admission {
  unrecognized(ip: string, credential: string): Promise<void>;
  admit(caller: Caller, app: IApp | null, ip: string): Promise<Record<string, string>>;
  readOnlyWrite(caller: Caller, app: IApp, ip: string): Promise<void>;
}

export function admissionFor(deps: Deps): Admission {
  const memory = new Map<number, RateLimiterMemory>();
  const limiter = (points: number) => {
    let l = memory.get(points);
    if (!l) memory.set(points, (l = new RateLimiterMemory({ points, duration: 1 })));
    return l;
  };
  return {
    async unrecognized(ip, credential) {
      const c = deps.config;
      if (c.AUTH_FAILURE_LIMIT <= 0) return;
      const limits = limitsFor(deps);
      const counted = await Promise.all([
        limits.consume('authfail', ip, c.AUTH_FAILURE_LIMIT, c.AUTH_FAILURE_WINDOW_SECONDS),
        limits.consume('authfail-key', keyHash(credential), c.AUTH_FAILURE_LIMIT, c.AUTH_FAILURE_WINDOW_SECONDS),
      ]).catch((err: unknown) => {
        deps.logger.warn({ err }, 'could not count a failed credential');
        return [];
      });
      const refused = counted.find((r) => !r.ok);
      if (refused && !refused.ok)
        throw tooManyRequests(
          `Too many failed credentials from this address or with this credential; try again in ` +
            `${refused.retryAfterSeconds} seconds`,
          refused.retryAfterSeconds,
        );
    },
    async readOnlyWrite(caller, app, ip) {
      const c = deps.config;
      if (c.DEMO_SEND_LIMIT <= 0) return;
      const who = caller.kind === 'person' ? `person:${caller.userId}` : (bucketOf(caller, app, ip)?.key ?? `ip:${ip}`);
      const r = await limitsFor(deps).consume(
        'demo-send',
        `${app.id}:${keyHash(who)}`,
        c.DEMO_SEND_LIMIT,
        c.DEMO_SEND_WINDOW_SECONDS,
      );
      if (!r.ok)
        throw tooManyRequests(
          `Too many test sends and retries on this read-only app (at most ${c.DEMO_SEND_LIMIT} per ` +
            `${c.DEMO_SEND_WINDOW_SECONDS} seconds each); try again in ${r.retryAfterSeconds} seconds`,
          r.retryAfterSeconds,
        );
    },
    async admit(caller, app, ip): Promise<Record<string, string>> {
      const c = deps.config;
      const bucket = bucketOf(caller, app, ip);
      if (!bucket) return {};
      const points = bucket.backend ? c.SECRET_KEY_RATE_LIMIT_PER_SECOND : c.RATE_LIMIT_PER_SECOND;
      if (points <= 0) return {};
      try {
        const r = await limiter(points).consume(bucket.key);
        return {
          'RateLimit-Limit': String(points),
          'RateLimit-Remaining': String(r.remainingPoints),
          'RateLimit-Reset': String(Math.max(1, Math.ceil(r.msBeforeNext / 1000))),
        };
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        const retry = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        throw new AppError(
          429,
          `Rate limit exceeded: at most ${points} requests per second for this ${bucket.what}`,
          undefined,
          {
            'Retry-After': String(retry),
            'RateLimit-Limit': String(points),
            'RateLimit-Remaining': '0',
            'RateLimit-Reset': String(retry),
          },
        );
      }
    },
  };
}

/** The counter a recognized caller's requests go to, or null for callers without one (people, open routes). */
function bucketOf(caller: Caller, app: IApp | null, ip: string) {
  const appId = app?.id ?? '';
  switch (caller.kind) {
    case 'admin':
      return { key: 'admin', backend: true, what: 'key' };
    case 'secret':
      return { key: `secret:${appId}`, backend: true, what: 'key' };
    case 'publishable':
      return { key: `pub:${appId}:${ip}`, backend: false, what: 'key and client address' };
    case 'token':
      return { key: `token:${appId}:${caller.accountId}`, backend: false, what: 'account token' };
    case 'oauth':
      return { key: `oauth:${caller.connectionId}`, backend: false, what: 'connection' };
    default:
      return null;
  }
}
