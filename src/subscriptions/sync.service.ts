// Reading the provider and applying what it reports, in the order it happened: an approved change (now, or
// scheduled for the renewal), the payments of each cycle (renewals: a scheduled change applies, a discount counts
// down), failed payments (dunning: past due, then recovered or, at the end of the grace period, the app's choice),
// and a cancellation or expiry at the provider. The account actor runs it for every fact and at its dates.
import { changeAccount } from '../accounts/accounts.service.js';
import { dunningOf } from '../apps/clock.js';
import { sql } from '../db/sql.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { conflict, notFound } from '../errors.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import { providerFor, withProvider } from '../payments/payments.service.js';
import type { ProviderPayment, ProviderSubscription } from '../payments/provider.js';
import { settlePendingSave } from '../cancel-flows/pending-saves.service.js';
import { App, type IApp } from '../apps/apps.entities.js';
import { Subscription, type ISubscription, type PendingChange } from './subscriptions.entities.js';
import { presentSubscription } from './subscriptions.present.js';
import { findSubscription } from './subscriptions.service.js';
import { appNowOf, cancelLocally, dropChange, emitSubscriptionEvent, withClock } from './lifecycle.service.js';

type Proration = 'captured' | 'not_approved' | null;

/** What happened at the provider since the record last looked, in time order. */
type Happening =
  | { at: number; kind: 'paid'; payment: ProviderPayment }
  | { at: number; kind: 'failed'; payment: ProviderPayment | null; nextRetryAt: string | null };

/**
 * The payments charged and the attempts declined since the record last looked, oldest first: each from the
 * subscription's transactions (a test clock may jump over several cycles and retries), each failure with when the
 * provider tries again (the next attempt's time, or for the last one what the provider reports).
 */
async function happenings(
  pre: ISubscription,
  remote: ProviderSubscription,
  list: (from: Date, to: Date) => Promise<ProviderPayment[]>,
): Promise<Happening[]> {
  const since = pre.lastPaymentAt ? new Date(pre.lastPaymentAt).getTime() : 0;
  const failedSince = pre.lastPaymentFailedAt ? new Date(pre.lastPaymentFailedAt).getTime() : 0;
  const lastPaid = remote.lastPaymentAt ? Date.parse(remote.lastPaymentAt) : 0;
  const lastFailed = remote.lastFailedPaymentAt ? Date.parse(remote.lastFailedPaymentAt) : 0;
  const newPayment = lastPaid > since;
  const newFailure = lastFailed > failedSince;
  if (!newPayment && !newFailure) return [];
  const created = new Date(pre.createdAt).getTime() - 86_400_000;
  const from = new Date(Math.min(since || created, failedSince || created));
  const listed = (await list(from, new Date(Math.max(lastPaid, lastFailed) + 1000)).catch(() => null)) ?? [];
  const attempts = listed
    .filter((p) => p.status === 'COMPLETED' || p.status === 'DECLINED')
    .sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
  const out: Happening[] = [];
  attempts.forEach((p, i) => {
    const at = Date.parse(p.time);
    if (p.status === 'COMPLETED' && at > since) out.push({ at, kind: 'paid', payment: p });
    if (p.status === 'DECLINED' && at > failedSince) {
      const next = attempts[i + 1];
      out.push({ at, kind: 'failed', payment: p, nextRetryAt: next ? next.time : (remote.nextPaymentRetryAt ?? null) });
    }
  });
  // A provider whose transactions did not answer (or list no attempt): what its billing info says, once each.
  if (newPayment && !out.some((h) => h.kind === 'paid'))
    out.push({
      at: lastPaid,
      kind: 'paid',
      payment: {
        id: 'last',
        status: 'COMPLETED',
        amount: Number(pre.price),
        currency: pre.currency,
        time: remote.lastPaymentAt!,
      },
    });
  if (newFailure && !out.some((h) => h.kind === 'failed'))
    out.push({ at: lastFailed, kind: 'failed', payment: null, nextRetryAt: remote.nextPaymentRetryAt ?? null });
  return out.sort((a, b) => a.at - b.at);
}

