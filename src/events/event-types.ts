import { presentAccountDetail } from '../accounts/accounts.present.js';
import type { IAccount } from '../accounts/accounts.entities.js';
import { presentIncentive, presentPlan } from '../catalog/catalog.present.js';
import type { ICheckout } from '../checkouts/checkouts.entities.js';
import { presentCheckout } from '../checkouts/checkouts.present.js';
import type { IIncentive, IPlan } from '../catalog/catalog.entities.js';
import type { ICancelSession } from '../cancel-flows/cancel-flows.entities.js';
import { templateSteps } from '../cancel-flows/engine.js';
import { describeOffer } from '../cancel-flows/save-offers.js';
import { sessionView } from '../cancel-flows/cancel-flows.present.js';
import type { ISubscription } from '../subscriptions/subscriptions.entities.js';
import { presentSubscription } from '../subscriptions/subscriptions.present.js';

/**
 * The data object of `usage.limit_warning` and `usage.limit_reached`. The usage statement builds the
 * same object in SQL when a threshold is crossed (see usage.service.ts); a test checks they agree.
 */
export function usageEventObject(u: {
  accountId: string;
  entitlementId: string;
  entitlementName: string;
  usage: number;
  max: number;
}) {
  return {
    account_id: u.accountId,
    entitlement_id: u.entitlementId,
    entitlement_name: u.entitlementName,
    usage: u.usage,
    max: u.max,
    left: Math.max(0, u.max - u.usage),
    percent: Math.floor((u.usage * 100) / u.max),
  };
}

// Sample records, presented by the same presenters real events use.
const at = new Date('2026-01-15T10:30:00.000Z');
const account = {
  appId: 'app_3kTq8ZbWn2cVx9LpRm4s',
  id: 'user_8412',
  name: 'Ada Lovelace',
  planId: 'pro',
  incentiveId: null,
  incentiveExpiresAt: null,
  offerId: null,
  createdAt: at,
  updatedAt: at,
} as unknown as IAccount;
const sampleAccount = (over: Partial<IAccount> = {}) =>
  presentAccountDetail({ ...account, ...over } as IAccount, ['priority'], null);

/** The account of a `subscription.*` event carries its subscription, presented as real events present it. */
const subscription = (status: 'active' | 'paused' | 'cancelled' | 'past_due', over: Partial<ISubscription> = {}) =>
  presentSubscription({
    appId: account.appId,
    accountId: account.id,
    providerSubscriptionId: 'I-BW452GLLEP1G',
    checkoutId: 'chk_7Hq2LmZ9xWc4Tn8RbVk3',
    offerId: null,
    planId: 'pro',
    interval: 'month',
    currency: 'USD',
    price: 29,
    status,
    renewsAt: status === 'cancelled' ? null : new Date('2026-02-15T10:30:00.000Z'),
    pausedAt: status === 'paused' ? at : null,
    resumeAt: status === 'paused' ? new Date('2026-03-15T10:30:00.000Z') : null,
    restorePlanId: status === 'paused' ? 'pro' : null,
    pauseCount: status === 'paused' ? 1 : 0,
    pauseReason: status === 'paused' ? 'cancel flow default' : null,
    cancelledAt: status === 'cancelled' ? at : null,
    providerStatus: status === 'paused' ? 'SUSPENDED' : status === 'cancelled' ? 'CANCELLED' : 'ACTIVE',
    providerPlanId: 'P-5ML4271244454362WXNWU5NQ',
    lastPaymentAt: at,
    lastPaymentFailedAt: null,
    pendingChange: null,
    discount: null,
    ...(status === 'past_due'
      ? {
          pastDueSince: at,
          paymentFailures: 1,
          nextPaymentRetryAt: new Date('2026-01-20T10:30:00.000Z'),
          outstandingBalance: 29,
          graceEndsAt: new Date('2026-01-29T10:30:00.000Z'),
          dunningAfter: 'cancel',
          dunningRestorePlanId: null,
          lastPaymentAt: new Date('2025-12-15T10:30:00.000Z'),
          lastPaymentFailedAt: at,
        }
      : {}),
    createdAt: new Date('2025-12-15T10:30:00.000Z'),
    updatedAt: at,
    ...over,
  } as unknown as ISubscription);
