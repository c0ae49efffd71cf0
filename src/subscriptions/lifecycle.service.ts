// A subscription's life besides plan changes: cancel (now, or at the end of the period), pause and resume, and the
// end of a dunning grace period. Each runs as the account actor's activity (src/subscriptions/intents.service.ts):
// the provider first, then one transaction for the record, its events and its timeline.
import { LockMode } from '@mikro-orm/core';
import { accountDetail, changeAccount, findAccount, freePlanOf } from '../accounts/accounts.service.js';
import { addMonths, appNow } from '../apps/clock.js';
import type { Ctx } from '../context.js';
import { idleInTransactionFor, sql } from '../db/sql.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { conflict } from '../errors.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import { providerFor, requireProvider, withProvider } from '../payments/payments.service.js';
import type { PaymentProvider } from '../payments/provider.js';
import { settlePendingSave } from '../cancel-flows/pending-saves.service.js';
import { Subscription, type ISubscription, type PendingChange } from './subscriptions.entities.js';
import { presentSubscription } from './subscriptions.present.js';
import { findSubscription } from './subscriptions.service.js';

// ---- the provider's side ------------------------------------------------------------------------------------

/**
 * A state change at the provider that may have happened already: when it fails and the provider reports the
 * subscription in the target state (a retry after a crash between the provider call and our commit), it counts as
 * done, so retrying is safe.
 */
export async function toProviderState(
  provider: PaymentProvider,
  id: string,
  target: string,
  change: () => Promise<void>,
) {
  try {
    await withProvider(change);
  } catch (err) {
    const remote = await withProvider(() => provider.getSubscription(id)).catch(() => null);
    if (remote?.status !== target) throw err;
  }
}

export const cancelAtProvider = (provider: PaymentProvider, id: string, reason: string) =>
  toProviderState(provider, id, 'CANCELLED', () => provider.cancelSubscription(id, reason));
const suspendAtProvider = (provider: PaymentProvider, id: string, reason: string) =>
  toProviderState(provider, id, 'SUSPENDED', () => provider.suspendSubscription(id, reason));
const activateAtProvider = (provider: PaymentProvider, id: string, reason: string) =>
  toProviderState(provider, id, 'ACTIVE', () => provider.activateSubscription(id, reason));

// ---- events -------------------------------------------------------------------------------------------------

/** A subscription event: `data.object` is the account with its subscription (the spec's shape). */
export async function emitSubscriptionEvent(
  t: Tx,
  s: ISubscription,
  type: string,
  extra: Record<string, unknown> = {},
) {
  await t.em.flush();
  const account = await findAccount(t.em, s.appId, s.accountId);
  t.emit(s.appId, type, {
    object: { ...(await accountDetail(t.em, account)), subscription: presentSubscription(s) },
    ...extra,
  });
}

export type DropReason = 'refused' | 'expired' | 'withdrawn' | 'replaced' | 'cancelled';

/**
 * A change that will not apply: the subscription stops waiting on it, a cancel flow's save it carried goes back to
 * open, and `subscription.change_dropped` says which and why (nothing is dropped without an event).
 */
export async function dropChange(t: Tx, s: ISubscription, c: PendingChange, reason: DropReason) {
  if (s.pendingChange?.id === c.id) s.pendingChange = null;
  if (s.scheduledChange?.id === c.id) s.scheduledChange = null;
  if (c.id) s.lastChange = { id: c.id, outcome: reason, at: appNowOf(t).toISOString() };
  if (c.sessionId) await settlePendingSave(t, c.sessionId, reason === 'expired' ? 'expired' : 'refused');
  await emitSubscriptionEvent(t, s, 'subscription.change_dropped', {
    change: {
      id: c.id ?? null,
      kind: c.kind ?? 'change',
      plan: c.plan,
      price: c.price,
      currency: c.currency,
      interval: c.interval,
      status: c.scheduledAt ? 'scheduled' : 'awaiting_approval',
    },
    reason,
    summary:
      `${c.scheduledAt ? 'Scheduled' : 'Waiting'} ` +
      `${c.kind === 'withdrawal' ? 'withdrawal' : `change to ${c.planName ?? c.plan}`} dropped (${reason})`,
  });
}

