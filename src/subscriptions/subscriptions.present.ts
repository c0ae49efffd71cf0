// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { pauseWorkflowId, planChangeWorkflowId } from '../../workflows/shared.js';
import { type ISubscription } from './subscriptions.entities.js';
import { type subscriptionSchema } from './subscriptions.schemas.js';
import type { untrackedSchema } from './subscriptions.schemas.js';

export function presentSubscription(s: ISubscription): z.input<typeof subscriptionSchema> {
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
            workflow_id: s.pauseCount > 0 ? pauseWorkflowId(s.appId, s.accountId, s.pauseCount) : null,
          }
        : null,
    cancelled_at: iso(s.cancelledAt),
    pending_change: s.pendingChange
      ? {
          plan: s.pendingChange.plan,
          interval: s.pendingChange.interval,
          price: s.pendingChange.price,
          currency: s.pendingChange.currency,
          discount: s.pendingChange.discount
            ? {
                percent: s.pendingChange.discount.percent,
                cycles: s.pendingChange.discount.cycles,
                regular_price: s.pendingChange.discount.regularPrice,
              }
            : null,
          requested_at: s.pendingChange.requestedAt,
          effective: s.pendingChange.effective ?? 'now',
          scheduled_at: s.pendingChange.scheduledAt ?? null,
          workflow_id: s.pendingChange.id ? planChangeWorkflowId(s.appId, s.accountId, s.pendingChange.id) : null,
        }
      : null,
    discount: s.discount
      ? { percent: s.discount.percent, cycles_left: s.discount.cyclesLeft, regular_price: s.discount.regularPrice }
      : null,
    provider_status: s.providerStatus ?? null,
    last_payment_at: iso(s.lastPaymentAt),
    last_payment_failed_at: iso(s.lastPaymentFailedAt),
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