/** Applies an approved change now: the plan, price and terms move, the account follows (or its restore plan while paused). */
async function applyChange(
  t: Tx,
  deps: Deps,
  s: ISubscription,
  change: PendingChange,
  providerPlanId: string,
  proration: Proration,
) {
  if (change.id)
    s.lastChange = {
      id: change.id,
      outcome: 'applied',
      at: appNowOf(t).toISOString(),
      ...(change.proration ? { proration: proration ?? change.proration.status ?? 'not_approved' } : {}),
    };
  // A cancel flow's save counts from now on: the provider confirmed it.
  if (change.sessionId) await settlePendingSave(t, change.sessionId, 'applied');
  const previous = { plan: s.planId, price: Number(s.price), interval: s.interval };
  s.planId = change.plan;
  s.interval = change.interval;
  s.currency = change.currency;
  s.price = change.price;
  s.discount = change.discount ? { ...change.discount, cyclesLeft: change.discount.cycles } : null;
  s.offerId = null;
  s.providerPlanId = providerPlanId;
  if (s.pendingChange?.id === change.id) s.pendingChange = null;
  if (s.scheduledChange?.id === change.id) s.scheduledChange = null;
  const after = await changeAccount({ em: t.em, deps, app: { id: s.appId } }, s.accountId, async (_t, account) => {
    if (s.status === 'paused') s.restorePlanId = change.plan;
    else if (s.dunningRestorePlanId) s.dunningRestorePlanId = change.plan;
    else account.planId = change.plan;
    account.offerId = null;
  });
  await t.em.flush();
  t.emit(s.appId, 'subscription.changed', {
    object: { ...after, subscription: presentSubscription(s) },
    previous,
    ...(change.proration
      ? {
          proration: {
            amount: change.proration.amount,
            currency: change.proration.currency,
            status: proration ?? change.proration.status ?? 'not_approved',
          },
        }
      : {}),
  });
}

/** The provider reported the waiting change approved: it applies now, or is scheduled for the renewal. */
async function approved(t: Tx, deps: Deps, s: ISubscription, remotePlanId: string, proration: Proration) {
  const change = s.pendingChange!;
  const replaced = change.replaces && s.scheduledChange?.id === change.replaces ? s.scheduledChange : null;
  if (change.kind === 'withdrawal') {
    s.pendingChange = null;
    if (change.id) s.lastChange = { id: change.id, outcome: 'applied', at: appNowOf(t).toISOString() };
    if (replaced) await dropChange(t, s, replaced, 'withdrawn');
    return;
  }
  if (replaced) await dropChange(t, s, replaced, 'replaced');
  if (change.effective !== 'renewal') return applyChange(t, deps, s, change, remotePlanId, proration);
  // Approved at the provider, which bills the new price from the next cycle: the account keeps its plan (and what
  // it paid for) until the renewal, when the change applies.
  if (s.scheduledChange) await dropChange(t, s, s.scheduledChange, 'replaced');
  s.scheduledChange = { ...change, scheduledAt: appNowOf(t).toISOString(), expiresAt: undefined };
  s.pendingChange = null;
  // A cancel flow's downgrade is a save from the approval on: the customer committed to it at the provider.
  if (change.sessionId) await settlePendingSave(t, change.sessionId, 'applied');
  await emitSubscriptionEvent(t, s, 'subscription.change_scheduled');
}

