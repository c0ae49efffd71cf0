// A local stand-in for PayPal: the subset of its REST API that PayPalProvider uses, with state, an
// approval page a person (or a headless browser) can click through, and signed notifications that
// its own verify-webhook-signature endpoint checks, as PayPal does. The service talks to it over
// HTTP exactly as it would to PayPal; nothing in the service knows it is a stand-in.
// This file assembles it and holds what tests call; each API area is a file of its own: identity (-oauth),
// subscriptions and plans (-subscriptions), orders and refunds (-orders), webhooks and notifications
// (-notifications), the approval page (-approval), the stand-in's own controls (-controls), shared state (-core).
import http from 'node:http';
import type net from 'node:net';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import Koa from 'koa';
import type { BillingHost } from './paypal-billing.js';
import { decide, approvalRoutes } from './paypal-standin-approval.js';
import { BillingControls } from './paypal-standin-controls.js';
import {
  StandInCore,
  type Json,
  type StandInArea,
  type StandInOptions,
  type StandInParts,
} from './paypal-standin-core.js';
import { Notifications, webhookRoutes } from './paypal-standin-notifications.js';
import { authentication, tokenRoute } from './paypal-standin-oauth.js';
import { orderRoutes, refundCapture } from './paypal-standin-orders.js';
import { capturesOf, presentSubscription, recordAttempt, subscriptionRoutes } from './paypal-standin-subscriptions.js';

export class PayPalStandIn {
  private readonly core: StandInCore;
  private readonly notifications: Notifications;
  private readonly parts: StandInParts;
  private readonly controls: BillingControls;
  private ticker: NodeJS.Timeout | null = null;

  constructor(opts: StandInOptions = {}) {
    const core = new StandInCore(opts);
    this.core = core;
    this.notifications = new Notifications(core);
    const notify = this.notifications.notify.bind(this.notifications);
    /** What billing (src/dev/paypal-billing.ts) calls back. */
    const host: BillingHost = {
      plan: (planId) => core.state.plans[planId],
      record: (s, attempt) => recordAttempt(core, s, attempt),
      notify: (s, eventType, resource, summary) => notify(s.clientId, eventType, resource, summary),
      present: (s) => presentSubscription(core.baseUrl, s),
    };
    this.parts = { core, auth: authentication(core), notify, host };
    this.controls = new BillingControls(this.parts);
  }

  get baseUrl(): string {
    return this.core.baseUrl;
  }

  /** The key notifications are signed with (checked by the stand-in's verify-webhook-signature). */
  get signingKey(): Buffer {
    return this.notifications.signingKey;
  }

  /** Every notification sent (each attempt: 1, then retries), for tests. */
  get sent() {
    return this.notifications.sent;
  }

  /** The last 10,000 API calls received (method and path), for tests that count what the service asked. */
  get received() {
    return this.core.received;
  }

  /** Accepts these credentials from now on. */
  addCredentials(clientId: string, secret: string) {
    this.core.state.credentials[clientId] = secret;
    this.core.save();
  }

  /**
   * The next API calls answer with this error (to test provider failures): any client's, or only those of `clientId`
   * (a test's own app, so that another app's calls meanwhile do not take the failure).
   */
  failNext(
    status = 500,
    name = 'INTERNAL_SERVER_ERROR',
    message = 'An internal server error has occurred',
    times = 1,
    clientId?: string,
  ) {
    for (let i = 0; i < times; i++) this.core.failures.push({ status, name, message, clientId });
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
    this.core.holds.push({ route: `${method} ${path}`, arrived, released });
    return { reached, release };
  }

  /** The next API calls whose path includes `pathIncludes` answer `ms` later (a slow provider). */
  delayNext(pathIncludes: string, ms: number, times = 1) {
    for (let i = 0; i < times; i++) this.core.delays.push({ pathIncludes, ms });
  }