const subscribed = (
  status: 'active' | 'paused' | 'cancelled' | 'past_due',
  over: Partial<IAccount> = {},
  sub: Partial<ISubscription> = {},
) => ({
  ...sampleAccount(over),
  subscription: subscription(status, sub),
});
/** A payment as the dunning events carry it (the provider's transaction). */
const payment = (time: string, amount = 29) => ({ id: 'CAP5JW8Q3N2XK4L', amount, currency: 'USD', time });
const plan = {
  appId: account.appId,
  id: 'pro',
  name: 'Pro',
  description: 'For growing teams',
  note: null,
  isFree: false,
  pricingCard: { plan_id: 'pro', title: 'Pro', monthlyPrice: 29, yearlyPrice: 290, currency: 'USD' },
  meta: { highlight: true },
  privateMetaKeys: [],
  createdAt: at,
  updatedAt: at,
} as unknown as IPlan;
const samplePlan = (over: Partial<IPlan> = {}) =>
  presentPlan(
    { ...plan, ...over } as IPlan,
    [
      { id: 'api_calls', max: 10000 },
      { id: 'sso', max: null },
    ],
    ['priority'],
  );
const incentive = {
  appId: account.appId,
  id: 'partner_deal',
  name: 'Partner deal',
  description: 'Double limits for partners',
  createdAt: at,
  updatedAt: at,
} as unknown as IIncentive;
const sampleIncentive = () => presentIncentive(incentive, [{ id: 'api_calls', max: 20000 }], ['priority']);
/** The data of `credits.low` and `credits.depleted`, as the usage statement writes it (src/usage/usage.service.ts). */
const creditsLevel = (previous: number, balance: number) => ({
  object: {
    account_id: account.id,
    entity: null,
    pool: 'credits',
    pool_name: 'AI credits',
    balance,
    previous_balance: previous,
    granted_per_period: 2000,
    feature: 'premium_messages',
  },
});

const usage = (used: number) => ({
  object: usageEventObject({
    accountId: account.id,
    entitlementId: 'api_calls',
    entitlementName: 'API calls',
    usage: used,
    max: 10000,
  }),
});
const checkout = presentCheckout({
  id: 'chk_7hYtR2mQx8LwVn3bKp5d',
  appId: account.appId,
  offerId: 'spring_sale',
  planId: 'pro',
  interval: 'month',
  currency: 'USD',
  price: 19,
  listPrice: 29,
  cycles: 3,
  extras: { entitlements: [{ id: 'api_calls', max: 20000 }], addons: [], cycles: 3 },
  bumps: [{ id: 'support', name: 'Priority support', addon: 'priority', price: 9, currency: 'USD' }],
  accountId: account.id,
  email: null,
  ref: 'newsletter',
  status: 'completed',
  approveUrl: null,
  bumpApproveUrl: null,
  createdAt: at,
  completedAt: at,
} as unknown as ICheckout);
const steps = templateSteps();
const sampleSession = (status: 'saved' | 'cancelled') =>
  sessionView(
    {
      id: 'cxl_4fGh8JkLm2NpQr6sTv9w',
      appId: account.appId,
      flowId: 'default',
      accountId: account.id,
      status,
      flow: { id: 'default', name: 'Default cancel flow', steps },
      stepId: status === 'saved' ? 'offer' : 'confirm',
      path: status === 'saved' ? ['reason'] : ['reason', 'offer'],
      answers: { reason: { answer: 'too_expensive', text: null } },
      offer:
        status === 'saved'
          ? {
              ...describeOffer('offer', { kind: 'discount', percent: 25, cycles: 3 }, null, {}, 'static'),
              details: { percent: 25, cycles: 3, price: 21.75, regular_price: 29, currency: 'USD', interval: 'month' },
              body: 'Keep Pro for 21.75 USD per month instead of 29 for the next 3 renewals.',
              status: 'accepted',
            }
          : null,
      offers: [],
      approveUrl:
        status === 'saved' ? 'https://www.paypal.com/webapps/billing/subscriptions/update?ba_token=BA-0000' : null,
      result:
        status === 'saved'
          ? {
              outcome: 'discount',
              status: 'pending_approval',
              plan: 'pro',
              price: 21.75,
              currency: 'USD',
              interval: 'month',
              percent: 25,
              cycles: 3,
            }
          : { outcome: 'cancelled', billing: 'provider', plan: 'free' },
      revenueKept: null,
      currency: null,
      claimedUntil: null,
      claimedBy: null,
      endedAt: at,
      createdAt: at,
      updatedAt: at,
    } as ICancelSession,
    {
      id: account.id,
      plan_name: status === 'saved' ? 'Pro' : 'Free',
      subscription:
        status === 'saved'
          ? { price: 29, currency: 'USD', interval: 'month', renews_at: '2026-02-15T10:30:00.000Z' }
          : null,
    },
  );