/** The app time a transaction runs at (the app's clock, read into it by `withClock`). */
const clockOfTx = new WeakMap<Tx, number>();
export const appNowOf = (t: Tx) => new Date(Date.now() + (clockOfTx.get(t) ?? 0));

/** Reads the app's clock into the transaction (so dates it writes follow a test clock). */
export async function withClock(t: Tx, appId: string) {
  const [r] = await sql<{ clock_offset_ms: string }>(t.em, 'select clock_offset_ms from apps where id = $1', [appId]);
  clockOfTx.set(t, Number(r?.clock_offset_ms ?? 0));
}

// ---- cancel -------------------------------------------------------------------------------------------------

/** Cancels now: at the provider, then the record (free plan, `subscription.cancelled`). */
export async function cancelNow(ctx: Ctx, accountId: string, reason: string | undefined) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (s.status === 'cancelled') throw conflict(`The subscription of account ${accountId} is already cancelled`);
  const { provider } = await requireProvider(ctx);
  await cancelAtProvider(provider, s.providerSubscriptionId, reason ?? 'Cancelled by the customer');
  return inTransaction(ctx.deps, ctx.deps.orm.em.fork(), (t) =>
    cancelLocally(t, ctx.deps, ctx.app.id, accountId, { providerStatus: 'CANCELLED' }),
  );
}

/**
 * Records a cancellation (asked here, reported by the provider, or the end of a period or a grace period): the
 * subscription ends, changes it waited on are dropped (evented), the account moves to the free plan if the app
 * has one, and `subscription.cancelled` is emitted. Once only (the row is read under its lock).
 */
export async function cancelLocally(
  t: Tx,
  deps: Deps,
  appId: string,
  accountId: string,
  opts: { providerStatus?: string } = {},
) {
  await withClock(t, appId);
  const sub = await findSubscription(t.em, appId, accountId, true);
  if (sub.status === 'cancelled') return presentSubscription(sub);
  // What the provider says now, when this change was made there (its notification records it too, later).
  if (opts.providerStatus) sub.providerStatus = opts.providerStatus;
  for (const c of [sub.pendingChange, sub.scheduledChange]) if (c) await dropChange(t, sub, c, 'cancelled');
  sub.status = 'cancelled';
  sub.cancelledAt = appNowOf(t);
  sub.resumeAt = null;
  sub.cancelAt = null;
  sub.pastDueSince = null;
  sub.nextPaymentRetryAt = null;
  sub.dunningRestorePlanId = null;
  const free = await freePlanOf(t.em, appId);
  let previousPlan = '';
  const after = await changeAccount({ em: t.em, deps, app: { id: appId } }, accountId, async (_t, account) => {
    previousPlan = sub.restorePlanId ?? account.planId;
    if (free) account.planId = free.id;
  });
  sub.restorePlanId = null;
  await t.em.flush();
  t.emit(appId, 'subscription.cancelled', {
    object: { ...after, subscription: presentSubscription(sub) },
    previous: { plan: previousPlan },
  });
  return presentSubscription(sub);
}

/**
 * Cancels at the end of the paid period: billing stops at the provider now (suspended: nothing more can be
 * charged, and it can still be undone), the plan stays until `renews_at`, when the actor cancels for good. A change
 * scheduled for that renewal stays: the provider already bills its plan from then, so if the cancellation is undone
 * it applies at the renewal; if not, it is dropped with the cancellation (`cancelLocally`).
 */
export async function cancelAtPeriodEnd(ctx: Ctx, accountId: string, reason: string | undefined) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (!s.renewsAt || new Date(s.renewsAt).getTime() <= appNow(ctx.app).getTime())
    return cancelNow(ctx, accountId, reason);
  const { provider } = await requireProvider(ctx);
  await suspendAtProvider(provider, s.providerSubscriptionId, reason ?? 'Cancelled at the end of the period');
  return inTransaction(ctx.deps, ctx.deps.orm.em.fork(), async (t) => {
    await withClock(t, ctx.app.id);
    const row = await findSubscription(t.em, ctx.app.id, accountId, true);
    if (row.status !== 'active')
      throw conflict(`The subscription of account ${accountId} is ${row.status}, not active`);
    row.cancelAt = row.renewsAt;
    row.pauseReason = reason ?? null;
    await emitSubscriptionEvent(t, row, 'subscription.cancel_scheduled', {
      cancel_at: row.cancelAt?.toISOString() ?? null,
      summary: `Cancellation scheduled for ${row.cancelAt?.toISOString().slice(0, 10)}`,
    });
    return presentSubscription(row);
  });
}

