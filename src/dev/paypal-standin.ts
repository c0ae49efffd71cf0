// A local stand-in for PayPal: the subset of its REST API that PayPalProvider uses, with state, an
// approval page a person (or a headless browser) can click through, and signed notifications that
// its own verify-webhook-signature endpoint checks, as PayPal does. The service talks to it over
// HTTP exactly as it would to PayPal; nothing in the service knows it is a stand-in.
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import zlib from 'node:zlib';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import Koa, { type Context } from 'koa';
import {
  activate,
  addInterval,
  billDue,
  billEvent,
  captureOutstanding,
  clockOf,
  moveClock,
  outstandingOf,
  type BillingHost,
} from './paypal-billing.js';

// The stand-in juggles PayPal's loosely typed JSON documents.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

interface State {
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

interface Redelivery {
  webhookId: string;
  event: Json;
  /** The attempt to make next (2 is the first retry). */
  attempt: number;
  /** When it is due (ms since the epoch). */
  dueAt: number;
}

/**
 * PayPal's redelivery: "Any non-2xx status code will cause PayPal to reattempt delivery up to 25 times over the
 * course of 3 days or until it receives a 2xx success code" (developer.paypal.com/api/rest/webhooks/). PayPal does not
 * publish the intervals; the stand-in backs off exponentially from `firstMs`, doubling up to a cap chosen so that the
 * 25 retries end 3 days after the first attempt.
 */
export const NOTIFICATION_RETRIES = 25;
export const NOTIFICATION_RETRY_SPAN_MS = 3 * 86_400_000;
export const NOTIFICATION_RETRY_FIRST_MS = 30_000;

/** The delays before retries 1..`times`: `firstMs` doubling, capped so that they add up to `spanMs`. */
export function notificationRetryDelays(
  firstMs = NOTIFICATION_RETRY_FIRST_MS,
  times = NOTIFICATION_RETRIES,
  spanMs = NOTIFICATION_RETRY_SPAN_MS,
): number[] {
  const delays = (cap: number) => Array.from({ length: times }, (_, i) => Math.min(firstMs * 2 ** i, cap));
  const total = (cap: number) => delays(cap).reduce((a, b) => a + b, 0);
  // The sum grows with the cap: find the cap that spends the span (or none needed when doubling alone is shorter).
  let lo = firstMs;
  let hi = spanMs;
  if (total(hi) <= spanMs) return delays(hi);
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (total(mid) > spanMs) hi = mid;
    else lo = mid;
  }
  return delays(lo).map(Math.round);
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

const id = (prefix: string, n = 17) =>
  `${prefix}${randomBytes(n).toString('base64url').replace(/[-_]/g, '').slice(0, n).toUpperCase()}`;
const now = () => new Date().toISOString();
/** The subscription's time (its test clock), ISO. */
const subNow = (s: Json) => clockOf(s).toISOString();
/** Fields of a subscription the stand-in keeps for itself: never shown. */
const INTERNAL = [
  'clientId',
  'application_context',
  'pending',
  'clock_offset_ms',
  'fail_next',
  'retry',
  'cycles_plan_id',
];
const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function paypalError(ctx: Context, status: number, name: string, message: string, issue?: string) {
  ctx.status = status;
  ctx.body = {
    name,
    message,
    debug_id: randomBytes(6).toString('hex'),
    ...(issue ? { details: [{ issue, description: message }] } : {}),
  };
}

export class PayPalStandIn {
  readonly signingKey = randomBytes(32);
  private state: State;
  private server: http.Server | null = null;
  private failures: { status: number; name: string; message: string }[] = [];
  private holds: { route: string; arrived: () => void; released: Promise<void> }[] = [];
  private timers = new Set<NodeJS.Timeout>();
  private ticker: NodeJS.Timeout | null = null;
  /** Billing runs one call at a time (a clock move, a tick, a capture), so events bill once and in order. */
  private billing: Promise<unknown> = Promise.resolve();
  baseUrl = '';
  /** Every notification sent (each attempt: 1, then retries), for tests. */
  readonly sent: { url: string; event: Json; status: number | null; attempt: number }[] = [];
  private readonly retryDelays: number[];
  /** The last 10,000 API calls received (method and path), for tests that count what the service asked. */
  readonly received: { method: string; path: string }[] = [];
  private delays: { pathIncludes: string; ms: number }[] = [];

  constructor(private readonly opts: StandInOptions = {}) {
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
    const r = opts.notificationRetry ?? {};
    this.retryDelays = notificationRetryDelays(r.firstMs, r.times, r.spanMs);
  }

  /** Accepts these credentials from now on. */
  addCredentials(clientId: string, secret: string) {
    this.state.credentials[clientId] = secret;
    this.save();
  }

  /** The next API calls answer with this error (to test provider failures). */
  failNext(status = 500, name = 'INTERNAL_SERVER_ERROR', message = 'An internal server error has occurred', times = 1) {
    for (let i = 0; i < times; i++) this.failures.push({ status, name, message });
  }

  /**
   * Holds the next API call with this method and path (`POST /v1/billing/subscriptions`) until `release()`:
   * `reached` resolves when it arrives. Tests use it to change something while the service waits on the provider.
   */
  holdNext(method: string, path: string): { reached: Promise<void>; release: () => void } {
    let arrived!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((r) => (arrived = r));
    const released = new Promise<void>((r) => (release = r));
    this.holds.push({ route: `${method} ${path}`, arrived, released });
    return { reached, release };
  }

  /** The next API calls whose path includes `pathIncludes` answer `ms` later (a slow provider). */
  delayNext(pathIncludes: string, ms: number, times = 1) {
    for (let i = 0; i < times; i++) this.delays.push({ pathIncludes, ms });
  }