export interface EventTypeInfo {
  type: string;
  description: string;
  sample: () => Record<string, unknown>;
}

export const EVENT_TYPES: EventTypeInfo[] = [
  {
    type: 'account.created',
    description: 'An account was created through the API, or by a checkout from a buyer without one.',
    sample: () => ({ object: sampleAccount() }),
  },
  {
    type: 'account.updated',
    description: 'Any change to an account; `previous` has the old values of the changed fields.',
    sample: () => ({ object: sampleAccount({ name: 'Ada King' }), previous: { name: 'Ada Lovelace' } }),
  },
  { type: 'account.deleted', description: 'An account was deleted.', sample: () => ({ object: sampleAccount() }) },
  {
    type: 'account.plan_changed',
    description: 'An account moved to a different plan.',
    sample: () => ({ object: sampleAccount(), previous: { plan: 'free' } }),
  },
  {
    type: 'account.incentive_applied',
    description: 'An incentive was applied to an account or replaced its previous one.',
    sample: () => ({ object: sampleAccount({ incentiveId: 'partner_deal' }), previous: { incentive: null } }),
  },
  {
    type: 'account.incentive_removed',
    description: 'An incentive was removed (by the API or at its expiry).',
    sample: () => ({ object: sampleAccount(), previous: { incentive: 'partner_deal' } }),
  },
  {
    type: 'account.addon_granted',
    description: 'An account got an add-on of its own, for example from an order bump.',
    sample: () => ({ object: sampleAccount(), addon_id: 'priority', source: 'api' }),
  },
  { type: 'usage.limit_warning', description: 'An account crossed 80% of a usage limit.', sample: () => usage(8000) },
  {
    type: 'usage.limit_reached',
    description: 'An account used up a limit; its `can` is now false.',
    sample: () => usage(10000),
  },
  {
    type: 'credits.granted',
    description:
      'Credits were granted to an account: by its plan for a period, by the API, a top-up pack or a rollover.',
    sample: () => ({
      object: {
        account_id: account.id,
        entity: null,
        pool: 'credits',
        grant: {
          id: 'grt_3kTqP0xYb9',
          pool: 'credits',
          amount: 2000,
          remaining: 2000,
          expires_at: '2026-12-28T09:00:00.000Z',
          source: 'plan',
          reason: null,
          created_at: '2026-11-28T09:00:00.000Z',
        },
        balance: 2150,
      },
    }),
  },
  {
    type: 'credits.low',
    description: "An account's credits fell under 10% of what its plan grants per period.",
    sample: () => creditsLevel(180, 150),
  },
  {
    type: 'credits.depleted',
    description: "An account's credits reached 0: features that draw from the pool answer 402 until it has more.",
    sample: () => creditsLevel(10, 0),
  },
  {
    type: 'credits.expired',
    description: "Unused credits of a grant expired at the grant's date (the account's clock).",
    sample: () => ({
      object: {
        account_id: account.id,
        entity: null,
        pool: 'credits',
        grant: 'grt_3kTqP0xYb9',
        expired: 420,
        balance: 0,
      },
    }),
  },
  { type: 'plan.created', description: 'A plan was added.', sample: () => ({ object: samplePlan() }) },
  {
    type: 'plan.updated',
    description: "A plan's details, limits, add-ons, meta or pricing changed.",
    sample: () => ({ object: samplePlan(), previous: { description: 'For teams' } }),
  },
  { type: 'plan.deleted', description: 'A plan was deleted.', sample: () => ({ object: samplePlan() }) },
  { type: 'incentive.created', description: 'An incentive was added.', sample: () => ({ object: sampleIncentive() }) },
  {
    type: 'incentive.updated',
    description: "An incentive's details, overrides or add-ons changed.",
    sample: () => ({ object: sampleIncentive(), previous: { name: 'Partner' } }),
  },
  {
    type: 'incentive.deleted',
    description: 'An incentive was deleted.',
    sample: () => ({ object: sampleIncentive() }),
  },
  {
    type: 'checkout.completed',
    description: 'A buyer paid and the purchase was applied.',
    sample: () => ({ object: checkout, account: sampleAccount() }),
  },
  {
    type: 'subscription.renewed',
    description:
      'The payment provider charged a renewal (`payment`): a change scheduled for it has applied and a save-offer ' +
      'discount counted down one cycle by then.',
    sample: () => ({ object: subscribed('active'), payment: payment('2026-01-15T10:30:00.000Z') }),
  },
  {
    type: 'subscription.cancelled',
    description: 'A subscription was cancelled or expired; the account moved to the free plan if there is one.',
    sample: () => ({ object: subscribed('cancelled', { planId: 'free' }), previous: { plan: 'pro' } }),
  },
  {
    type: 'subscription.paused',
    description: 'Billing was suspended for a few months, usually from a cancel flow.',
    sample: () => ({ object: subscribed('paused', { planId: 'free' }), previous: { plan: 'pro' } }),
  },
  {
    type: 'subscription.resumed',
    description: 'A paused subscription is billing again and the account is back on its plan.',
    sample: () => ({ object: subscribed('active'), previous: { plan: 'free' } }),
  },
  {
    type: 'subscription.changed',
    description:
      'A plan change the buyer approved at the provider was applied: at once (an upgrade, with its prorated ' +
      'difference when the policy is prorate_now) or at the renewal (a downgrade). Also a cancel flow discount or ' +
      'downgrade, once approved.',
    sample: () => ({
      object: {
        ...sampleAccount({ planId: 'team' }),
        subscription: { ...subscription('active'), plan: 'team', price: 49 },
      },
      previous: { plan: 'pro', price: 29, interval: 'month' },
      proration: { amount: 9.87, currency: 'USD', status: 'captured' },
    }),
  },
  {
    type: 'subscription.untracked',
    description:
      "The reconciler found a live provider subscription offerkit made but does not track as the account's: a " +
      'duplicate of its live subscription (cancelled at the provider) or one approved after its checkout expired ' +
      '(reported).',
    sample: () => ({
      object: {
        id: 'I-93KDN2K1HY7P',
        account_id: account.id,
        checkout_id: 'chk_9Zt4Qw1Lm8Xc2Vb7Nn3R',
        provider_status: 'CANCELLED',
        action: 'cancelled',
        live_subscription_id: 'I-BW452GLLEP1G',
        found_at: '2026-01-15T10:40:00.000Z',
      },
    }),
  },
  {
    type: 'subscription.change_scheduled',
    description:
      'The buyer approved a plan change that applies at the next renewal (a downgrade by default): the account ' +
      "keeps its plan until then; the subscription's pending_change says what comes.",
    sample: () => ({
      object: {
        ...sampleAccount(),
        subscription: {
          ...subscription('active'),
          pending_change: {
            id: 'chg_4Rt8WqZ2nLx7Kc3VbMj9',
            status: 'scheduled' as const,
            kind: 'downgrade' as const,
            plan: 'lite',
            interval: 'month' as const,
            price: 9,
            currency: 'USD',
            direction: 'downgrade' as const,
            discount: null,
            requested_at: '2026-01-15T10:30:00.000Z',
            effective: 'renewal' as const,
            expires_at: null,
            scheduled_at: '2026-01-15T10:31:00.000Z',
            workflow_id: `plan-change/${account.appId}/${account.id}/chg_4Rt8WqZ2nLx7Kc3VbMj9`,
          },
        },
      },
    }),
  },
  {
    type: 'subscription.change_dropped',
    description:
      'A plan change that will not apply any more: one waiting for the buyer was refused, expired, withdrawn or ' +
      'replaced, or a scheduled one was withdrawn, replaced or dropped by a cancellation. A cancel-flow save it ' +
      'carried goes back to open. `reason` says why.',
    sample: () => ({
      object: subscribed('active'),
      change: {
        id: 'chg_4Rt8WqZ2nLx7Kc3VbMj9',
        kind: 'change',
        plan: 'lite',
        price: 9,
        currency: 'USD',
        interval: 'month',
        status: 'scheduled',
      },
      reason: 'cancelled',
      summary: 'Scheduled change to Lite dropped (cancelled)',
    }),
  },
  {
    type: 'subscription.cancel_scheduled',
    description:
      'The subscription is cancelled at the end of its paid period (`cancel_at`): billing stopped at the provider; ' +
      'the account keeps its plan until then, when `subscription.cancelled` follows (unless it is undone).',
    sample: () => ({
      object: subscribed('active', {}, { cancelAt: new Date('2026-02-15T10:30:00.000Z'), providerStatus: 'SUSPENDED' }),
      cancel_at: '2026-02-15T10:30:00.000Z',
      summary: 'Cancellation scheduled for 2026-02-15',
    }),
  },
  {
    type: 'subscription.cancel_undone',
    description: 'A cancellation at the end of the period was undone: the subscription bills again as before.',
    sample: () => ({ object: subscribed('active'), summary: 'Cancellation undone' }),
  },
  {
    type: 'subscription.payment_failed',
    description:
      'A payment of the subscription failed at the provider: a renewal, one of its retries (PayPal retries 5 and 10 ' +
      'days later) or a retry asked with `retry-payment`. `attempt` counts the failures since it fell past due; ' +
      '`next_retry_at` is when the provider tries again (null: not before the next cycle); `outstanding` is what is ' +
      'owed.',
    sample: () => ({
      object: subscribed('past_due'),
      attempt: 1,
      payment: payment('2026-01-15T10:30:00.000Z'),
      next_retry_at: '2026-01-20T10:30:00.000Z',
      outstanding: 29,
      summary: 'Payment failed (attempt 1)',
    }),
  },
  {
    type: 'subscription.past_due',
    description:
      "A renewal payment failed: the subscription is past due and keeps its plan for the app's grace period " +
      "(`dunning.grace_days`, until `grace_ends_at`) while the provider retries; then the app's `dunning.after` " +
      'applies. Sent once, before the first `subscription.payment_failed`.',
    sample: () => ({
      object: subscribed('past_due'),
      grace_ends_at: '2026-01-29T10:30:00.000Z',
      after: 'cancel',
      summary: 'Past due: the renewal payment failed; grace until 2026-01-29',
    }),
  },
  {
    type: 'subscription.recovered',
    description:
      'A payment of a past-due subscription succeeded (a retry at the provider, `retry-payment`, or the next cycle): ' +
      'it is active again, and an account the grace period had moved to the free plan has its plan back. ' +
      '`subscription.renewed` follows for the cycle it paid.',
    sample: () => ({
      object: subscribed('active'),
      payment: payment('2026-01-20T10:30:00.000Z'),
      summary: 'Payment recovered: 29 USD',
    }),
  },
  {
    type: 'subscription.grace_ended',
    description:
      'The grace period of a past-due subscription ended with the payment still failing: with `after: cancel` ' +
      '`subscription.cancelled` follows; with `after: free_plan` the account is on the free plan and the ' +
      'subscription stays past due until a payment succeeds (`subscription.recovered`).',
    sample: () => ({
      object: subscribed('past_due', { planId: 'free' }, { dunningAfter: 'free_plan', dunningRestorePlanId: 'pro' }),
      after: 'free_plan',
      outstanding: 29,
      summary: 'Grace period over: the account is on the free plan until a payment succeeds',
    }),
  },
  {
    type: 'cancel_flow.saved',
    description: 'A customer accepted a save offer in a cancel flow.',
    sample: () => ({ object: sampleSession('saved'), account: sampleAccount() }),
  },
  {
    type: 'cancel_flow.cancelled',
    description: 'A customer finished a cancel flow and cancelled; provider subscriptions are already cancelled.',
    sample: () => ({ object: sampleSession('cancelled'), account: sampleAccount({ planId: 'free' }) }),
  },
];

export const EVENT_TYPE_NAMES = new Set(EVENT_TYPES.map((e) => e.type));