/** The end of the period of a cancellation asked for then (the actor's timer): cancels for good. */
export async function finishCancelAtPeriodEnd(ctx: Ctx, accountId: string) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (s.status !== 'active' || !s.cancelAt) return presentSubscription(s);
  const conn = await ctx.em.findOne(PaymentConnection, { appId: ctx.app.id });
  if (conn)
    await cancelAtProvider(providerFor(ctx.deps.config, conn), s.providerSubscriptionId, 'End of the paid period');
  return inTransaction(ctx.deps, ctx.deps.orm.em.fork(), (t) =>
    cancelLocally(t, ctx.deps, ctx.app.id, accountId, conn ? { providerStatus: 'CANCELLED' } : {}),
  );
}

/** Undoes a cancellation at the end of the period: billing starts again at the provider, nothing else changed. */
export async function undoCancel(ctx: Ctx, accountId: string) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (s.status !== 'active' || !s.cancelAt)
    throw conflict(`The subscription of account ${accountId} has no cancellation to undo`);
  const { provider } = await requireProvider(ctx);
  await activateAtProvider(provider, s.providerSubscriptionId, 'Cancellation undone');
  return inTransaction(ctx.deps, ctx.deps.orm.em.fork(), async (t) => {
    const row = await findSubscription(t.em, ctx.app.id, accountId, true);
    row.cancelAt = null;
    row.pauseReason = null;
    await emitSubscriptionEvent(t, row, 'subscription.cancel_undone', { summary: 'Cancellation undone' });
    return presentSubscription(row);
  });
}

// ---- pause and resume ---------------------------------------------------------------------------------------

/**
 * Suspends billing at the provider for `months` (1 to 12), moves the account to the free plan if the app has one,
 * and remembers the plan to restore; the account's actor resumes it at `resume_at` (app time).
 */
export async function pauseSubscription(ctx: Ctx, accountId: string, months: number, reason: string | undefined) {
  await suspendForPause(ctx, accountId, months, reason);
  return inTransaction(ctx.deps, ctx.deps.orm.em.fork(), (t) =>
    pauseLocally(t, ctx.deps, ctx.app.id, accountId, months, reason),
  );
}

/** The provider half of a pause: the subscription must be active; billing is suspended there. */
export async function suspendForPause(ctx: Ctx, accountId: string, months: number, reason: string | undefined) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (s.status !== 'active') throw conflict(`The subscription of account ${accountId} is ${s.status}, not active`);
  const { provider } = await requireProvider(ctx);
  await suspendAtProvider(provider, s.providerSubscriptionId, reason ?? `Paused for ${months} month(s)`);
}

/** The local half of a pause, in the caller's transaction: free plan, the plan to restore, `subscription.paused`. */
export async function pauseLocally(
  t: Tx,
  deps: Deps,
  appId: string,
  accountId: string,
  months: number,
  reason: string | undefined,
) {
  await withClock(t, appId);
  const sub = await findSubscription(t.em, appId, accountId, true);
  const now = appNowOf(t);
  const free = await freePlanOf(t.em, appId);
  let restore = '';
  const after = await changeAccount({ em: t.em, deps, app: { id: appId } }, accountId, async (_t, account) => {
    restore = account.planId;
    if (free) account.planId = free.id;
  });
  sub.status = 'paused';
  sub.pausedAt = now;
  // Calendar months on the app's clock: tests move a test clock to the end of a pause rather than shorten months.
  sub.resumeAt = addMonths(now, months);
  sub.restorePlanId = restore;
  sub.pauseReason = reason ?? null;
  sub.pauseCount += 1;
  await t.em.flush();
  t.emit(appId, 'subscription.paused', {
    object: { ...after, subscription: presentSubscription(sub) },
    previous: { plan: restore },
  });
  return presentSubscription(sub);
}

