// The PayPal stand-in's catalog and subscriptions API: products, plans, subscriptions (create, read, transactions,
// capture of an outstanding balance, revise, suspend, activate, cancel) and how PayPal shows a subscription and its
// payment attempts.
import type { Context } from 'koa';
import { addInterval, captureOutstanding, clockOf, outstandingOf } from './paypal-billing.js';
import {
  body,
  id,
  now,
  paypalError,
  subNow,
  type Json,
  type StandInArea,
  type StandInCore,
} from './paypal-standin-core.js';

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

/** A subscription as PayPal shows it: without the stand-in's own fields, with its links. */
export function presentSubscription(baseUrl: string, s: Json) {
  const rest = Object.fromEntries(Object.entries(s).filter(([k]) => !INTERNAL.includes(k)));
  const links =
    s.status === 'APPROVAL_PENDING'
      ? [{ rel: 'approve', href: `${baseUrl}/checkoutnow?ba_token=${s.approval_token}`, method: 'GET' }]
      : [];
  return {
    ...rest,
    links: [...links, { rel: 'self', href: `${baseUrl}/v1/billing/subscriptions/${s.id}`, method: 'GET' }],
  };
}

/** A subscription's transaction as PayPal shows it (the transactions list, a capture's answer). */
export function presentTransaction(s: Json, c: Json) {
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

/**
 * A payment attempt for a subscription: a transaction that the subscription's transactions list shows
 * (`GET /v1/billing/subscriptions/{id}/transactions`: COMPLETED, or DECLINED for a failed one), and that can be
 * refunded by its id when it was captured (`POST /v2/payments/captures/{id}/refund`).
 */
export function recordAttempt(
  core: StandInCore,
  s: Json,
  attempt: { status: 'COMPLETED' | 'DECLINED'; amount: Json; time: string },
) {
  const capture = {
    id: id(attempt.status === 'COMPLETED' ? 'CAP' : 'DCL', 14),
    subscription: s.id,
    status: attempt.status,
    amount: attempt.amount,
    time: attempt.time,
    refunds: [] as Json[],
    clientId: s.clientId,
  };
  core.state.captures[capture.id] = capture;
  return capture;
}

/** The payment attempts of a subscription (captured and declined; tests read the refunds here). */
export function capturesOf(core: StandInCore, subId: string): Json[] {
  return Object.values(core.state.captures).filter((c) => c.subscription === subId);
}

/**
 * Products, plans and subscriptions: create, read, list transactions, capture what is owed, revise, and the
 * transitions (suspend, activate, cancel).
 */
export function subscriptionRoutes(area: StandInArea) {
  const { router, core, auth, notify, host } = area;
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
    core.state.products[p.id] = p;
    ctx.status = 201;
    ctx.body = { ...p, clientId: undefined };
  });

  router.post('/v1/billing/plans', auth, (ctx) => {
    const b = body(ctx);
    const product = core.own(ctx, core.state.products, b.product_id);
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
    core.state.plans[p.id] = p;
    ctx.status = 201;
    ctx.body = { ...p, clientId: undefined };
  });
  router.get('/v1/billing/plans/:id', auth, (ctx) => {
    const p = core.own(ctx, core.state.plans, ctx.params.id);
    if (p) ctx.body = { ...p, clientId: undefined };
  });

  router.post('/v1/billing/subscriptions', auth, (ctx) => {
    const b = body(ctx);
    const plan = core.own(ctx, core.state.plans, b.plan_id);
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
    core.state.subscriptions[s.id] = s;
    ctx.status = 201;
    ctx.body = presentSubscription(core.baseUrl, s);
  });
  router.get('/v1/billing/subscriptions/:id', auth, (ctx) => {
    const s = core.own(ctx, core.state.subscriptions, ctx.params.id);
    if (s) ctx.body = presentSubscription(core.baseUrl, s);
  });
  // As PayPal documents it: both times are required (RFC 3339); the answer lists the cycles charged in the range.
  router.get('/v1/billing/subscriptions/:id/transactions', auth, (ctx) => {
    const s = core.own(ctx, core.state.subscriptions, ctx.params.id);
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
    const transactions = capturesOf(core, s.id)
      .filter((c) => Date.parse(c.time) >= start && Date.parse(c.time) <= end)
      .sort((a, b) => Date.parse(a.time) - Date.parse(b.time))
      .map((c) => presentTransaction(s, c));
    ctx.body = {
      transactions,
      total_items: transactions.length,
      total_pages: 1,
      links: [{ href: `${core.baseUrl}${ctx.url}`, rel: 'self', method: 'GET' }],
    };
  });
  // Capture the outstanding balance of a subscription whose payments failed, as PayPal documents it
  // (https://developer.paypal.com/docs/api/subscriptions/v1/#subscriptions_capture): `note`, `capture_type`
  // (OUTSTANDING_BALANCE) and `amount` are required; the subscription must be active, suspended or expired, owe
  // something, in that currency, at least the amount. 200 with the transaction: COMPLETED, or DECLINED when the
  // payment fails (then it is one more failed payment, notified as such).
  router.post('/v1/billing/subscriptions/:id/capture', auth, async (ctx) => {
    const s = core.own(ctx, core.state.subscriptions, ctx.params.id);
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
    const tx = await core.serial(() =>
      captureOutstanding(host, s, { currency_code: b.amount.currency_code, value: value.toFixed(2) }),
    );
    ctx.body = presentTransaction(s, tx);
  });

  router.post('/v1/billing/subscriptions/:id/revise', auth, (ctx) => {
    const s = core.own(ctx, core.state.subscriptions, ctx.params.id);
    if (!s) return;
    const plan = core.own(ctx, core.state.plans, body(ctx).plan_id);
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
        { rel: 'approve', href: `${core.baseUrl}/checkoutnow?ba_token=${s.pending.token}`, method: 'GET' },
        { rel: 'edit', href: `${core.baseUrl}/v1/billing/subscriptions/${s.id}`, method: 'PATCH' },
      ],
    };
  });
  const transition = (from: string[], to: string, eventType: string) => async (ctx: Context) => {
    const s = core.own(ctx, core.state.subscriptions, ctx.params.id);
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
        core.state.plans[s.plan_id].billing_cycles.at(-1).frequency.interval_unit,
      ).toISOString();
    ctx.status = 204;
    core.later(0, () => void notify(s.clientId, eventType, presentSubscription(core.baseUrl, s)));
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
    transition(['ACTIVE', 'SUSPENDED', 'APPROVED', 'APPROVAL_PENDING'], 'CANCELLED', 'BILLING.SUBSCRIPTION.CANCELLED'),
  );
}