/** A cycle was charged: a renewal (a scheduled change applies, a discount counts down) and, past due, a recovery. */
async function paid(t: Tx, deps: Deps, s: ISubscription, p: ProviderPayment, first: boolean) {
  const renewal = !first;
  s.lastPaymentAt = new Date(p.time);
  if (s.status === 'past_due') {
    const restore = s.dunningRestorePlanId;
    s.status = 'active';
    s.pastDueSince = null;
    s.nextPaymentRetryAt = null;
    s.outstandingBalance = null;
    s.graceEndsAt = null;
    s.dunningAfter = null;
    s.dunningRestorePlanId = null;
    if (restore)
      await changeAccount({ em: t.em, deps, app: { id: s.appId } }, s.accountId, async (_t, account) => {
        account.planId = restore;
      });
    await emitSubscriptionEvent(t, s, 'subscription.recovered', {
      payment: { id: p.id, amount: p.amount, currency: p.currency, time: p.time },
      summary: `Payment recovered: ${p.amount} ${p.currency}`,
    });
  }
  if (!renewal) return;
  if (s.scheduledChange) await applyChange(t, deps, s, s.scheduledChange, s.scheduledChange.providerPlanId, null);
  else if (s.discount) {
    // A cancel-flow discount lasts a number of renewals; then the regular price is billed again.
    const left = s.discount.cyclesLeft - 1;
    if (left > 0) s.discount = { ...s.discount, cyclesLeft: left };
    else {
      s.price = s.discount.regularPrice;
      s.discount = null;
    }
  }
  await emitSubscriptionEvent(t, s, 'subscription.renewed', {
    payment: { id: p.id, amount: p.amount, currency: p.currency, time: p.time },
  });
}

/** A renewal payment failed: past due (once), and `subscription.payment_failed` each time. */
async function failed(
  t: Tx,
  s: ISubscription,
  remote: ProviderSubscription,
  e: Extract<Happening, { kind: 'failed' }>,
  app: Pick<IApp, 'dunning'>,
) {
  const at = e.at;
  s.lastPaymentFailedAt = new Date(at);
  s.paymentFailures = (s.status === 'past_due' ? s.paymentFailures : 0) + 1;
  s.nextPaymentRetryAt = e.nextRetryAt ? new Date(e.nextRetryAt) : null;
  s.outstandingBalance = remote.outstandingBalance?.amount ?? e.payment?.amount ?? Number(s.price);
  if (s.status === 'active' && !s.cancelAt) {
    const d = dunningOf(app);
    s.status = 'past_due';
    s.pastDueSince = new Date(at);
    s.graceEndsAt = new Date(at + d.grace_days * 86_400_000);
    s.dunningAfter = d.after;
    await emitSubscriptionEvent(t, s, 'subscription.past_due', {
      grace_ends_at: s.graceEndsAt.toISOString(),
      after: d.after,
      summary: `Past due: the renewal payment failed; grace until ${s.graceEndsAt.toISOString().slice(0, 10)}`,
    });
  }
  await emitSubscriptionEvent(t, s, 'subscription.payment_failed', {
    attempt: s.paymentFailures,
    payment: e.payment
      ? { id: e.payment.id, amount: e.payment.amount, currency: e.payment.currency, time: e.payment.time }
      : { id: null, amount: s.outstandingBalance, currency: s.currency, time: new Date(at).toISOString() },
    next_retry_at: s.nextPaymentRetryAt?.toISOString() ?? null,
    outstanding: s.outstandingBalance,
    summary: `Payment failed (attempt ${s.paymentFailures})`,
  });
}

/**
 * Re-reads the subscription at the provider and applies what it reports (see the file's comment). Once only: the
 * row is read under its lock and every step compares with what it recorded.
 */
