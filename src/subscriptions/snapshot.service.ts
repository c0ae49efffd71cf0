// What the account actor knows of an account's billing, read from the record (every activity answers it after its
// change). PostgreSQL is the record; the snapshot is how the actor decides at once (workflows/billing-rules.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { BillingSnapshot, ChangeSnapshot, SubscriptionSnapshot } from '../../workflows/billing-rules.js';
import type { IApp } from '../apps/apps.entities.js';
import { appNow, type AppClock } from '../apps/clock.js';
import { sql } from '../db/sql.js';
import { creditDates } from '../credits/credits-time.service.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import { iso } from '../time.js';
import { Subscription, type ISubscription, type PendingChange } from './subscriptions.entities.js';

/** The app's clock: its offset, and whether it is live (live payments or the read-only demo: it cannot move). */
export async function clockOf(
  em: EntityManager,
  app: Pick<IApp, 'id' | 'clockOffsetMs' | 'readOnly'>,
): Promise<AppClock> {
  const conn = await em.findOne(PaymentConnection, { appId: app.id }, { fields: ['env'] });
  return { offsetMs: Number(app.clockOffsetMs ?? 0), live: app.readOnly || conn?.env === 'live' };
}

function change(c: PendingChange | null | undefined, status: ChangeSnapshot['status']): ChangeSnapshot | null {
  if (!c?.id) return null;
  return {
    id: c.id,
    kind: c.kind ?? (c.discount ? 'discount' : c.sessionId ? 'downgrade' : 'change'),
    status,
    plan: c.plan,
    planName: c.planName ?? c.plan,
    interval: c.interval,
    price: Number(c.price),
    currency: c.currency,
    direction: c.direction ?? null,
    effective: c.effective ?? 'now',
    requestedAt: c.requestedAt,
    expiresAt: status === 'awaiting_approval' ? (c.expiresAt ?? null) : null,
    scheduledAt: c.scheduledAt ?? null,
    sessionId: c.sessionId ?? null,
    replaces: c.replaces ?? null,
  };
}

export function subscriptionSnapshot(s: ISubscription, planName: string): SubscriptionSnapshot {
  return {
    id: s.providerSubscriptionId,
    status: s.status,
    plan: s.planId,
    planName,
    interval: s.interval,
    price: Number(s.price),
    currency: s.currency,
    renewsAt: iso(s.renewsAt),
    pause:
      s.status === 'paused'
        ? { n: s.pauseCount, resumeAt: iso(s.resumeAt), restorePlan: s.restorePlanId ?? null }
        : null,
    pending: change(s.pendingChange, 'awaiting_approval'),
    scheduled: change(s.scheduledChange, 'scheduled'),
    cancelAt: s.status === 'active' ? iso(s.cancelAt) : null,
    dunning:
      s.status === 'past_due' && s.pastDueSince
        ? {
            since: iso(s.pastDueSince)!,
            failures: s.paymentFailures,
            nextRetryAt: iso(s.nextPaymentRetryAt),
            graceEndsAt: iso(s.graceEndsAt ?? s.pastDueSince)!,
            after: s.dunningAfter ?? 'cancel',
            onFreePlan: !!s.dunningRestorePlanId,
            outstanding:
              s.outstandingBalance === null || s.outstandingBalance === undefined ? null : Number(s.outstandingBalance),
          }
        : null,
    discount: s.discount ? { percent: s.discount.percent, cyclesLeft: s.discount.cyclesLeft } : null,
  };
}

/** The account's billing as the actor sees it, read now in one statement (never a stale identity map). */
export async function loadSnapshot(em: EntityManager, appId: string, accountId: string): Promise<BillingSnapshot> {
  const [r] = await sql<{
    clock_offset_ms: string;
    read_only: boolean;
    env: string | null;
    plan_id: string | null;
    incentive_id: string | null;
    incentive_expires_at: Date | null;
    has_sub: boolean;
    plan_name: string | null;
  }>(
    em,
    `select ap.clock_offset_ms, ap.read_only, pc.env, a.plan_id, a.incentive_id, a.incentive_expires_at,
            s.app_id is not null as has_sub, p.name as plan_name
       from apps ap
       left join payment_connections pc on pc.app_id = ap.id
       left join accounts a on a.app_id = ap.id and a.id = $2
       left join subscriptions s on s.app_id = a.app_id and s.account_id = a.id
       left join plans p on p.app_id = s.app_id and p.id = s.plan_id
      where ap.id = $1`,
    [appId, accountId],
  );
  const clock: AppClock = r
    ? { offsetMs: Number(r.clock_offset_ms), live: r.read_only || r.env === 'live' }
    : { offsetMs: 0, live: true };
  const sub = r?.has_sub ? await em.findOne(Subscription, { appId, accountId }, { refresh: true }) : null;
  const now = appNow(clock);
  return {
    appId,
    accountId,
    account: r?.plan_id
      ? {
          plan: r.plan_id,
          incentive: r.incentive_id ? { id: r.incentive_id, expiresAt: iso(r.incentive_expires_at) } : null,
        }
      : null,
    subscription: sub && r ? subscriptionSnapshot(sub, r.plan_name ?? sub.planId) : null,
    clock,
    readAt: now.toISOString(),
    credits: r?.plan_id ? await creditDates(em, appId, accountId, now) : null,
  };
}
