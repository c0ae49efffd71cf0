import { createHash } from 'node:crypto';
import type { PostgreSqlConnection } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { withoutDoubt } from '../db/unavailable.js';
import type { Deps } from '../deps.js';
import { AppError } from '../errors.js';

/**
 * Rate limits shared by every API process: `rate-limiter-flexible` with its PostgreSQL store, on the
 * database we already have (the table `rate_limits`, created by a migration, unlogged: counters are
 * disposable). Each consume is one atomic upsert, so two processes count into the same window. Every
 * limiter here is a fixed window: `points` per `seconds` for a key.
 */
export const RATE_LIMIT_TABLE = 'rate_limits';

export type Outcome =
  | { ok: true; limit: number; remaining: number; resetMs: number }
  | { ok: false; limit: number; retryAfterSeconds: number };

/** Keys hold no secret: credentials are hashed before they name a counter. */
export const keyHash = (value: string) => createHash('sha256').update(value).digest('base64url').slice(0, 32);

class Limits {
  private pool?: Promise<Pool>;
  private readonly limiters = new Map<string, RateLimiterPostgres>();
  private purging = false;

  constructor(private readonly deps: Deps) {}

  private async storeClient(): Promise<Pool> {
    this.pool ??= (this.deps.orm.em.getConnection() as unknown as PostgreSqlConnection)
      .getNativeClient()
      .then((p) => p as unknown as Pool);
    return this.pool;
  }

  private async limiter(name: string, points: number, seconds: number): Promise<RateLimiterPostgres> {
    const id = `${name}:${points}:${seconds}`;
    let l = this.limiters.get(id);
    if (!l) {
      l = new RateLimiterPostgres({
        storeClient: await this.storeClient(),
        storeType: 'pool',
        tableName: RATE_LIMIT_TABLE,
        tableCreated: true,
        keyPrefix: name,
        points,
        duration: seconds,
        // One limiter per process removes rows that expired over an hour ago, every 5 minutes.
        clearExpiredByTimeout: !this.purging,
      });
      this.purging = true;
      this.limiters.set(id, l);
    }
    return l;
  }

  /** Takes `cost` points from `key`'s window; refused once the window's points are used up. */
  async consume(name: string, key: string, points: number, seconds: number, cost = 1): Promise<Outcome> {
    const l = await this.limiter(name, points, seconds);
    try {
      const r = await l.consume(key, cost);
      return { ok: true, limit: points, remaining: r.remainingPoints, resetMs: r.msBeforeNext };
    } catch (err) {
      if (err instanceof RateLimiterRes)
        return { ok: false, limit: points, retryAfterSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
      throw withoutDoubt(err);
    }
  }

  /** Gives back `points` taken from `key`'s window (an attempt that turned out not to count). */
  async reward(name: string, key: string, points: number, seconds: number, cost = 1): Promise<void> {
    const l = await this.limiter(name, points, seconds);
    await l.reward(key, cost).catch((err: unknown) => Promise.reject(withoutDoubt(err)));
  }
}

const byOrm = new WeakMap<object, Limits>();

/** The process's limiters on this database (settings are read from `deps.config` at each call). */
export function limitsFor(deps: Deps): Limits {
  let l = byOrm.get(deps.orm);
  if (!l) {
    l = new Limits(deps);
    byOrm.set(deps.orm, l);
  }
  return l;
}

/** A 429 `{ error }` with `Retry-After` (seconds). */
export const tooManyRequests = (message: string, retryAfterSeconds: number, extra?: Record<string, unknown>) =>
  new AppError(429, message, extra, { 'Retry-After': String(retryAfterSeconds) });
