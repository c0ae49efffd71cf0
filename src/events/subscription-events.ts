// The purchase and subscription event types (checkout.completed, subscription.*: renewals, cancellations, pauses,
// plan changes, dunning) with their samples: the account carrying its subscription, the provider's payments.
import type { IAccount } from '../accounts/accounts.entities.js';
import type { ICheckout } from '../checkouts/checkouts.entities.js';
import { presentCheckout } from '../checkouts/checkouts.present.js';
import type { ISubscription } from '../subscriptions/subscriptions.entities.js';
import { presentSubscription } from '../subscriptions/subscriptions.present.js';
import { account, at, sampleAccount, type EventTypeInfo } from './event-samples.js';

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

export const SUBSCRIPTION_EVENT_TYPES: EventTypeInfo[] = [
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
];
