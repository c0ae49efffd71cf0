// The PayPal stand-in's core, shared by its API areas: its state (kept in a JSON file across restarts when asked), its
// timers, the one-at-a-time billing queue, the switches tests set on the next calls (failures, holds, delays), the log
// of calls received, and the helpers every area answers with (ids, PayPal's error document, the caller's resources).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type http from 'node:http';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { clockOf, type BillingHost, type Json } from './paypal-billing.js';

export type { Json };

export interface State {
  credentials: Record<string, string>;
  tokens: Record<string, { clientId: string; expiresAt: number }>;
  products: Record<string, Json>;
  plans: Record<string, Json>;
  subscriptions: Record<string, Json>;
  orders: Record<string, Json>;
  /** Payments captured for subscription cycles (their transactions), by capture id, with their refunds. */
  captures: Record<string, Json>;
  webhooks: Record<string, { id: string; url: string; event_types: { name: string }[]; clientId: string }>;
  idempotency: Record<string, Json>;
  /** Notifications a webhook did not accept, waiting for their next attempt (by event id and webhook id). */
  redeliveries: Record<string, Redelivery>;
}

export interface Redelivery {
  webhookId: string;
  event: Json;
  /** The attempt to make next (2 is the first retry). */
  attempt: number;
  /** When it is due (ms since the epoch). */
  dueAt: number;
}

export interface StandInOptions {
  /** client id -> secret accepted by /v1/oauth2/token */
  credentials?: Record<string, string>;
  /** Time between approval and ACTIVE for subscriptions (PayPal activates asynchronously). */
  activationDelayMs?: number;
  /** Keep state in this JSON file across restarts (the embedded default). */
  statePath?: string;
  /**
   * How often the cycles due in real time are billed (each subscription on its own clock), so a long-running stand-in
   * renews; 0 or unset: only when asked (`POST /v1/dev/clock`, `renew`).
   */
  tickMs?: number;
  port?: number;
  host?: string;
  /**
   * Redelivery of notifications a webhook did not accept (an answer other than 2xx, or none), as PayPal does
   * (`notificationRetryDelays`): `firstMs` (default 30 s) is the delay before the first retry, which tests and demos
   * shorten; `times` (default 25) how many retries; `spanMs` (default 3 days) what they add up to.
   */
  notificationRetry?: { firstMs?: number; times?: number; spanMs?: number };
}

export const id = (prefix: string, n = 17) =>
  `${prefix}${randomBytes(n).toString('base64url').replace(/[-_]/g, '').slice(0, n).toUpperCase()}`;
export const now = () => new Date().toISOString();
/** The subscription's time (its test clock), ISO. */
export const subNow = (s: Json) => clockOf(s).toISOString();

export function paypalError(ctx: Context, status: number, name: string, message: string, issue?: string) {
  ctx.status = status;
  ctx.body = {
    name,
    message,
    debug_id: randomBytes(6).toString('hex'),
    ...(issue ? { details: [{ issue, description: message }] } : {}),
  };
}

/** A request's JSON (or form) body. */
export const body = (ctx: Context) => (ctx.request.body ?? {}) as Json;

/** Sends a notification to the merchant's webhooks (paypal-standin-notifications.ts). */
export type Notify = (clientId: string, eventType: string, resource: Json, summary?: string) => Promise<Json>;

/** What the stand-in's parts share: its core, the API's check, notifications out, billing's callbacks. */
export interface StandInParts {
  core: StandInCore;
  /** The merchant's bearer token checked, the test switches applied, PayPal-Request-Id honoured (oauth area). */
  auth: (ctx: Context, next: () => Promise<unknown>) => Promise<void>;
  notify: Notify;
  /** What billing (paypal-billing.ts) calls back. */
  host: BillingHost;
}

/** What each API area registers its routes with: the parts and the router of one start of the HTTP server. */
export interface StandInArea extends StandInParts {
  router: Router;
}

/**
 * The next failure a call of `clientId` (undefined when the call names no known client) is to answer: the first one
 * set for any client or for this one, taken off the list.
 */
export function takeFailure(core: StandInCore, clientId: string | undefined) {
  const i = core.failures.findIndex((f) => f.clientId === undefined || f.clientId === clientId);
  return i < 0 ? undefined : core.failures.splice(i, 1)[0];
}

export class StandInCore {
  state: State;
  /** The HTTP server while it runs (a stopped stand-in schedules no redelivery). */
  server: http.Server | null = null;
  baseUrl = '';
  /** Failures tests set on the next calls: of any client, or of one (`clientId`) only. */
  readonly failures: { status: number; name: string; message: string; clientId?: string }[] = [];
  readonly holds: { route: string; arrived: () => void; released: Promise<void> }[] = [];
  readonly delays: { pathIncludes: string; ms: number }[] = [];
  /** The last 10,000 API calls received (method and path), for tests that count what the service asked. */
  readonly received: { method: string; path: string }[] = [];
  private timers = new Set<NodeJS.Timeout>();
  /** Billing runs one call at a time (a clock move, a tick, a capture), so events bill once and in order. */
  private billing: Promise<unknown> = Promise.resolve();

  constructor(readonly opts: StandInOptions) {
    const fresh: State = {
      credentials: { ...(opts.credentials ?? {}) },
      tokens: {},
      products: {},
      plans: {},
      subscriptions: {},
      orders: {},
      captures: {},
      webhooks: {},
      idempotency: {},
      redeliveries: {},
    };
    if (opts.statePath && fs.existsSync(opts.statePath)) {
      this.state = { ...fresh, ...(JSON.parse(fs.readFileSync(opts.statePath, 'utf8')) as State) };
      Object.assign(this.state.credentials, opts.credentials ?? {});
    } else this.state = fresh;
  }

  save() {
    if (this.opts.statePath) fs.writeFileSync(this.opts.statePath, JSON.stringify(this.state));
  }

  later(ms: number, fn: () => void) {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  clearTimers() {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** Runs billing calls one at a time. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.billing.then(fn, fn);
    this.billing = run.catch(() => undefined);
    return run;
  }

  /** The caller's item of this map, or a 404 answered (another merchant's items are not found). */
  own<T extends Json>(ctx: Context, map: Record<string, T>, key: string): T | undefined {
    const item = map[key];
    if (!item || item.clientId !== ctx.state.clientId) {
      paypalError(ctx, 404, 'RESOURCE_NOT_FOUND', 'The specified resource does not exist.', 'INVALID_RESOURCE_ID');
      return undefined;
    }
    return item;
  }
}