  subscription(subId: string): Json | undefined {
    return this.core.state.subscriptions[subId];
  }

  /** The subscription an approval link (`ba_token`) was made for, for tests. */
  subscriptionByApproval(approveUrl: string): Json | undefined {
    const token = new URL(approveUrl).searchParams.get('ba_token');
    return Object.values(this.core.state.subscriptions).find((s) => s.approval_token === token);
  }

  order(orderId: string): Json | undefined {
    return this.core.state.orders[orderId];
  }

  /**
   * Sends an event to every webhook of the client subscribed to its type, signed, redelivered until accepted
   * (paypal-standin-notifications.ts). Resolves after the first attempts.
   */
  notify(clientId: string, eventType: string, resource: Json, summary = eventType) {
    return this.notifications.notify(clientId, eventType, resource, summary);
  }

  /** The payment attempts of a subscription (captured and declined; tests read the refunds here). */
  captures(subId: string): Json[] {
    return capturesOf(this.core, subId);
  }

  /** Bills the next cycle now, whatever its date (paypal-standin-controls.ts). */
  renew(subId: string) {
    return this.controls.renew(subId);
  }

  /** The next `count` payment attempts of the subscription fail (renewals, retries, captures), as a sandbox can. */
  failPayments(subId: string, count: number) {
    this.controls.failPayments(subId, count);
  }

  /** A renewal whose payment fails now (PayPal retries it 5 days later). */
  failPayment(subId: string) {
    return this.controls.failPayment(subId);
  }

  /** The test clock of these subscriptions (`POST /v1/dev/clock`; paypal-standin-controls.ts). */
  setClock(subIds: string[], to: Date, mode: 'align' | 'advance') {
    return this.controls.setClock(subIds, to, mode);
  }

  /** Bills what is due on each subscription's own clock (the real-time tick). */
  tick() {
    return this.controls.tick();
  }

  expire(subId: string) {
    return this.controls.expire(subId);
  }

  /** A refund made at PayPal (the merchant's dashboard): all of what is left of the capture, or `value` of it. */
  refundAtProvider(captureId: string, value?: string) {
    const c = this.core.state.captures[captureId];
    if (!c) throw new Error(`no capture ${captureId}`);
    return refundCapture(this.parts, c, value ? { currency_code: c.amount.currency_code, value } : null, null);
  }

  /** Applies the buyer's decision and returns where the browser goes next. */
  decide(found: { kind: 'subscription' | 'revision' | 'order'; item: Json }, approve: boolean): string {
    return decide(this.parts, found, approve);
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

  private app(): Koa {
    const app = new Koa();
    const area: StandInArea = { ...this.parts, router: new Router() };
    tokenRoute(area.router, area.core);
    subscriptionRoutes(area);
    this.controls.routes(area);
    orderRoutes(area);
    webhookRoutes(area, this.notifications);
    approvalRoutes(area);
    app.use(bodyParser({ enableTypes: ['json', 'form'] }));
    app.use(area.router.routes());
    return app;
  }

  /** True while its HTTP server accepts connections. */
  get listening(): boolean {
    return this.core.server?.listening ?? false;
  }

  async start(): Promise<string> {
    const server = http.createServer(this.app().callback());
    this.core.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject); // the port is taken
      server.listen(this.core.opts.port ?? 0, this.core.opts.host ?? '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as net.AddressInfo;
    this.core.baseUrl = `http://${this.core.opts.host ?? '127.0.0.1'}:${port}`;
    this.notifications.resumeRedeliveries();
    if (this.core.opts.tickMs) {
      this.ticker = setInterval(() => void this.tick().catch(() => undefined), this.core.opts.tickMs);
      this.ticker.unref();
    }
    return this.baseUrl;
  }

  async stop(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
    this.core.clearTimers();
    const server = this.core.server;
    if (!server) return;
    this.core.server = null; // an attempt under way schedules no retry now (its state keeps it for the next start)
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
