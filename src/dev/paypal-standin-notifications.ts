// The PayPal stand-in's webhooks, both ways: the merchant's webhook API (register, list, verify a signature) and the
// notifications it sends them, signed, redelivered as PayPal redelivers one a webhook did not accept.
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import zlib from 'node:zlib';
import {
  body,
  id,
  now,
  paypalError,
  type Json,
  type Redelivery,
  type StandInArea,
  type StandInCore,
} from './paypal-standin-core.js';

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

/** Notifications out: signed with a key of this stand-in's own, checked by its verify-webhook-signature. */
export class Notifications {
  readonly signingKey = randomBytes(32);
  /** Every notification sent (each attempt: 1, then retries), for tests. */
  readonly sent: { url: string; event: Json; status: number | null; attempt: number }[] = [];
  private readonly retryDelays: number[];

  constructor(private readonly core: StandInCore) {
    const r = core.opts.notificationRetry ?? {};
    this.retryDelays = notificationRetryDelays(r.firstMs, r.times, r.spanMs);
  }

  signature(transmissionId: string, time: string, webhookId: string, body: string) {
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
    const hooks = Object.values(this.core.state.webhooks).filter(
      (w) => w.clientId === clientId && w.event_types.some((t) => t.name === eventType || t.name === '*'),
    );
    await Promise.all(hooks.map((w) => this.deliver(w.id, event, 1)));
    return event;
  }

  /** One attempt of one notification to one webhook; schedules the next attempt when it was not accepted. */
  private async deliver(webhookId: string, event: Json, attempt: number): Promise<void> {
    const { state } = this.core;
    const key = `${String(event.id)}:${webhookId}`;
    const w = state.webhooks[webhookId];
    if (!w) {
      // The webhook was deleted meanwhile: PayPal has nowhere to send it.
      delete state.redeliveries[key];
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
          'paypal-cert-url': `${this.core.baseUrl}/v1/notifications/certs/standin`,
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
    if (accepted || attempt > this.retryDelays.length) delete state.redeliveries[key];
    else {
      const r = { webhookId, event, attempt: attempt + 1, dueAt: Date.now() + this.retryDelays[attempt - 1] };
      state.redeliveries[key] = r;
      // A stopped stand-in keeps it in its state (file) for its next start.
      if (this.core.server) this.scheduleRedelivery(key, r);
    }
    this.core.save();
  }

  scheduleRedelivery(key: string, r: Redelivery) {
    this.core.later(Math.max(0, r.dueAt - Date.now()), () => {
      if (this.core.state.redeliveries[key] === r) void this.deliver(r.webhookId, r.event, r.attempt);
    });
  }

  /** Redeliveries a stopped stand-in still owed (its state file keeps them), each at its time or at once if past. */
  resumeRedeliveries() {
    for (const [key, r] of Object.entries(this.core.state.redeliveries)) this.scheduleRedelivery(key, r);
  }
}

/** The merchant's webhook API: register a URL for event types, list them, verify a notification's signature. */
export function webhookRoutes({ router, core, auth }: StandInArea, notifications: Notifications) {
  router.post('/v1/notifications/webhooks', auth, (ctx) => {
    const b = body(ctx);
    if (!b.url || !Array.isArray(b.event_types))
      return paypalError(ctx, 400, 'INVALID_REQUEST', 'Request is not well-formed.', 'MISSING_REQUIRED_PARAMETER');
    const existing = Object.values(core.state.webhooks).find(
      (w) => w.clientId === ctx.state.clientId && w.url === b.url,
    );
    if (existing) return paypalError(ctx, 400, 'WEBHOOK_URL_ALREADY_EXISTS', 'Webhook URL already exists');
    const w = { id: id('WH-', 17), url: b.url, event_types: b.event_types, clientId: ctx.state.clientId };
    core.state.webhooks[w.id] = w;
    ctx.status = 201;
    ctx.body = { id: w.id, url: w.url, event_types: w.event_types };
  });
  router.get('/v1/notifications/webhooks', auth, (ctx) => {
    ctx.body = {
      webhooks: Object.values(core.state.webhooks)
        .filter((w) => w.clientId === ctx.state.clientId)
        .map(({ clientId: _c, ...w }) => w),
    };
  });
  router.post('/v1/notifications/verify-webhook-signature', auth, (ctx) => {
    const b = body(ctx);
    const expected = notifications.signature(
      String(b.transmission_id),
      String(b.transmission_time),
      String(b.webhook_id),
      JSON.stringify(b.webhook_event),
    );
    const given = Buffer.from(String(b.transmission_sig ?? ''));
    const ok =
      given.length === Buffer.from(expected).length &&
      timingSafeEqual(given, Buffer.from(expected)) &&
      core.state.webhooks[b.webhook_id]?.clientId === ctx.state.clientId;
    ctx.body = { verification_status: ok ? 'SUCCESS' : 'FAILURE' };
  });
}
