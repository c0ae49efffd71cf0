// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { accountWorkflowId } from '../../workflows/shared.js';
import { type ISubscription, type PendingChange } from './subscriptions.entities.js';
import { type subscriptionSchema } from './subscriptions.schemas.js';
import type { untrackedSchema } from './subscriptions.schemas.js';

type SubscriptionView = z.input<typeof subscriptionSchema>;

function changeView(s: ISubscription, c: PendingChange, status: 'awaiting_approval' | 'scheduled') {
  return {
    id: c.id ?? null,
    status,
    kind: c.kind ?? (c.discount ? 'discount' : c.sessionId ? 'downgrade' : 'change'),
    plan: c.plan,
    interval: c.interval,
    price: c.price,
    currency: c.currency,
    direction: c.direction ?? null,
    discount: c.discount
      ? { percent: c.discount.percent, cycles: c.discount.cycles, regular_price: c.discount.regularPrice }
      : null,
    requested_at: c.requestedAt,
    effective: c.effective ?? 'now',
    expires_at: status === 'awaiting_approval' ? (c.expiresAt ?? null) : null,
    scheduled_at: c.scheduledAt ?? null,
    workflow_id: accountWorkflowId(s.appId, s.accountId),
  } satisfies NonNullable<SubscriptionView['pending_change']>;
}

export function presentSubscription(s: ISubscription): SubscriptionView {
  const scheduled = s.scheduledChange ? changeView(s, s.scheduledChange, 'scheduled') : null;
  return {
    id: s.providerSubscriptionId,
    status: s.status,
    offer: s.offerId ?? null,
    plan: s.planId,
    interval: s.interval,
    price: Number(s.price),
    currency: s.currency,
    renews_at: iso(s.renewsAt),
    pause:
      s.status === 'paused'
        ? {
            paused_at: iso(s.pausedAt),
            resume_at: iso(s.resumeAt),
            restore_plan: s.restorePlanId ?? null,
            reason: s.pauseReason ?? null,
            workflow_id: accountWorkflowId(s.appId, s.accountId),
          }
        : null,
    cancelled_at: iso(s.cancelledAt),
    cancel_at: s.status === 'active' ? iso(s.cancelAt) : null,
    pending_change: s.pendingChange ? changeView(s, s.pendingChange, 'awaiting_approval') : scheduled,
    scheduled_change: scheduled,
    dunning:
      s.status === 'past_due' && s.pastDueSince
        ? {
            since: iso(s.pastDueSince)!,
            failures: s.paymentFailures,
            next_retry_at: iso(s.nextPaymentRetryAt),
            grace_ends_at: iso(s.graceEndsAt ?? s.pastDueSince)!,
            after: s.dunningAfter ?? 'cancel',
            outstanding:
              s.outstandingBalance === null || s.outstandingBalance === undefined ? null : Number(s.outstandingBalance),
            on_free_plan: !!s.dunningRestorePlanId,
          }
        : null,
    discount: s.discount
      ? { percent: s.discount.percent, cycles_left: s.discount.cyclesLeft, regular_price: s.discount.regularPrice }
      : null,
    provider_status: s.providerStatus ?? null,
    last_payment_at: iso(s.lastPaymentAt),
    last_payment_failed_at: iso(s.lastPaymentFailedAt),
    workflow_id: accountWorkflowId(s.appId, s.accountId),
    created_at: iso(s.createdAt)!,
  };
}

export function presentUntracked(r: Record<string, unknown>): z.input<typeof untrackedSchema> {
  return {
    id: String(r.provider_subscription_id),
    account_id: String(r.account_id),
    checkout_id: (r.checkout_id as string | null) ?? null,
    provider_status: String(r.provider_status),
    action: r.action as 'cancelled' | 'reported',
    live_subscription_id: (r.live_subscription_id as string | null) ?? null,
    found_at: iso(r.found_at as Date)!,
  };
}