/** How long a transaction may wait on the provider under its locks (`idleInTransactionFor`). */
const PROVIDER_IDLE_MS = 90_000;

/**
 * Ends a pause: reactivates billing at the provider, restores the plan, emits `subscription.resumed`. Once only:
 * the row is locked and must still be paused (and, when given, in that same pause).
 */
export async function resumePause(
  deps: Deps,
  appId: string,
  accountId: string,
  opts: { pause?: number; by: 'timer' | 'request' },
): Promise<boolean> {
  return inTransaction(deps, deps.orm.em.fork(), async (t) => {
    const sub = await t.em.findOne(Subscription, { appId, accountId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!sub || sub.status !== 'paused' || (opts.pause !== undefined && sub.pauseCount !== opts.pause)) return false;
    const conn = await t.em.findOne(PaymentConnection, { appId });
    if (conn) {
      // The provider is called under the row's lock: the session waits idle in its transaction meanwhile (PayPal
      // calls are bounded by 20 s each, and this makes up to four).
      await idleInTransactionFor(t.em, PROVIDER_IDLE_MS);
      await activateAtProvider(providerFor(deps.config, conn), sub.providerSubscriptionId, 'Pause ended');
    }
    const restore = sub.restorePlanId;
    let previous = '';
    const after = await changeAccount({ em: t.em, deps, app: { id: appId } }, accountId, async (_t, account) => {
      previous = account.planId;
      if (restore) account.planId = restore;
    });
    sub.status = 'active';
    sub.resumeAt = null;
    sub.pausedAt = null;
    sub.restorePlanId = null;
    sub.pauseReason = null;
    await t.em.flush();
    t.emit(appId, 'subscription.resumed', {
      object: { ...after, subscription: presentSubscription(sub) },
      previous: { plan: previous },
      resumed_by: opts.by,
    });
    return true;
  });
}

// ---- dunning ------------------------------------------------------------------------------------------------

/**
 * The end of a dunning grace period with the payment still failing: the app's `dunning.after` decides. `cancel`:
 * cancelled at the provider and here (free plan, `subscription.cancelled`). `free_plan`: the account moves to the
 * free plan and the subscription stays past due, its plan given back when a payment succeeds.
 */
export async function endGrace(ctx: Ctx, accountId: string) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (s.status !== 'past_due') return presentSubscription(s);
  if ((s.dunningAfter ?? 'cancel') === 'cancel') {
    const conn = await ctx.em.findOne(PaymentConnection, { appId: ctx.app.id });
    if (conn) await cancelAtProvider(providerFor(ctx.deps.config, conn), s.providerSubscriptionId, 'Payment failed');
    return inTransaction(ctx.deps, ctx.deps.orm.em.fork(), async (t) => {
      const row = await findSubscription(t.em, ctx.app.id, accountId, true);
      if (row.status !== 'past_due') return presentSubscription(row);
      if (conn) row.providerStatus = 'CANCELLED';
      // Said first, so a reader of the events sees why the cancellation that follows happened.
      await emitSubscriptionEvent(t, row, 'subscription.grace_ended', {
        after: 'cancel',
        outstanding: row.outstandingBalance ?? null,
        summary: 'Grace period over with the payment still failing: the subscription is cancelled',
      });
      return cancelLocally(t, ctx.deps, ctx.app.id, accountId);
    });
  }
  return inTransaction(ctx.deps, ctx.deps.orm.em.fork(), async (t) => {
    const row = await findSubscription(t.em, ctx.app.id, accountId, true);
    if (row.status !== 'past_due' || row.dunningRestorePlanId) return presentSubscription(row);
    const free = await freePlanOf(t.em, ctx.app.id);
    await changeAccount({ em: t.em, deps: ctx.deps, app: { id: ctx.app.id } }, accountId, async (_t, account) => {
      row.dunningRestorePlanId = account.planId;
      if (free) account.planId = free.id;
    });
    row.graceEndsAt = row.graceEndsAt ?? appNow(ctx.app);
    await emitSubscriptionEvent(t, row, 'subscription.grace_ended', {
      after: 'free_plan',
      outstanding: row.outstandingBalance ?? null,
      summary: 'Grace period over: the account is on the free plan until a payment succeeds',
    });
    return presentSubscription(row);
  });
}
