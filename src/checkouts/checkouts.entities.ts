import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { OfferBump, OfferExtras } from '../offers/offers.entities.js';

export type CheckoutStatus = 'created' | 'completed' | 'cancelled' | 'expired';

/** One purchase attempt, with the terms priced on the server at creation (kept if the offer changes). */
export const Checkout = defineEntity({
  name: 'Checkout',
  tableName: 'checkouts',
  properties: {
    id: p.string().primary(),
    appId: p.string(),
    offerId: p.string().nullable(),
    planId: p.string(),
    interval: p.string().$type<'month' | 'year'>(),
    currency: p.string(),
    price: p.double(),
    listPrice: p.double(),
    cycles: p.integer().nullable(),
    extras: p.json<OfferExtras>(),
    bumps: p.json<OfferBump[]>(),
    accountId: p.string().nullable(),
    email: p.string().nullable(),
    ref: p.string().nullable(),
    returnUrl: p.text(),
    cancelUrl: p.text(),
    status: p.string().$type<CheckoutStatus>(),
    providerSubscriptionId: p.string().nullable(),
    providerOrderId: p.string().nullable(),
    approveUrl: p.text().nullable(),
    bumpApproveUrl: p.text().nullable(),
    bumpsPaid: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
    completedAt: p.datetime().nullable(),
    /** When it expires unpaid, on the app's clock (null for checkouts made before: 24 h after `createdAt`). */
    expiresAt: p.datetime().nullable(),
    /** Why it ended `cancelled`: the provider reports it so, or it duplicated the account's live subscription. */
    cancelReason: p.text().nullable(),
    /** A duplicate's first cycle refunded at the provider (see CheckoutRefund), null otherwise. */
    refund: p.json<CheckoutRefund>().nullable(),
    /** `upgrade_link`: made for a 402's upgrade (for the limit `upgradeEntitlementId`); else `checkout`. */
    source: p.string().$type<'checkout' | 'upgrade_link'>().default('checkout'),
    upgradeEntitlementId: p.string().nullable(),
    /** The approval link through the service, which records when the buyer opened it. */
    openUrl: p.text().nullable(),
    openedAt: p.datetime().nullable(),
    /** When the reconciler looked at its provider subscription (untracked subscriptions). */
    providerCheckedAt: p.datetime().nullable(),
  },
});
export type ICheckout = InferEntity<typeof Checkout>;

/** What was refunded of a duplicate checkout's provider subscription (it was cancelled as a duplicate). */
export interface CheckoutRefund {
  /** `refunded`: every payment charged for it was refunded; `none`: the provider had charged nothing. */
  status: 'refunded' | 'none';
  amount: number;
  currency: string | null;
  /** The provider's payment (capture) ids and the refund made for each. */
  payments: { payment_id: string; refund_id: string; amount: number }[];
  refunded_at: string;
}
