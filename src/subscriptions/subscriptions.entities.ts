import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export type SubscriptionStatus = 'active' | 'paused' | 'past_due' | 'cancelled';

export interface PendingChange {
  /** `chg_...`: the change's id (the account actor's timeline names it). */
  id?: string;
  /**
   * What it is: a plan change asked for (`change`), a cancel flow's save (`discount`, `downgrade`), or the undoing of
   * a scheduled change (`withdrawal`: the provider goes back to the current plan). Rows before the actor: missing.
   */
  kind?: 'change' | 'discount' | 'downgrade' | 'withdrawal';
  /** The plan's name when it was asked (for messages). */
  planName?: string;
  /** The id of the scheduled change this one replaces once approved. */
  replaces?: string | null;
  /** The cancel session whose save waits on this approval. */
  sessionId?: string | null;
  /** Where the buyer goes back after approving or refusing at the provider (their own pages). */
  returnUrl?: string;
  cancelUrl?: string;
  /** Until when the approval is awaited (ISO 8601). */
  expiresAt?: string;
  /** A plan change's direction (by price per month) and the app's policy for it. */
  direction?: 'upgrade' | 'downgrade';
  policy?: 'prorate_now' | 'at_renewal' | 'no_proration';
  /** `now`: applies once the provider reports the approval; `renewal`: once approved, at the next renewal. */
  effective?: 'now' | 'renewal';
  /** When the provider reported the approval of a change that applies at the renewal. */
  scheduledAt?: string;
  /** The prorated difference for the rest of the cycle, as a provider order the buyer approves first. */
  proration?: {
    amount: number;
    currency: string;
    orderId: string;
    approveUrl: string | null;
    status?: 'captured' | 'not_approved';
  };
  plan: string;
  interval: 'month' | 'year';
  currency: string;
  price: number;
  providerPlanId: string;
  requestedAt: string;
  /** A cancel-flow discount: `price` is billed for `cycles` renewals, then `regularPrice`. */
  discount?: { percent: number; cycles: number; regularPrice: number };
  /** The revision's approval page at the provider (what the intent answered as `revision_approve_url`). */
  approveUrl?: string | null;
  /** The request of the intent that asked for it (a retried intent finds its own change by it). */
  requestId?: string | null;
}

/** How the subscription's last plan change awaiting approval ended. */
export interface LastChange {
  id: string;
  outcome: 'applied' | 'refused' | 'expired' | 'withdrawn' | 'replaced' | 'cancelled';
  at: string;
  /** An upgrade's prorated difference: captured, or its order was not approved (the change applied anyway). */
  proration?: 'captured' | 'not_approved';
}

/** A discount in force (from a cancel flow's save offer). */
export interface ActiveDiscount {
  percent: number;
  cycles: number;
  cyclesLeft: number;
  regularPrice: number;
}

/** An account's paid subscription at the payment provider (one per account). */
export const Subscription = defineEntity({
  name: 'Subscription',
  tableName: 'subscriptions',
  properties: {
    appId: p.string().primary(),
    accountId: p.string().primary(),
    providerSubscriptionId: p.string(),
    checkoutId: p.string().nullable(),
    offerId: p.string().nullable(),
    planId: p.string(),
    interval: p.string().$type<'month' | 'year'>(),
    currency: p.string(),
    price: p.double(),
    status: p.string().$type<SubscriptionStatus>(),
    renewsAt: p.datetime().nullable(),
    pausedAt: p.datetime().nullable(),
    resumeAt: p.datetime().nullable(),
    restorePlanId: p.string().nullable(),
    pauseCount: p.integer().default(0),
    pauseReason: p.text().nullable(),
    cancelledAt: p.datetime().nullable(),
    providerStatus: p.string().nullable(),
    providerPlanId: p.string().nullable(),
    lastPaymentAt: p.datetime().nullable(),
    lastPaymentFailedAt: p.datetime().nullable(),
    /** A plan change waiting for the buyer's approval at the provider. */
    pendingChange: p.json<PendingChange>().nullable(),
    /** A plan change the buyer approved that applies at the renewal (`scheduledAt` set). */
    scheduledChange: p.json<PendingChange>().nullable(),
    /** The end of the paid period, when a cancellation asked for then applies (billing already stopped). */
    cancelAt: p.datetime().nullable(),
    /** Dunning: since when a renewal payment is failing, how often it failed, the provider's next retry. */
    pastDueSince: p.datetime().nullable(),
    paymentFailures: p.integer().default(0),
    nextPaymentRetryAt: p.datetime().nullable(),
    outstandingBalance: p.double().nullable(),
    /** Set on entering `past_due` from the app's dunning settings then: when grace ends, and what follows. */
    graceEndsAt: p.datetime().nullable(),
    dunningAfter: p.string().$type<'cancel' | 'free_plan'>().nullable(),
    /** The plan to give back when a payment recovers an account the grace period moved to the free plan. */
    dunningRestorePlanId: p.string().nullable(),
    discount: p.json<ActiveDiscount>().nullable(),
    lastChange: p.json<LastChange>().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type ISubscription = InferEntity<typeof Subscription>;
