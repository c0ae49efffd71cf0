// Not PayPal's API: the stand-in's own controls, a sandbox's "negative testing" and test clock. Renewals on demand,
// failed payments, a subscription's clock moved (aligned, or advanced billing what falls due), expiry; as methods for
// tests and as `/v1/dev/...` routes taking the merchant's token.
import { billDue, billEvent, clockOf, moveClock } from './paypal-billing.js';
import {
  body,
  paypalError,
  subNow,
  type StandInArea,
  type StandInParts,
  type StandInCore,
} from './paypal-standin-core.js';
import { presentSubscription } from './paypal-standin-subscriptions.js';

/** The stand-in's simulations of billing (renewals, failed payments, the test clock, expiry), for tests and demos. */
export class BillingControls {
  private readonly core: StandInCore;

  constructor(private readonly area: StandInParts) {
    this.core = area.core;
  }

  /**
   * Bills the next cycle now, whatever its date (an early renewal, for tests that do not move a clock): the next
   * one is due an interval later. Its notifications are sent before it returns.
   */
  async renew(subId: string) {
    await this.core.serial(async () => {
      const s = this.core.state.subscriptions[subId];
      const at = clockOf(s);
      s.billing_info.next_billing_time = at.toISOString();
      await billEvent(this.area.host, s, { at: at.getTime(), kind: 'cycle' });
      this.core.save();
    });
  }

  /** The next `count` payment attempts of the subscription fail (renewals, retries, captures), as a sandbox can. */
  failPayments(subId: string, count: number) {
    const s = this.core.state.subscriptions[subId];
    s.fail_next = count;
    this.core.save();
  }

  /** A renewal whose payment fails now (PayPal retries it 5 days later). */
  async failPayment(subId: string) {
    this.failPayments(subId, (this.core.state.subscriptions[subId].fail_next ?? 0) + 1);
    await this.renew(subId);
  }

  /**
   * The test clock of these subscriptions (`POST /v1/dev/clock`): `align` moves their clocks to `to` without
   * billing; `advance` moves them there billing every cycle and retry due by then, oldest first, with the
   * notifications. Clocks only move forward. Answers what each subscription billed.
   */
  async setClock(subIds: string[], to: Date, mode: 'align' | 'advance') {
    return this.core.serial(async () => {
      const subs = subIds.map((i) => this.core.state.subscriptions[i]).filter(Boolean);
      let billed = new Map<string, number>();
      if (mode === 'align') for (const s of subs) moveClock(s, to);
      else billed = await billDue(this.area.host, subs, to);
      this.core.save();
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
    await this.core.serial(async () => {
      const due = Object.values(this.core.state.subscriptions).filter((s) => s.status === 'ACTIVE');
      const billed = await billDue(this.area.host, due);
      if ([...billed.values()].some((n) => n > 0)) this.core.save();
    });
  }

  async expire(subId: string) {
    const s = this.core.state.subscriptions[subId];
    s.status = 'EXPIRED';
    this.core.save();
    await this.area.notify(s.clientId, 'BILLING.SUBSCRIPTION.EXPIRED', presentSubscription(this.core.baseUrl, s));
  }

  /** `POST /v1/dev/clock` and `POST /v1/dev/subscriptions/{id}/fail-payments`. */
  routes({ router, core, auth }: StandInArea) {
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
      const mine = (ids as string[]).filter((i) => this.core.state.subscriptions[i]?.clientId === ctx.state.clientId);
      ctx.body = {
        subscriptions: await this.setClock(mine, new Date(to), b.mode),
        not_found: (ids as string[]).filter((i) => !mine.includes(i)),
      };
    });
    router.post('/v1/dev/subscriptions/:id/fail-payments', auth, (ctx) => {
      const s = core.own(ctx, this.core.state.subscriptions, ctx.params.id);
      if (!s) return;
      const count = Number(body(ctx).count ?? 1);
      if (!Number.isInteger(count) || count < 0 || count > 1000)
        return paypalError(ctx, 400, 'INVALID_REQUEST', 'count: an integer from 0 to 1000.', 'INVALID_PARAMETER_VALUE');
      this.failPayments(s.id, count);
      ctx.body = { id: s.id, fail_next: count };
    });
  }
}