  subscription(subId: string): Json | undefined {
    return this.state.subscriptions[subId];
  }

  /** The subscription an approval link (`ba_token`) was made for, for tests. */
  subscriptionByApproval(approveUrl: string): Json | undefined {
    const token = new URL(approveUrl).searchParams.get('ba_token');
    return Object.values(this.state.subscriptions).find((s) => s.approval_token === token);
  }

  order(orderId: string): Json | undefined {
    return this.state.orders[orderId];
  }

  private save() {
    if (this.opts.statePath) fs.writeFileSync(this.opts.statePath, JSON.stringify(this.state));
  }

  private later(ms: number, fn: () => void) {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  // ---- notifications ------------------------------------------------------------------------------

  private signature(transmissionId: string, time: string, webhookId: string, body: string) {
    const crc = zlib.crc32(body);
    return createHmac('sha256', this.signingKey)
      .update(`${transmissionId}|${time}|${webhookId}|${crc}`)
      .digest('base64');
  }

  /**
   * Sends an event to every webhook of the client subscribed to its type, signed. A webhook that does not accept it
   * (no 2xx) gets it again later, as PayPal redelivers (`notificationRetryDelays`): the same event, a new
   * transmission. Resolves after the first attempts.
   */
  async notify(clientId: string, eventType: string, resource: Json, summary = eventType) {
    const event = {
      id: id('WH-', 17),
      event_version: '1.0',
      create_time: now(),
      resource_type: eventType.split('.')[0].toLowerCase(),
      event_type: eventType,
      summary,
      resource,
    };
    const hooks = Object.values(this.state.webhooks).filter(
      (w) => w.clientId === clientId && w.event_types.some((t) => t.name === eventType || t.name === '*'),
    );
    await Promise.all(hooks.map((w) => this.deliver(w.id, event, 1)));
    return event;
  }

  /** One attempt of one notification to one webhook; schedules the next attempt when it was not accepted. */
  private async deliver(webhookId: string, event: Json, attempt: number): Promise<void> {
    const key = `${String(event.id)}:${webhookId}`;
    const w = this.state.webhooks[webhookId];
    if (!w) {
      // The webhook was deleted meanwhile: PayPal has nowhere to send it.
      delete this.state.redeliveries[key];
      return;
    }
    const body = JSON.stringify(event);
    const transmissionId = randomUUID();
    const time = now();
    let status: number | null;
    try {
      const res = await fetch(w.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'paypal-transmission-id': transmissionId,
          'paypal-transmission-time': time,
          'paypal-transmission-sig': this.signature(transmissionId, time, w.id, body),
          'paypal-cert-url': `${this.baseUrl}/v1/notifications/certs/standin`,
          'paypal-auth-algo': 'SHA256withRSA',
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      status = res.status;
      await res.arrayBuffer();
    } catch {
      status = null;
    }
    this.sent.push({ url: w.url, event, status, attempt });
    if (this.sent.length > 10_000) this.sent.shift();
    const accepted = status !== null && status >= 200 && status < 300;
    if (accepted || attempt > this.retryDelays.length) delete this.state.redeliveries[key];
    else {
      const r = { webhookId, event, attempt: attempt + 1, dueAt: Date.now() + this.retryDelays[attempt - 1] };
      this.state.redeliveries[key] = r;
      // A stopped stand-in keeps it in its state (file) for its next start.
      if (this.server) this.scheduleRedelivery(key, r);
    }
    this.save();
  }

  private scheduleRedelivery(key: string, r: Redelivery) {
    this.later(Math.max(0, r.dueAt - Date.now()), () => {
      if (this.state.redeliveries[key] === r) void this.deliver(r.webhookId, r.event, r.attempt);
    });
  }

  // ---- simulations for tests and demos -------------------------------------------------------------

  /**
   * A payment attempt for a subscription: a transaction that the subscription's transactions list shows
   * (`GET /v1/billing/subscriptions/{id}/transactions`: COMPLETED, or DECLINED for a failed one), and that can be
   * refunded by its id when it was captured (`POST /v2/payments/captures/{id}/refund`).
   */
  private record(s: Json, attempt: { status: 'COMPLETED' | 'DECLINED'; amount: Json; time: string }) {
    const capture = {
      id: id(attempt.status === 'COMPLETED' ? 'CAP' : 'DCL', 14),
      subscription: s.id,
      status: attempt.status,
      amount: attempt.amount,
      time: attempt.time,
      refunds: [] as Json[],
      clientId: s.clientId,
    };
    this.state.captures[capture.id] = capture;
    return capture;
  }

  /** What billing (src/dev/paypal-billing.ts) calls back. */
  private readonly host: BillingHost = {
    plan: (planId) => this.state.plans[planId],
    record: (s, attempt) => this.record(s, attempt),
    notify: (s, eventType, resource, summary) => this.notify(s.clientId, eventType, resource, summary),
    present: (s) => this.presentSubscription(s),
  };

  /** Runs billing calls one at a time. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.billing.then(fn, fn);
    this.billing = run.catch(() => undefined);
    return run;
  }

  /** The payment attempts of a subscription (captured and declined; tests read the refunds here). */
  captures(subId: string): Json[] {
    return Object.values(this.state.captures).filter((c) => c.subscription === subId);
  }

  /**
   * Bills the next cycle now, whatever its date (an early renewal, for tests that do not move a clock): the next
   * one is due an interval later. Its notifications are sent before it returns.
   */
  async renew(subId: string) {
    await this.serial(async () => {
      const s = this.state.subscriptions[subId];
      const at = clockOf(s);
      s.billing_info.next_billing_time = at.toISOString();
      await billEvent(this.host, s, { at: at.getTime(), kind: 'cycle' });
      this.save();
    });
  }

  /** The next `count` payment attempts of the subscription fail (renewals, retries, captures), as a sandbox can. */
  failPayments(subId: string, count: number) {
    const s = this.state.subscriptions[subId];
    s.fail_next = count;
    this.save();
  }

  /** A renewal whose payment fails now (PayPal retries it 5 days later). */
  async failPayment(subId: string) {
    this.failPayments(subId, (this.state.subscriptions[subId].fail_next ?? 0) + 1);
    await this.renew(subId);
  }

  /**
   * The test clock of these subscriptions (`POST /v1/dev/clock`): `align` moves their clocks to `to` without
   * billing; `advance` moves them there billing every cycle and retry due by then, oldest first, with the
   * notifications. Clocks only move forward. Answers what each subscription billed.
   */
  async setClock(subIds: string[], to: Date, mode: 'align' | 'advance') {
    return this.serial(async () => {
      const subs = subIds.map((i) => this.state.subscriptions[i]).filter(Boolean);
      let billed = new Map<string, number>();
      if (mode === 'align') for (const s of subs) moveClock(s, to);
      else billed = await billDue(this.host, subs, to);
      this.save();
      return subs.map((s) => ({
        id: s.id,
        status: s.status,
        now: subNow(s),
        next_billing_time: s.billing_info.next_billing_time ?? null,
        billed: billed.get(s.id) ?? 0,
      }));
    });
  }

  /** Bills what is due on each subscription's own clock (the real-time tick). */
  async tick() {
    await this.serial(async () => {
      const due = Object.values(this.state.subscriptions).filter((s) => s.status === 'ACTIVE');
      const billed = await billDue(this.host, due);
      if ([...billed.values()].some((n) => n > 0)) this.save();
    });
  }

  async expire(subId: string) {
    const s = this.state.subscriptions[subId];
    s.status = 'EXPIRED';
    this.save();
    await this.notify(s.clientId, 'BILLING.SUBSCRIPTION.EXPIRED', this.presentSubscription(s));
  }

  // ---- the API ---------------------------------------------------------------------------------------

  private presentSubscription(s: Json) {
    const rest = Object.fromEntries(Object.entries(s).filter(([k]) => !INTERNAL.includes(k)));
    const links =
      s.status === 'APPROVAL_PENDING'
        ? [{ rel: 'approve', href: `${this.baseUrl}/checkoutnow?ba_token=${s.approval_token}`, method: 'GET' }]
        : [];
    return {
      ...rest,
      links: [...links, { rel: 'self', href: `${this.baseUrl}/v1/billing/subscriptions/${s.id}`, method: 'GET' }],
    };
  }

  /**
   * Refunds a capture (all of what is left without `amount`) and sends PAYMENT.CAPTURE.REFUNDED with the refund as its
   * resource, its `up` link naming the capture, as PayPal's notification carries it.
   */
  private refundCapture(c: Json, amount: Json | null, note: string | null) {
    const refunded0 = c.refunds.reduce((sum: number, r: Json) => sum + Number(r.amount.value), 0);
    const value = amount ?? {
      currency_code: c.amount.currency_code,
      value: (Number(c.amount.value) - refunded0).toFixed(2),
    };
    const refund = {
      id: id('REF', 14),
      status: 'COMPLETED',
      amount: value,
      note_to_payer: note,
      ...(c.custom_id ? { custom_id: c.custom_id } : {}),
      create_time: now(),
      links: [
        { href: `${this.baseUrl}/v2/payments/refunds/PENDING`, rel: 'self', method: 'GET' },
        { href: `${this.baseUrl}/v2/payments/captures/${c.id}`, rel: 'up', method: 'GET' },
      ],
    };
    refund.links[0].href = `${this.baseUrl}/v2/payments/refunds/${refund.id}`;
    c.refunds.push(refund);
    const refunded = c.refunds.reduce((sum: number, r: Json) => sum + Number(r.amount.value), 0);
    c.status = refunded >= Number(c.amount.value) ? 'REFUNDED' : 'PARTIALLY_REFUNDED';
    this.save();
    this.later(0, () => void this.notify(c.clientId, 'PAYMENT.CAPTURE.REFUNDED', refund));
    return refund;
  }

  /** A refund made at PayPal (the merchant's dashboard): all of what is left of the capture, or `value` of it. */
  refundAtProvider(captureId: string, value?: string) {
    const c = this.state.captures[captureId];
    if (!c) throw new Error(`no capture ${captureId}`);
    return this.refundCapture(c, value ? { currency_code: c.amount.currency_code, value } : null, null);
  }

  /** An order's capture as PayPal shows it (in the order's `purchase_units[0].payments.captures`, a notification). */
  private presentCapture(c: Json) {
    return {
      id: c.id,
      status: c.status,
      amount: c.amount,
      final_capture: true,
      custom_id: c.custom_id,
      supplementary_data: { related_ids: { order_id: c.order } },
      create_time: c.time,
      links: [
        { href: `${this.baseUrl}/v2/payments/captures/${c.id}`, rel: 'self', method: 'GET' },
        { href: `${this.baseUrl}/v2/payments/captures/${c.id}/refund`, rel: 'refund', method: 'POST' },
        { href: `${this.baseUrl}/v2/checkout/orders/${c.order}`, rel: 'up', method: 'GET' },
      ],
    };
  }

  /** A subscription's transaction as PayPal shows it (the transactions list, a capture's answer). */
  private presentTransaction(s: Json, c: Json) {
    return {
      status: c.status,
      id: c.id,
      amount_with_breakdown: {
        gross_amount: c.amount,
        fee_amount: { currency_code: c.amount.currency_code, value: '0.00' },
        net_amount: c.amount,
      },
      payer_name: s.subscriber?.name ?? null,
      payer_email: s.subscriber?.email_address ?? null,
      time: c.time,
    };
  }

  private presentOrder(o: Json) {
    const { clientId: _c, application_context: _a, ...rest } = o;
    const links =
      o.status === 'CREATED'
        ? [{ rel: 'approve', href: `${this.baseUrl}/checkoutnow?token=${o.id}`, method: 'GET' }]
        : [];
    return {
      ...rest,
      links: [...links, { rel: 'self', href: `${this.baseUrl}/v2/checkout/orders/${o.id}`, method: 'GET' }],
    };
  }

  private app(): Koa {
    const app = new Koa();
    const router = new Router();
    const auth = async (ctx: Context, next: () => Promise<unknown>) => {
      this.received.push({ method: ctx.method, path: ctx.path });
      if (this.received.length > 10_000) this.received.shift();
      const delay = this.delays.findIndex((d) => ctx.path.includes(d.pathIncludes));
      if (delay >= 0) {
        const [{ ms }] = this.delays.splice(delay, 1);
        await new Promise((resolve) => this.later(ms, () => resolve(undefined)));
      }
      const held = this.holds.findIndex((h) => h.route === `${ctx.method} ${ctx.path}`);
      if (held >= 0) {
        const [h] = this.holds.splice(held, 1);
        h.arrived();
        await h.released;
      }
      const failure = this.failures.shift();
      if (failure) return paypalError(ctx, failure.status, failure.name, failure.message);
      const m = /^Bearer (.+)$/.exec(ctx.get('authorization'));
      const token = m && this.state.tokens[m[1]];
      if (!token || token.expiresAt < Date.now())
        return paypalError(
          ctx,
          401,
          'AUTHENTICATION_FAILURE',
          'Authentication failed due to invalid authentication credentials or a missing Authorization header.',
        );
      ctx.state.clientId = token.clientId;
      // PayPal-Request-Id: the same POST twice answers the first result.
      const key = ctx.method === 'POST' ? ctx.get('paypal-request-id') : '';
      if (key && this.state.idempotency[`${token.clientId}:${key}`]) {
        const saved = this.state.idempotency[`${token.clientId}:${key}`];
        ctx.status = saved.status;
        ctx.body = saved.body;
        return;
      }
      await next();
      if (key && ctx.status < 300)
        this.state.idempotency[`${token.clientId}:${key}`] = { status: ctx.status, body: ctx.body };
      this.save();
    };
    const own = <T extends Json>(ctx: Context, map: Record<string, T>, key: string): T | undefined => {
      const item = map[key];
      if (!item || item.clientId !== ctx.state.clientId) {
        paypalError(ctx, 404, 'RESOURCE_NOT_FOUND', 'The specified resource does not exist.', 'INVALID_RESOURCE_ID');
        return undefined;
      }
      return item;
    };
    const body = (ctx: Context) => (ctx.request.body ?? {}) as Json;

    router.post('/v1/oauth2/token', (ctx) => {
      const failure = this.failures.shift();
      if (failure) return paypalError(ctx, failure.status, failure.name, failure.message);
      const m = /^Basic (.+)$/.exec(ctx.get('authorization'));
      const [clientId, secret] = m ? Buffer.from(m[1], 'base64').toString().split(':') : [];
      const expected = clientId ? this.state.credentials[clientId] : undefined;
      const ok =
        expected !== undefined &&
        secret !== undefined &&
        expected.length === secret.length &&
        timingSafeEqual(Buffer.from(expected), Buffer.from(secret));
      if (!ok || body(ctx).grant_type !== 'client_credentials') {
        ctx.status = 401;
        ctx.body = { error: 'invalid_client', error_description: 'Client Authentication failed' };
        return;
      }
      const token = `A21AA${randomBytes(24).toString('base64url')}`;
      this.state.tokens[token] = { clientId, expiresAt: Date.now() + 32_400_000 };
      ctx.body = {
        scope: 'https://uri.paypal.com/services/subscriptions',
        access_token: token,
        token_type: 'Bearer',
        app_id: `APP-${clientId.slice(0, 8)}`,
        expires_in: 32400,
        nonce: randomUUID(),
      };
    });

    router.post('/v1/catalogs/products', auth, (ctx) => {
      const b = body(ctx);
      if (!b.name)
        return paypalError(ctx, 400, 'INVALID_REQUEST', 'Request is not well-formed.', 'MISSING_REQUIRED_PARAMETER');
      const p = {
        id: id('PROD-'),
        name: b.name,
        description: b.description,
        type: b.type ?? 'SERVICE',
        category: b.category,
        create_time: now(),
        clientId: ctx.state.clientId,
      };
      this.state.products[p.id] = p;
      ctx.status = 201;
      ctx.body = { ...p, clientId: undefined };
    });

    router.post('/v1/billing/plans', auth, (ctx) => {
      const b = body(ctx);
      const product = own(ctx, this.state.products, b.product_id);
      if (!product) return;
      const cycles = b.billing_cycles as Json[] | undefined;
      const valid =
        cycles?.length &&
        cycles.every(
          (c) =>
            Number(c.pricing_scheme?.fixed_price?.value) >= 0 &&
            /^[A-Z]{3}$/.test(c.pricing_scheme?.fixed_price?.currency_code ?? ''),
        );
      if (!valid)
        return paypalError(
          ctx,
          422,
          'UNPROCESSABLE_ENTITY',
          'The requested action could not be performed.',
          'INVALID_PRICING_SCHEME',
        );
      const p = {
        id: id('P-', 24),
        product_id: b.product_id,
        name: b.name,
        status: 'ACTIVE',
        billing_cycles: cycles,
        payment_preferences: b.payment_preferences,
        create_time: now(),
        clientId: ctx.state.clientId,
      };
      this.state.plans[p.id] = p;
      ctx.status = 201;
      ctx.body = { ...p, clientId: undefined };
    });
    router.get('/v1/billing/plans/:id', auth, (ctx) => {
      const p = own(ctx, this.state.plans, ctx.params.id);
      if (p) ctx.body = { ...p, clientId: undefined };
    });

    router.post('/v1/billing/subscriptions', auth, (ctx) => {
      const b = body(ctx);
      const plan = own(ctx, this.state.plans, b.plan_id);
      if (!plan) return;
      const s = {
        id: id('I-', 12),
        plan_id: plan.id,
        status: 'APPROVAL_PENDING',
        custom_id: b.custom_id ?? null,
        subscriber: b.subscriber ?? null,
        billing_info: {
          outstanding_balance: { currency_code: 'USD', value: '0.00' },
          cycle_executions: [] as Json[],
          next_billing_time: null as string | null,
          last_payment: null as Json | null,
          failed_payments_count: 0,
        },
        create_time: now(),
        status_update_time: now(),
        approval_token: id('BA-', 17),
        application_context: b.application_context ?? {},
        clientId: ctx.state.clientId,
      };
      this.state.subscriptions[s.id] = s;
      ctx.status = 201;
      ctx.body = this.presentSubscription(s);
    });
    router.get('/v1/billing/subscriptions/:id', auth, (ctx) => {
      const s = own(ctx, this.state.subscriptions, ctx.params.id);
      if (s) ctx.body = this.presentSubscription(s);
    });
    // As PayPal documents it: both times are required (RFC 3339); the answer lists the cycles charged in the range.
    router.get('/v1/billing/subscriptions/:id/transactions', auth, (ctx) => {
      const s = own(ctx, this.state.subscriptions, ctx.params.id);
      if (!s) return;
      const [start, end] = [ctx.query.start_time, ctx.query.end_time].map((t) => Date.parse(String(t ?? '')));
      if (Number.isNaN(start) || Number.isNaN(end))
        return paypalError(
          ctx,
          400,
          'INVALID_REQUEST',
          'Request is not well-formed, syntactically incorrect, or violates schema.',
          'MISSING_REQUIRED_PARAMETER',
        );
      const transactions = this.captures(s.id)
        .filter((c) => Date.parse(c.time) >= start && Date.parse(c.time) <= end)
        .sort((a, b) => Date.parse(a.time) - Date.parse(b.time))
        .map((c) => this.presentTransaction(s, c));
      ctx.body = {
        transactions,
        total_items: transactions.length,
        total_pages: 1,
        links: [{ href: `${this.baseUrl}${ctx.url}`, rel: 'self', method: 'GET' }],
      };
    });
    // Capture the outstanding balance of a subscription whose payments failed, as PayPal documents it
    // (https://developer.paypal.com/docs/api/subscriptions/v1/#subscriptions_capture): `note`, `capture_type`
    // (OUTSTANDING_BALANCE) and `amount` are required; the subscription must be active, suspended or expired, owe
    // something, in that currency, at least the amount. 200 with the transaction: COMPLETED, or DECLINED when the
    // payment fails (then it is one more failed payment, notified as such).
    router.post('/v1/billing/subscriptions/:id/capture', auth, async (ctx) => {
      const s = own(ctx, this.state.subscriptions, ctx.params.id);
      if (!s) return;
      const b = body(ctx);
      const value = Number(b.amount?.value);
      if (!b.note || b.capture_type !== 'OUTSTANDING_BALANCE' || !b.amount?.currency_code || !(value > 0))
        return paypalError(
          ctx,
          400,
          'INVALID_REQUEST',
          'Request is not well-formed, syntactically incorrect, or violates schema.',
          b.note && b.capture_type && b.amount ? 'INVALID_PARAMETER_VALUE' : 'MISSING_REQUIRED_PARAMETER',
        );
      const unprocessable = (issue: string, description: string) =>
        paypalError(ctx, 422, 'UNPROCESSABLE_ENTITY', description, issue);
      if (!['ACTIVE', 'SUSPENDED', 'EXPIRED'].includes(s.status))
        return unprocessable(
          'SUBSCRIPTION_STATUS_INVALID',
          'Invalid subscription status for capture action; subscription status should be active or suspended or expired.',
        );
      const owed = outstandingOf(s);
      if (owed <= 0)
        return unprocessable('ZERO_OUTSTANDING_BALANCE', 'Current outstanding balance should be greater than zero.');
      if (b.amount.currency_code !== s.billing_info.outstanding_balance.currency_code)
        return unprocessable(
          'CURRENCY_MISMATCH',
          "The currency code is different from the subscription's currency code.",
        );
      if (value > owed + 0.004)
        return unprocessable(
          'AMOUNT_GREATER_THAN_OUTSTANDING_BALANCE',
          'The capture amount can not be greater than the current outstanding balance.',
        );
      const tx = await this.serial(() =>
        captureOutstanding(this.host, s, { currency_code: b.amount.currency_code, value: value.toFixed(2) }),
      );
      ctx.body = this.presentTransaction(s, tx);
    });

    // ---- not PayPal's API: the stand-in's test clock and failure switch (a sandbox's "negative testing") ----
    // Both take the merchant's token like the rest; another merchant's subscriptions are not found.
    router.post('/v1/dev/clock', auth, async (ctx) => {
      const b = body(ctx);
      const ids = b.subscription_ids as unknown;
      const to = Date.parse(String(b.now ?? ''));
      if (
        !Array.isArray(ids) ||
        !ids.every((i) => typeof i === 'string') ||
        Number.isNaN(to) ||
        !['align', 'advance'].includes(b.mode)
      )
        return paypalError(
          ctx,
          400,
          'INVALID_REQUEST',
          'subscription_ids (an array of ids), now (RFC 3339) and mode (align or advance) are required.',
          'MISSING_REQUIRED_PARAMETER',
        );
      // Ids the caller does not own (unknown, or another merchant's) are listed apart and left alone, so one stale id
      // does not stop the clock of the others.
      const mine = (ids as string[]).filter((i) => this.state.subscriptions[i]?.clientId === ctx.state.clientId);
      ctx.body = {
        subscriptions: await this.setClock(mine, new Date(to), b.mode),
        not_found: (ids as string[]).filter((i) => !mine.includes(i)),
      };
    });
    router.post('/v1/dev/subscriptions/:id/fail-payments', auth, (ctx) => {
      const s = own(ctx, this.state.subscriptions, ctx.params.id);
      if (!s) return;
      const count = Number(body(ctx).count ?? 1);
      if (!Number.isInteger(count) || count < 0 || count > 1000)
        return paypalError(ctx, 400, 'INVALID_REQUEST', 'count: an integer from 0 to 1000.', 'INVALID_PARAMETER_VALUE');
      this.failPayments(s.id, count);
      ctx.body = { id: s.id, fail_next: count };
    });

    // Refund a captured payment: the whole of it without `amount` (PayPal's default); a capture refunded in full
    // answers 422 CAPTURE_FULLY_REFUNDED. `PayPal-Request-Id` makes a retry answer the first refund (see `auth`).
    router.post('/v2/payments/captures/:id/refund', auth, (ctx) => {
      const c = own(ctx, this.state.captures, ctx.params.id);
      if (!c) return;
      // A declined attempt captured nothing: PayPal knows no capture by that id.
      if (c.status === 'DECLINED')
        return paypalError(
          ctx,
          404,
          'RESOURCE_NOT_FOUND',
          'The specified resource does not exist.',
          'INVALID_RESOURCE_ID',
        );
      if (c.status === 'REFUNDED')
        return paypalError(
          ctx,
          422,
          'UNPROCESSABLE_ENTITY',
          'The requested action could not be performed, semantically incorrect, or failed business validation.',
          'CAPTURE_FULLY_REFUNDED',
        );
      const b = body(ctx);
      const refund = this.refundCapture(c, (b.amount as Json | undefined) ?? null, b.note_to_payer ?? null);
      ctx.status = 201;
      ctx.body = { id: refund.id, status: refund.status, links: refund.links };
    });
    router.post('/v1/billing/subscriptions/:id/revise', auth, (ctx) => {
      const s = own(ctx, this.state.subscriptions, ctx.params.id);
      if (!s) return;
      const plan = own(ctx, this.state.plans, body(ctx).plan_id);
      if (!plan) return;
      if (s.status !== 'ACTIVE')
        return paypalError(
          ctx,
          422,
          'UNPROCESSABLE_ENTITY',
          'The requested action could not be performed.',
          'SUBSCRIPTION_STATUS_INVALID',
        );
      s.pending = { plan_id: plan.id, token: id('BA-', 17), application_context: body(ctx).application_context ?? {} };
      // As PayPal answers a revise (https://developer.paypal.com/docs/api/subscriptions/v1/#subscriptions_revise):
      // the plan, quantity, whether the plan is overridden, when the change is effective (the next billing cycle:
      // PayPal bills the new plan's price from then on) and the buyer's approval link.
      ctx.body = {
        plan_id: plan.id,
        quantity: String(body(ctx).quantity ?? '1'),
        plan_overridden: false,
        effective_time: s.billing_info.next_billing_time ?? now(),
        links: [
          { rel: 'approve', href: `${this.baseUrl}/checkoutnow?ba_token=${s.pending.token}`, method: 'GET' },
          { rel: 'edit', href: `${this.baseUrl}/v1/billing/subscriptions/${s.id}`, method: 'PATCH' },
        ],
      };
    });
    const transition = (from: string[], to: string, eventType: string) => async (ctx: Context) => {
      const s = own(ctx, this.state.subscriptions, ctx.params.id);
      if (!s) return;
      if (!from.includes(s.status))
        return paypalError(
          ctx,
          422,
          'UNPROCESSABLE_ENTITY',
          'The requested action could not be performed.',
          'SUBSCRIPTION_STATUS_INVALID',
        );
      s.status = to;
      s.status_update_time = subNow(s);
      // Activated again (a pause ends, a cancellation at the period end is undone): a next billing time still ahead
      // stays (the buyer paid up to it); one that passed while billing was suspended is an interval from now.
      const next = s.billing_info.next_billing_time ? Date.parse(s.billing_info.next_billing_time) : 0;
      if (to === 'ACTIVE' && next <= clockOf(s).getTime())
        s.billing_info.next_billing_time = addInterval(
          clockOf(s),
          this.state.plans[s.plan_id].billing_cycles.at(-1).frequency.interval_unit,
        ).toISOString();
      ctx.status = 204;
      this.later(0, () => void this.notify(s.clientId, eventType, this.presentSubscription(s)));
    };
    router.post(
      '/v1/billing/subscriptions/:id/suspend',
      auth,
      transition(['ACTIVE'], 'SUSPENDED', 'BILLING.SUBSCRIPTION.SUSPENDED'),
    );
    router.post(
      '/v1/billing/subscriptions/:id/activate',
      auth,
      transition(['SUSPENDED'], 'ACTIVE', 'BILLING.SUBSCRIPTION.ACTIVATED'),
    );
    router.post(
      '/v1/billing/subscriptions/:id/cancel',
      auth,
      transition(
        ['ACTIVE', 'SUSPENDED', 'APPROVED', 'APPROVAL_PENDING'],
        'CANCELLED',
        'BILLING.SUBSCRIPTION.CANCELLED',
      ),
    );

    router.post('/v2/checkout/orders', auth, (ctx) => {
      const b = body(ctx);
      const unit = b.purchase_units?.[0];
      if (!unit?.amount?.value || !/^[A-Z]{3}$/.test(unit.amount.currency_code ?? ''))
        return paypalError(
          ctx,
          422,
          'UNPROCESSABLE_ENTITY',
          'The requested action could not be performed.',
          'INVALID_PARAMETER_VALUE',
        );
      const o = {
        id: id('', 17),
        intent: b.intent ?? 'CAPTURE',
        status: 'CREATED',
        purchase_units: b.purchase_units,
        create_time: now(),
        application_context: b.application_context ?? {},
        clientId: ctx.state.clientId,
      };
      this.state.orders[o.id] = o;
      ctx.status = 201;
      ctx.body = this.presentOrder(o);
    });
    router.get('/v2/checkout/orders/:id', auth, (ctx) => {
      const o = own(ctx, this.state.orders, ctx.params.id);
      if (o) ctx.body = this.presentOrder(o);
    });
    // JSON Patch of the amount or description of an order not yet captured; 204 as PayPal answers.
    router.patch('/v2/checkout/orders/:id', auth, (ctx) => {
      const o = own(ctx, this.state.orders, ctx.params.id);
      if (!o) return;
      const invalid = (issue: string) =>
        paypalError(ctx, 422, 'UNPROCESSABLE_ENTITY', 'The requested action could not be performed.', issue);
      if (o.status !== 'CREATED' && o.status !== 'APPROVED') return invalid('ORDER_ALREADY_COMPLETED');
      const ops = body(ctx) as unknown;
      if (!Array.isArray(ops) || ops.length === 0) return invalid('PATCH_VALUE_REQUIRED');
      const unit = o.purchase_units?.[0];
      for (const op of ops as { op?: string; path?: string; value?: Json }[]) {
        const m = /^\/purchase_units\/@reference_id=='default'\/(amount|description)$/.exec(op.path ?? '');
        if (op.op !== 'replace' || !m || !unit) return invalid('PATCH_PATH_REQUIRED');
        if (m[1] === 'amount' && (!op.value?.value || !/^[A-Z]{3}$/.test(op.value?.currency_code ?? '')))
          return invalid('INVALID_PARAMETER_VALUE');
        unit[m[1]] = op.value;
      }
      ctx.status = 204;
    });
    router.post('/v2/checkout/orders/:id/capture', auth, (ctx) => {
      const o = own(ctx, this.state.orders, ctx.params.id);
      if (!o) return;
      if (o.status === 'COMPLETED')
        return paypalError(
          ctx,
          422,
          'UNPROCESSABLE_ENTITY',
          'The requested action could not be performed.',
          'ORDER_ALREADY_CAPTURED',
        );
      if (o.status !== 'APPROVED')
        return paypalError(
          ctx,
          422,
          'UNPROCESSABLE_ENTITY',
          'The requested action could not be performed.',
          'ORDER_NOT_APPROVED',
        );
      // The payment: a capture PayPal keeps (refundable by its id), shown in the order and in the notification.
      const unit = o.purchase_units?.[0] ?? {};
      const capture = {
        id: id('CAP', 14),
        order: o.id,
        status: 'COMPLETED',
        amount: unit.amount,
        custom_id: unit.custom_id,
        time: now(),
        refunds: [] as Json[],
        clientId: o.clientId,
      };
      this.state.captures[capture.id] = capture;
      const shown = this.presentCapture(capture);
      unit.payments = { captures: [shown] };
      o.status = 'COMPLETED';
      this.save();
      ctx.status = 201;
      ctx.body = this.presentOrder(o);
      this.later(0, () => void this.notify(o.clientId, 'PAYMENT.CAPTURE.COMPLETED', shown));
    });

    router.post('/v1/notifications/webhooks', auth, (ctx) => {
      const b = body(ctx);
      if (!b.url || !Array.isArray(b.event_types))
        return paypalError(ctx, 400, 'INVALID_REQUEST', 'Request is not well-formed.', 'MISSING_REQUIRED_PARAMETER');
      const existing = Object.values(this.state.webhooks).find(
        (w) => w.clientId === ctx.state.clientId && w.url === b.url,
      );
      if (existing) return paypalError(ctx, 400, 'WEBHOOK_URL_ALREADY_EXISTS', 'Webhook URL already exists');
      const w = { id: id('WH-', 17), url: b.url, event_types: b.event_types, clientId: ctx.state.clientId };
      this.state.webhooks[w.id] = w;
      ctx.status = 201;
      ctx.body = { id: w.id, url: w.url, event_types: w.event_types };
    });
    router.get('/v1/notifications/webhooks', auth, (ctx) => {
      ctx.body = {
        webhooks: Object.values(this.state.webhooks)
          .filter((w) => w.clientId === ctx.state.clientId)
          .map(({ clientId: _c, ...w }) => w),
      };
    });
    router.post('/v1/notifications/verify-webhook-signature', auth, (ctx) => {
      const b = body(ctx);
      const expected = this.signature(
        String(b.transmission_id),
        String(b.transmission_time),
        String(b.webhook_id),
        JSON.stringify(b.webhook_event),
      );
      const given = Buffer.from(String(b.transmission_sig ?? ''));
      const ok =
        given.length === Buffer.from(expected).length &&
        timingSafeEqual(given, Buffer.from(expected)) &&
        this.state.webhooks[b.webhook_id]?.clientId === ctx.state.clientId;
      ctx.body = { verification_status: ok ? 'SUCCESS' : 'FAILURE' };
    });

    // The approval page: what the buyer sees at PayPal.
    router.get('/checkoutnow', (ctx) => {
      const found = this.findApproval(String(ctx.query.ba_token ?? ctx.query.token ?? ''));
      ctx.type = 'html';
      if (!found) {
        ctx.status = 404;
        ctx.body = '<!doctype html><title>PayPal (stand-in)</title><p>This approval link is not valid.</p>';
        return;
      }
      const { kind, item, plan } = found;
      const price =
        kind === 'order' ? item.purchase_units[0].amount : plan.billing_cycles.at(-1).pricing_scheme.fixed_price;
      const what =
        kind === 'order'
          ? escape(item.purchase_units[0].description ?? 'One-time purchase')
          : `${escape(plan.name)}, ${price.value} ${price.currency_code} per ` +
            plan.billing_cycles.at(-1).frequency.interval_unit.toLowerCase();
      const token = escape(String(ctx.query.ba_token ?? ctx.query.token));
      ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Approve payment (PayPal stand-in)</title></head>
<body><main><h1>Approve your payment</h1><p id="summary">${what}</p>
<form method="post" action="/checkoutnow/decision"><input type="hidden" name="token" value="${token}">
<button type="submit" name="decision" value="approve" id="approve">Agree &amp; Subscribe</button>
<button type="submit" name="decision" value="cancel" id="cancel">Cancel and return</button></form>
<p><small>Local PayPal stand-in: no money moves.</small></p></main></body></html>`;
    });
    router.post('/checkoutnow/decision', (ctx) => {
      const b = body(ctx);
      const found = this.findApproval(String(b.token ?? ''));
      if (!found) {
        ctx.status = 404;
        ctx.body = 'This approval link is not valid.';
        return;
      }
      ctx.redirect(this.decide(found, b.decision === 'approve'));
      ctx.status = 303;
    });

    app.use(bodyParser({ enableTypes: ['json', 'form'] }));
    app.use(router.routes());
    return app;
  }

  private findApproval(token: string): { kind: 'subscription' | 'revision' | 'order'; item: Json; plan: Json } | null {
    for (const s of Object.values(this.state.subscriptions)) {
      if (s.approval_token === token && s.status === 'APPROVAL_PENDING')
        return { kind: 'subscription', item: s, plan: this.state.plans[s.plan_id] };
      if (s.pending?.token === token) return { kind: 'revision', item: s, plan: this.state.plans[s.pending.plan_id] };
    }
    const o = this.state.orders[token];
    if (o && o.status === 'CREATED') return { kind: 'order', item: o, plan: {} };
    return null;
  }

  /** Applies the buyer's decision and returns where the browser goes next. */
  decide(found: { kind: 'subscription' | 'revision' | 'order'; item: Json }, approve: boolean): string {
    const { kind, item } = found;
    const ctxUrls = (kind === 'revision' ? item.pending.application_context : item.application_context) as Json;
    const back = new URL(approve ? ctxUrls.return_url : ctxUrls.cancel_url);
    if (kind === 'subscription') {
      back.searchParams.set('subscription_id', item.id);
      back.searchParams.set('ba_token', item.approval_token);
      if (approve) {
        item.status = 'APPROVED';
        item.status_update_time = subNow(item);
        this.later(this.opts.activationDelayMs ?? 0, () => {
          if (item.status !== 'APPROVED') return;
          // PayPal charges the first cycle when the subscription activates (on the subscription's clock).
          activate(this.host, item);
          this.save();
          void this.notify(item.clientId, 'BILLING.SUBSCRIPTION.ACTIVATED', this.presentSubscription(item));
        });
      }
    } else if (kind === 'revision') {
      back.searchParams.set('subscription_id', item.id);
      if (approve) {
        item.plan_id = item.pending.plan_id;
        item.status_update_time = subNow(item);
        void this.notify(item.clientId, 'BILLING.SUBSCRIPTION.UPDATED', this.presentSubscription(item));
      }
      delete item.pending;
    } else {
      back.searchParams.set('token', item.id);
      if (approve) {
        item.status = 'APPROVED';
        back.searchParams.set('PayerID', id('', 13));
        // PayPal tells the merchant a buyer approved an order (CHECKOUT.ORDER.APPROVED): it can capture it now.
        this.later(0, () => void this.notify(item.clientId, 'CHECKOUT.ORDER.APPROVED', this.presentOrder(item)));
      }
    }
    this.save();
    return back.toString();
  }

  /** Clicks the approval link the way a buyer would (for tests and scripts without a browser). */
  async approve(approveUrl: string, decision: 'approve' | 'cancel' = 'approve'): Promise<string> {
    const u = new URL(approveUrl);
    const token = u.searchParams.get('ba_token') ?? u.searchParams.get('token') ?? '';
    const res = await fetch(`${this.baseUrl}/checkoutnow/decision`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, decision }).toString(),
      redirect: 'manual',
    });
    if (res.status !== 303) throw new Error(`approval failed: ${res.status}`);
    return res.headers.get('location')!;
  }

  /** True while its HTTP server accepts connections. */
  get listening(): boolean {
    return this.server?.listening ?? false;
  }

  async start(): Promise<string> {
    this.server = http.createServer(this.app().callback());
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject); // the port is taken
      this.server!.listen(this.opts.port ?? 0, this.opts.host ?? '127.0.0.1', () => resolve());
    });
    const { port } = this.server.address() as net.AddressInfo;
    this.baseUrl = `http://${this.opts.host ?? '127.0.0.1'}:${port}`;
    // Redeliveries a stopped stand-in still owed (its state file keeps them), each at its time or at once if past.
    for (const [key, r] of Object.entries(this.state.redeliveries)) this.scheduleRedelivery(key, r);
    if (this.opts.tickMs) {
      this.ticker = setInterval(() => void this.tick().catch(() => undefined), this.opts.tickMs);
      this.ticker.unref();
    }
    return this.baseUrl;
  }

  async stop(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const server = this.server;
    if (!server) return;
    this.server = null; // an attempt under way schedules no retry now (its state keeps it for the next start)
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