export async function syncSubscription(deps: Deps, appId: string, accountId: string) {
  const em = deps.orm.em.fork();
  const pre = await em.findOne(Subscription, { appId, accountId });
  if (!pre) throw notFound(`Subscription of account ${accountId}`);
  const conn = await em.findOne(PaymentConnection, { appId });
  if (!conn) throw conflict('payment provider not connected');
  const app = await em.findOneOrFail(App, { id: appId });
  const provider = providerFor(deps.config, conn);
  const remote = await withProvider(() => provider.getSubscription(pre.providerSubscriptionId));
  // An approved upgrade's prorated difference is captured once the provider reports the revision approved (the
  // capture's idempotency key makes a second sync's capture the same one).
  const pc = pre.pendingChange;
  let proration: Proration = null;
  if (pc?.proration && remote.planId === pc.providerPlanId) {
    const order = await withProvider(() => provider.getOrder(pc.proration!.orderId));
    if (order.status === 'APPROVED')
      proration =
        (await withProvider(() => provider.captureOrder(order.id, `${pc.id}:capture`))).status === 'COMPLETED'
          ? 'captured'
          : 'not_approved';
    else proration = order.status === 'COMPLETED' ? 'captured' : 'not_approved';
  }
  const events = await happenings(pre, remote, (from, to) =>
    withProvider(() => provider.listSubscriptionPayments(pre.providerSubscriptionId, { from, to })),
  );
  return inTransaction(deps, em, async (t) => {
    await withClock(t, appId);
    const s = await findSubscription(t.em, appId, accountId, true);
    if (s.status === 'cancelled') return presentSubscription(s);
    s.providerStatus = remote.status;
    s.renewsAt = remote.nextBillingTime ? new Date(remote.nextBillingTime) : s.renewsAt;
    if (remote.status === 'CANCELLED' || remote.status === 'EXPIRED') {
      await t.em.flush();
      return cancelLocally(t, deps, appId, accountId);
    }
    if (s.pendingChange && remote.planId === s.pendingChange.providerPlanId)
      await approved(t, deps, s, remote.planId, proration);
    for (const e of events) {
      if (e.kind === 'paid') {
        if (s.lastPaymentAt && e.at <= new Date(s.lastPaymentAt).getTime()) continue;
        await paid(t, deps, s, e.payment, !s.lastPaymentAt);
      } else {
        if (s.lastPaymentFailedAt && e.at <= new Date(s.lastPaymentFailedAt).getTime()) continue;
        await failed(t, s, remote, e, app);
      }
    }
    if (s.status === 'past_due') {
      // The provider's word on its next retry: none once a cycle's retries are spent (the actor then waits for the
      // next cycle or the end of the grace period, not for a retry that will not come).
      s.nextPaymentRetryAt = remote.nextPaymentRetryAt ? new Date(remote.nextPaymentRetryAt) : null;
      if (remote.outstandingBalance) s.outstandingBalance = remote.outstandingBalance.amount;
    }
    await t.em.flush();
    return presentSubscription(s);
  });
}

/** The outstanding balance of a past-due subscription, charged now at the provider (the `retry_payment` intent). */
export async function retryPayment(deps: Deps, appId: string, accountId: string) {
  const em = deps.orm.em.fork();
  const s = await findSubscription(em, appId, accountId);
  if (s.status !== 'past_due')
    throw conflict(`The subscription of account ${accountId} has no failed payment to retry`, {
      reason: 'not_past_due',
    });
  const conn = await em.findOne(PaymentConnection, { appId });
  if (!conn) throw conflict('payment provider not connected');
  const provider = providerFor(deps.config, conn);
  const remote = await withProvider(() => provider.getSubscription(s.providerSubscriptionId));
  const owed = remote.outstandingBalance ?? {
    amount: Number(s.outstandingBalance ?? s.price),
    currency: s.currency,
  };
  // One capture per failure: a retry of this call (or of the activity) answers the same capture.
  const key = `retry:${s.providerSubscriptionId}:${s.paymentFailures}:${new Date(s.lastPaymentFailedAt ?? 0).getTime()}`;
  const capture = await withProvider(() =>
    provider.captureOutstanding(
      s.providerSubscriptionId,
      { amount: owed.amount, currency: owed.currency, note: 'Retry of a failed payment' },
      key,
    ),
  );
  // The outcome is recorded either way (a decline is one more failure, with its event); a decline is the caller's
  // answer too, so nobody reads a 200 as "paid".
  const after = await syncSubscription(deps, appId, accountId);
  if (capture.status === 'DECLINED')
    throw conflict(
      `The provider declined the payment of ${owed.amount.toFixed(2)} ${owed.currency}; the subscription of account ` +
        `${accountId} stays past due (grace until ${after.dunning?.grace_ends_at?.slice(0, 10) ?? 'its end'})`,
      { reason: 'payment_declined', subscription: after },
    );
  return after;
}

/** Whether the subscription row exists (for the actor's facts: an account without one has nothing to read). */
export async function hasSubscription(deps: Deps, appId: string, accountId: string): Promise<boolean> {
  const r = await sql(deps.orm.em.fork(), 'select 1 from subscriptions where app_id = $1 and account_id = $2', [
    appId,
    accountId,
  ]);
  return r.length > 0;
}
