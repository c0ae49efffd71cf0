// The reconciler's comparison of a subscription with the provider: what the provider says that the record does not.
import type { Deps } from '../deps.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import { providerFor } from '../payments/payments.service.js';
import { Subscription } from './subscriptions.entities.js';

/** The provider status a record's state implies (ours suspends for a pause and for a cancellation at period end). */
function expectedStatus(s: { status: string; cancelAt: Date | null | undefined }): string[] {
  if (s.status === 'paused' || (s.status === 'active' && s.cancelAt)) return ['SUSPENDED'];
  if (s.status === 'past_due') return ['ACTIVE', 'SUSPENDED'];
  if (s.status === 'active') return ['ACTIVE'];
  return ['CANCELLED', 'EXPIRED'];
}

/**
 * Null when the record agrees with the provider; otherwise what differs (status, plan, a payment not recorded).
 * Touches `updated_at` so the next run compares others first.
 */
export async function billingDrift(deps: Deps, appId: string, accountId: string): Promise<string | null> {
  const em = deps.orm.em.fork();
  const s = await em.findOne(Subscription, { appId, accountId });
  const conn = await em.findOne(PaymentConnection, { appId });
  if (!s || !conn) return null;
  const remote = await providerFor(deps.config, conn).getSubscription(s.providerSubscriptionId);
  await em.nativeUpdate(Subscription, { appId, accountId }, { updatedAt: new Date() });
  const out: string[] = [];
  if (!expectedStatus(s).includes(remote.status)) out.push(`status ${s.status} here, ${remote.status} there`);
  const paid = remote.lastPaymentAt ? Date.parse(remote.lastPaymentAt) : 0;
  if (paid > (s.lastPaymentAt ? new Date(s.lastPaymentAt).getTime() : 0)) out.push('a payment not recorded here');
  const failed = remote.lastFailedPaymentAt ? Date.parse(remote.lastFailedPaymentAt) : 0;
  if (failed > (s.lastPaymentFailedAt ? new Date(s.lastPaymentFailedAt).getTime() : 0))
    out.push('a failed payment not recorded here');
  const planned = s.scheduledChange?.providerPlanId ?? s.pendingChange?.providerPlanId;
  if (s.providerPlanId && remote.planId !== s.providerPlanId && remote.planId !== planned)
    out.push(`provider plan ${remote.planId}, expected ${s.providerPlanId}`);
  return out.length ? out.join('; ') : null;
}
