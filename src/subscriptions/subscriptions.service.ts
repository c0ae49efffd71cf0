import type { z } from 'zod';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { accountDetail, changeAccount, findAccount, freePlanOf } from '../accounts/accounts.service.js';
import { planChangePolicyOf } from '../apps/apps.present.js';
import { findPlan } from '../catalog/catalog.service.js';
import { regularPrice } from '../offers/offers.service.js';
import type { Ctx } from '../context.js';
import { idleInTransactionFor, sql } from '../db/sql.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { cursorAtSql, cursorPage } from '../http/pagination.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import {
  ensureRegularProviderPlan,
  hostedReturnUrl,
  providerFor,
  requireProvider,
  withProvider,
} from '../payments/payments.service.js';
import { iso } from '../time.js';
import type { PaymentProvider, ProviderSubscription } from '../payments/provider.js';
import { outboxSignal, outboxStart, type TemporalCommand } from '../temporal/outbox.js';
import {
  pauseDef,
  pauseWorkflowId,
  PLAN_CHANGE_TTL_MS,
  planChangeDef,
  planChangeWorkflowId,
  type PauseInput,
  type PlanChangeInput,
} from '../../workflows/shared.js';
import { newId } from '../ids.js';
import { settlePendingSave } from '../cancel-flows/pending-saves.service.js';
import { Subscription, type ISubscription, type PendingChange } from './subscriptions.entities.js';
import {
  SUBSCRIPTION_STATUSES,
  type listSubscriptionsQuery,
  type subscriptionPageSchema,
} from './subscriptions.schemas.js';
import { presentSubscription } from './subscriptions.present.js';

export async function findSubscription(em: EntityManager, appId: string, accountId: string, lock = false) {
  // Under the lock, the row as it is now (not a copy the transaction's entity manager loaded earlier).
  const s = await em.findOne(
    Subscription,
    { appId, accountId },
    lock ? { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } : {},
  );
  if (!s) throw notFound(`Subscription of account ${accountId}`);
  return s;
}

export async function getSubscription(ctx: Ctx, accountId: string) {
  await findAccount(ctx.em, ctx.app.id, accountId);
  return presentSubscription(await findSubscription(ctx.em, ctx.app.id, accountId));
}

/**
 * The app's subscriptions, newest first, a page at a time (keyset on `created_at`, then the account id): by
 * status (without one, those that have not ended: active and paused; `all`: every one) and paid plan.
 */
export async function listSubscriptions(
  ctx: Ctx,
  q: z.output<typeof listSubscriptionsQuery>,
): Promise<z.input<typeof subscriptionPageSchema>> {
  const statuses: string[] =
    q.status === 'all' ? [...SUBSCRIPTION_STATUSES] : q.status ? [q.status] : ['active', 'paused'];
  const params: unknown[] = [ctx.app.id, statuses, q.limit + 1];
  let where = 'app_id = $1 and status = any($2::text[])';
  if (q.plan !== undefined) {
    params.push(q.plan);
    where += ` and plan_id = $${params.length}`;
  }
  if (q.cursor) {
    // Only with a cursor, so the index range starts there instead of filtering every earlier row.
    params.push(q.cursor.at, q.cursor.id);
    where += ` and (created_at, account_id) < ($${params.length - 1}::timestamptz, $${params.length}::text)`;
  }
  const rows = await sql<Record<string, unknown> & { account_id: string; cursor_at: string }>(
    ctx.em,
    `select *, ${cursorAtSql('created_at')} as cursor_at from subscriptions
      where ${where} order by created_at desc, account_id desc limit $3`,
    params,
  );
  const page = cursorPage(rows, q.limit, (r) => ({ at: r.cursor_at, id: r.account_id }));
  return {
    data: page.rows.map(({ cursor_at: _at, ...row }) => {
      const s = ctx.em.map(Subscription, row);
      return { account_id: s.accountId, ...presentSubscription(s) };
    }),
    next_cursor: page.next_cursor,
  };
}

/** The account's live (active or paused) subscription, or null. */
export async function liveSubscription(em: EntityManager, appId: string, accountId: string) {
  const s = await em.findOne(Subscription, { appId, accountId, status: { $in: ['active', 'paused'] } });
  return s ?? null;
}

/** Where an account's plan is changed (the answer to a second purchase). */
export const changeRoute = (appId: string, accountId: string) =>
  `/apps/${appId}/namespaces/${encodeURIComponent(accountId)}/subscription/change`;

/**
 * 409 for a purchase by an account that already has a live subscription: it names that subscription and points to
 * the plan change route, so a second provider subscription is never created for the account (issue 30).
 */
export function alreadySubscribed(appId: string, s: ISubscription) {
  const change = changeRoute(appId, s.accountId);
  return conflict(
    `Account ${s.accountId} already has a ${s.status} subscription ${s.providerSubscriptionId} to plan ${s.planId}; ` +
      `change its plan with POST ${change} instead of buying a second one`,
    { reason: 'already_subscribed', subscription: presentSubscription(s), change: { method: 'POST', path: change } },
  );
}

/** The account has a live subscription other than the one a completion would record. */
export class LiveSubscriptionExists extends Error {
  constructor(
    readonly accountId: string,
    readonly providerSubscriptionId: string,
  ) {
    super(`Account ${accountId} already has the live subscription ${providerSubscriptionId}`);
    this.name = 'LiveSubscriptionExists';
  }
}

/**
 * Records the account's subscription when a checkout is applied: a new row, or in place of one that has ended
 * (cancelled). Never over a live one with another provider subscription: then nothing is written and
 * LiveSubscriptionExists is thrown (the caller's transaction rolls back). The conflict is decided by PostgreSQL on
 * the row (a concurrent completion for the same account waits for this one's commit, then sees its row), and a
 * trigger refuses the overwrite whatever the statement (migration Migration20261201090000_one_live_subscription).
 */
export async function recordSubscription(
  t: Tx,
  c: {
    appId: string;
    accountId: string;
    providerSubscriptionId: string;
    checkoutId: string;
    offerId: string | null;
    planId: string;
    interval: 'month' | 'year';
    currency: string;
    price: number;
  },
  providerSub: ProviderSubscription | null,
) {
  const written = await sql<{ account_id: string }>(
    t.em,
    `insert into subscriptions (app_id, account_id, provider_subscription_id, checkout_id, offer_id, plan_id,
      interval, currency, price, status, renews_at,
                                provider_status, provider_plan_id, last_payment_at, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'active', $10, $11, $12, $13, now(), now())
     on conflict (app_id, account_id) do update set provider_subscription_id = excluded.provider_subscription_id,
       checkout_id = excluded.checkout_id,
       offer_id = excluded.offer_id, plan_id = excluded.plan_id, interval = excluded.interval, currency =
         excluded.currency, price = excluded.price,
       status = 'active', renews_at = excluded.renews_at, provider_status = excluded.provider_status,
         provider_plan_id = excluded.provider_plan_id,
       last_payment_at = excluded.last_payment_at, paused_at = null, resume_at = null, restore_plan_id = null,
         cancelled_at = null, pending_change = null, discount = null,
       updated_at = now()
     where subscriptions.status = 'cancelled'
        or subscriptions.provider_subscription_id = excluded.provider_subscription_id
     returning account_id`,
    [
      c.appId,
      c.accountId,
      c.providerSubscriptionId,
      c.checkoutId,
      c.offerId,
      c.planId,
      c.interval,
      c.currency,
      c.price,
      providerSub?.nextBillingTime ?? null,
      providerSub?.status ?? null,
      providerSub?.planId ?? null,
      providerSub?.lastPaymentAt ?? null,
    ],
  );
  if (written.length) return;
  const [live] = await sql<{ provider_subscription_id: string }>(
    t.em,
    'select provider_subscription_id from subscriptions where app_id = $1 and account_id = $2',
    [c.appId, c.accountId],
  );
  throw new LiveSubscriptionExists(c.accountId, live?.provider_subscription_id ?? 'unknown');
}

function monthsFrom(deps: Deps, from: Date, months: number): Date {
  if (deps.config.PAUSE_MONTH_SECONDS)
    return new Date(from.getTime() + months * deps.config.PAUSE_MONTH_SECONDS * 1000);
  const d = new Date(from);
  d.setUTCMonth(d.getUTCMonth() + months);
  return d;
}

/**
 * A state change at the provider that may have happened already: when it fails and the provider
 * reports the subscription in the target state (a retry after a crash between the provider call and
 * our commit), it counts as done, so retrying is safe.
 */
async function toProviderState(provider: PaymentProvider, id: string, target: string, change: () => Promise<void>) {
  try {
    await withProvider(change);
  } catch (err) {
    const remote = await withProvider(() => provider.getSubscription(id)).catch(() => null);
    if (remote?.status !== target) throw err;
  }
}

export const cancelAtProvider = (provider: PaymentProvider, id: string, reason: string) =>
  toProviderState(provider, id, 'CANCELLED', () => provider.cancelSubscription(id, reason));

/** Cancels at the provider; the account moves to the free plan if the app has one. */
export async function cancelSubscription(ctx: Ctx, accountId: string, reason: string | undefined) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (s.status === 'cancelled') throw conflict(`The subscription of account ${accountId} is already cancelled`);
  const { provider } = await requireProvider(ctx);
  await cancelAtProvider(provider, s.providerSubscriptionId, reason ?? 'Cancelled by the customer');
  return inTransaction(ctx.deps, ctx.em, (t) => cancelLocally(t, ctx.deps, ctx.app.id, accountId));
}

/**
 * Records a cancellation (asked here, or reported by the provider): the subscription ends, the
 * account moves to the free plan if the app has one, `subscription.cancelled` is emitted, and a
 * waiting pause workflow is told to stop. Once only: the provider's notification of a cancellation
 * asked here can be recorded first (both read the row under its lock).
 */
export async function cancelLocally(t: Tx, deps: Deps, appId: string, accountId: string) {
  const sub = await findSubscription(t.em, appId, accountId, true);
  if (sub.status === 'cancelled') return presentSubscription(sub);
  const wasPaused = sub.status === 'paused' ? sub.pauseCount : null;
  sub.status = 'cancelled';
  sub.cancelledAt = new Date();
  sub.resumeAt = null;
  sub.pendingChange = null;
  const free = await freePlanOf(t.em, appId);
  let previousPlan = '';
  const after = await changeAccount({ em: t.em, deps, app: { id: appId } }, accountId, async (_t, account) => {
    previousPlan = account.planId;
    if (free) account.planId = free.id;
  });
  await t.em.flush();
  t.emit(appId, 'subscription.cancelled', {
    object: { ...after, subscription: presentSubscription(sub) },
    previous: { plan: previousPlan },
  });
  if (wasPaused)
    t.temporal(outboxSignal(pauseDef, pauseWorkflowId(appId, accountId, wasPaused), pauseDef.signals.ended));
  return presentSubscription(sub);
}

/**
 * Suspends billing at the provider for `months` (1 to 12), moves the account to the free plan if the
 * app has one, remembers the plan to restore, and starts the pause workflow, whose durable timer
 * resumes it at `resume_at`.
 */
export async function pauseSubscription(ctx: Ctx, accountId: string, months: number, reason: string | undefined) {
  await suspendAtProvider(ctx, accountId, months, reason);
  return inTransaction(ctx.deps, ctx.em, (t) => pauseLocally(t, ctx.deps, ctx.app.id, accountId, months, reason));
}

/** The provider half of a pause: the subscription must be active; billing is suspended there. */
export async function suspendAtProvider(ctx: Ctx, accountId: string, months: number, reason: string | undefined) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (s.status !== 'active') throw conflict(`The subscription of account ${accountId} is ${s.status}, not active`);
  const { provider } = await requireProvider(ctx);
  await toProviderState(provider, s.providerSubscriptionId, 'SUSPENDED', () =>
    provider.suspendSubscription(s.providerSubscriptionId, reason ?? `Paused for ${months} month(s)`),
  );
}

/**
 * The local half of a pause, in the caller's transaction: free plan, the plan to restore,
 * `subscription.paused`, and the pause workflow start (outbox).
 */
export async function pauseLocally(
  t: Tx,
  deps: Deps,
  appId: string,
  accountId: string,
  months: number,
  reason: string | undefined,
) {
  const sub = await findSubscription(t.em, appId, accountId, true);
  const now = new Date();
  const free = await freePlanOf(t.em, appId);
  let restore = '';
  const after = await changeAccount({ em: t.em, deps, app: { id: appId } }, accountId, async (_t, account) => {
    restore = account.planId;
    if (free) account.planId = free.id;
  });
  sub.status = 'paused';
  sub.pausedAt = now;
  sub.resumeAt = monthsFrom(deps, now, months);
  sub.restorePlanId = restore;
  sub.pauseReason = reason ?? null;
  sub.pauseCount += 1;
  await t.em.flush();
  t.emit(appId, 'subscription.paused', {
    object: { ...after, subscription: presentSubscription(sub) },
    previous: { plan: restore },
  });
  const input: PauseInput = {
    appId,
    accountId,
    pause: sub.pauseCount,
    resumeAt: sub.resumeAt.toISOString(),
    restorePlan: restore,
    pausedAt: now.toISOString(),
  };
  t.temporal(pauseCommand(input, reason ?? null));
  return presentSubscription(sub);
}

/** The pause workflow's start (also used by the reconciler to restart one whose workflow is gone). */
export function pauseCommand(input: PauseInput, reason: string | null): TemporalCommand {
  const { appId, accountId, restorePlan: restore } = input;
  return outboxStart(pauseDef, pauseWorkflowId(appId, accountId, input.pause), input, {
    searchAttributes: { AppId: appId, AccountId: accountId, BillingStatus: 'paused', ResumeAt: input.resumeAt },
    summary: `Pause: ${accountId} until ${input.resumeAt.slice(0, 10)}, then back to ${restore}`,
    details:
      `Billing of account **${accountId}** (app ${appId}) is suspended since ${input.pausedAt}${reason ? ` (${reason})` : ''}. ` +
      `At ${input.resumeAt} this workflow reactivates billing and restores plan **${restore}**.`,
  });
}

/** How long a transaction may wait on the provider under its locks (`idleInTransactionFor`). */
const PROVIDER_IDLE_MS = 90_000;

/**
 * Ends a pause: reactivates billing at the provider, restores the plan, emits `subscription.resumed`.
 * Once only: the subscription row is locked and must still be paused (and, when given, in that same
 * pause), so the workflow's timer, the API and /pauses/resume can race safely.
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
      const provider = providerFor(deps.config, conn);
      await toProviderState(provider, sub.providerSubscriptionId, 'ACTIVE', () =>
        provider.activateSubscription(sub.providerSubscriptionId, 'Pause ended'),
      );
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
    });
    if (opts.by === 'request')
      t.temporal(outboxSignal(pauseDef, pauseWorkflowId(appId, accountId, sub.pauseCount), pauseDef.signals.ended));
    return true;
  });
}

export async function resumeSubscription(ctx: Ctx, accountId: string) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (s.status !== 'paused') throw conflict(`The subscription of account ${accountId} is not paused`);
  await resumePause(ctx.deps, ctx.app.id, accountId, { by: 'request' });
  return presentSubscription(await findSubscription(ctx.deps.orm.em.fork(), ctx.app.id, accountId));
}

/** Paused subscriptions whose resume time has passed (for an external scheduler), oldest first. */
export async function duePauses(em: EntityManager, limit: number) {
  const rows = await em.find(
    Subscription,
    { status: 'paused', resumeAt: { $lte: new Date() } },
    { orderBy: { resumeAt: 'asc' }, limit },
  );
  return {
    data: rows.map((s) => ({
      app_id: s.appId,
      account_id: s.accountId,
      resume_at: iso(s.resumeAt),
      restore_plan: s.restorePlanId ?? null,
      pause: s.pauseCount,
    })),
  };
}

/**
 * Asks the provider to move the subscription to another plan at its regular price. The buyer
 * approves the new price at the provider (`approve_url`); the change applies when the provider
 * reports it (notification, or sync).
 */
/**
 * What a plan change would be (the new plan, interval, currency and price, its direction, policy and prorated
 * difference), without asking the provider: its checks are the change's own (409 `no_price`, `same_plan`,
 * `change_pending`, a subscription that is not active). Also the MCP tool's spend and dry run.
 */
export async function quotePlanChange(
  ctx: Ctx,
  accountId: string,
  input: { plan: string; interval?: 'month' | 'year' },
) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  const plan = await findPlan(ctx.em, ctx.app.id, input.plan);
  const currency = (plan.pricingCard?.currency ?? s.currency).toUpperCase();
  const interval = input.interval ?? s.interval;
  const price = regularPrice(plan, interval, currency);
  // The free plan is not bought: leaving a paid plan for it is a cancellation, which the provider has no revision
  // for. Say how, rather than a bare `no_price` (issue 39; a change at the renewal is a later issue's).
  if (plan.isFree && plan.id !== s.planId)
    throw conflict(
      `Plan ${plan.id} is the free plan, which is not bought: to move account ${accountId} to it, cancel the ` +
        `subscription (POST /apps/${ctx.app.id}/namespaces/${accountId}/subscription/cancel, or the customer's ` +
        'cancel flow); the account then moves to the free plan.',
      { reason: 'free_plan' },
    );
  if (price === null)
    throw conflict(`Plan ${input.plan} has no ${interval}ly price on its pricing card`, { reason: 'no_price' });
  if (s.status !== 'active') throw conflict(`The subscription of account ${accountId} is ${s.status}, not active`);
  if (plan.id === s.planId && interval === s.interval)
    throw conflict(`Account ${accountId} is already on plan ${plan.id} (${interval}ly)`, { reason: 'same_plan' });
  if (s.pendingChange)
    throw conflict(
      `The subscription of account ${accountId} already has a change to ${s.pendingChange.plan} waiting; ` +
        'it must be approved, refused or expire first',
      { reason: 'change_pending' },
    );
  // Direction by price per month: more is an upgrade (also a switch to a dearer interval), less a downgrade.
  const direction: 'upgrade' | 'downgrade' =
    perMonth(price, interval) > perMonth(Number(s.price), s.interval) ? 'upgrade' : 'downgrade';
  const policy = planChangePolicyOf(ctx.app)[direction];
  const proration =
    policy === 'prorate_now' ? prorationFor(s, { price, interval }, new Date()) : { amount: 0, monthsLeft: 0 };
  return { s, plan, currency, interval, price, direction, policy, proration };
}

export async function changeSubscription(
  ctx: Ctx,
  accountId: string,
  input: { plan: string; interval?: 'month' | 'year'; return_url?: string; cancel_url?: string; origin?: string },
) {
  const { s, plan, currency, interval, price, direction, policy, proration } = await quotePlanChange(
    ctx,
    accountId,
    input,
  );
  const { approveUrl, pending } = await requestPlanChange(ctx, s, { plan, interval, currency, price }, input, {
    direction,
    policy,
    effective: policy === 'at_renewal' ? 'renewal' : 'now',
    ...(proration.amount > 0 ? { proration: { amount: proration.amount, currency } } : {}),
  });
  const view = await inTransaction(ctx.deps, ctx.em, async (t) => {
    await holdChangeTarget(t.em, ctx.app.id, pending.plan);
    const row = await findSubscription(t.em, ctx.app.id, accountId, true);
    row.pendingChange = pending;
    await t.em.flush();
    t.temporal(planChangeCommand(ctx.app.id, accountId, pending));
    return presentSubscription(row);
  });
  return {
    ...view,
    // The first page to send the buyer to: the prorated difference's order (which goes on to the revision), else
    // the revision.
    approve_url: pending.proration?.approveUrl ?? approveUrl,
    revision_approve_url: approveUrl,
    direction,
    policy,
    effective: pending.effective!,
    proration: pending.proration
      ? { amount: pending.proration.amount, currency: pending.proration.currency, months_left: proration.monthsLeft }
      : null,
  };
}

/**
 * Locks the plan a change moves to (`for key share`) while the change is recorded: a delete of the plan (which locks
 * it `for update` and refuses while a change waits for it, src/catalog/catalog.service.ts) either went first, and
 * this is a 409 `plan_deleted`, or waits and then sees the change. Approved, it would bill a plan that is gone.
 */
export async function holdChangeTarget(em: EntityManager, appId: string, planId: string): Promise<void> {
  const held = await sql(em, 'select 1 from plans where app_id = $1 and id = $2 for key share', [appId, planId]);
  if (!held.length)
    throw conflict(`Plan ${planId} was deleted while the change was requested`, { reason: 'plan_deleted' });
}

const perMonth = (price: number, interval: 'month' | 'year') => (interval === 'year' ? price / 12 : price);
const MONTH_MS = (365.25 / 12) * 86_400_000;

/**
 * The prorated difference of an upgrade for the rest of the current cycle: (new - old price per month) times the
 * months left until `renews_at`, rounded to cents; nothing when the subscription has no renewal date.
 */
export function prorationFor(
  s: Pick<ISubscription, 'price' | 'interval' | 'renewsAt'>,
  target: { price: number; interval: 'month' | 'year' },
  now: Date,
) {
  if (!s.renewsAt) return { amount: 0, monthsLeft: 0 };
  const monthsLeft = Math.max(0, new Date(s.renewsAt).getTime() - now.getTime()) / MONTH_MS;
  const diff = perMonth(target.price, target.interval) - perMonth(Number(s.price), s.interval);
  return {
    amount: Math.max(0, Math.round(diff * monthsLeft * 100) / 100),
    monthsLeft: Math.round(monthsLeft * 1000) / 1000,
  };
}

/**
 * The workflow that waits for the buyer's approval of a plan change at the provider (`plan-change/<app>/<account>/<chg>`),
 * started through the outbox in the transaction that records the pending change.
 */
export function planChangeCommand(appId: string, accountId: string, pending: PendingChange): TemporalCommand {
  const input: PlanChangeInput = {
    appId,
    accountId,
    changeId: pending.id!,
    sessionId: pending.sessionId ?? null,
    plan: pending.plan,
    expiresAt: pending.expiresAt!,
  };
  const what = pending.sessionId
    ? `save offer of cancel session ${pending.sessionId}`
    : `change to ${pending.plan} (${pending.price} ${pending.currency}/${pending.interval})`;
  return outboxStart(planChangeDef, planChangeWorkflowId(appId, accountId, input.changeId), input, {
    searchAttributes: { AppId: appId, AccountId: accountId, BillingStatus: 'awaiting approval' },
    summary: `Plan change: ${accountId}, ${what}, awaiting approval`,
    details:
      `Account **${accountId}** (app ${appId}) was sent to the provider to approve the ${what}. The change applies ` +
      `only when the provider reports the approval; if the buyer refuses or does not approve by ${input.expiresAt}, ` +
      'it is dropped.',
  });
}

/**
 * The provider half of a plan or price change: revises the provider subscription to the billing
 * plan of these terms (with a discounted price for `discount.cycles` renewals when given) and returns
 * the approval link and the pending change to record. Nothing changes here until the provider
 * reports the approval.
 */
export async function requestPlanChange(
  ctx: Ctx,
  s: ISubscription,
  target: {
    plan: { id: string; name: string };
    interval: 'month' | 'year';
    currency: string;
    price: number;
    discount?: { percent: number; cycles: number; price: number };
  },
  urls: { return_url?: string; cancel_url?: string; origin?: string; sessionId?: string },
  change: Pick<PendingChange, 'direction' | 'policy' | 'effective'> & {
    proration?: { amount: number; currency: string };
  } = {},
): Promise<{ approveUrl: string | null; pending: PendingChange }> {
  if (s.status !== 'active') throw conflict(`The subscription of account ${s.accountId} is ${s.status}, not active`);
  // The buyer comes back through the service (which checks the provider at once, then sends them on to the
  // app's pages), so a refusal ("Cancel and return") is known when it happens, not only at expiry. With no page
  // of the caller's or the app's, the service's hosted return page (docs/decisions.md).
  const origin = urls.origin || ctx.deps.config.PUBLIC_API_URL;
  const ownPage = urls.return_url ?? ctx.app.checkoutUrl;
  const customerReturn = ownPage ?? hostedReturnUrl(origin, ctx.app.id, 'approved');
  if (!customerReturn) throw badRequest('return_url: is required (the app has no checkout_url to return to)');
  const customerCancel =
    urls.cancel_url ?? ownPage ?? hostedReturnUrl(origin, ctx.app.id, 'cancelled') ?? customerReturn;
  const id = newId('planChange');
  const back = (outcome: 'approved' | 'refused') =>
    origin
      ? `${origin.replace(/\/$/, '')}${planChangeReturnPath(ctx.app.id, id)}?account=${encodeURIComponent(s.accountId)}&outcome=${outcome}`
      : outcome === 'approved'
        ? customerReturn
        : customerCancel;
  const returnUrl = back('approved');
  const { connection, provider } = await requireProvider(ctx);
  const d = target.discount;
  const terms = {
    interval: target.interval,
    currency: target.currency,
    price: target.price,
    ...(d ? { introPrice: d.price, introCycles: d.cycles } : {}),
  };
  const providerPlanId = await ensureRegularProviderPlan(ctx, connection, provider, target.plan, terms);
  const revision = await withProvider(() =>
    provider.reviseSubscription(s.providerSubscriptionId, {
      planId: providerPlanId,
      returnUrl,
      cancelUrl: back('refused'),
    }),
  );
  // The prorated difference: a one-time order the buyer approves first; PayPal then sends them on to approve the
  // revision. It is captured only once the provider reports the revision approved.
  const order = change.proration
    ? await withProvider(() =>
        provider.createOrder(
          {
            amount: change.proration!.amount,
            currency: change.proration!.currency,
            customId: id,
            description: `${target.plan.name}: the rest of the current billing period`,
            returnUrl: revision.approveUrl ?? returnUrl,
            cancelUrl: back('refused'),
          },
          `${id}:proration`,
        ),
      )
    : null;
  const pending: PendingChange = {
    ...(change.direction ? { direction: change.direction, policy: change.policy, effective: change.effective } : {}),
    ...(order
      ? {
          proration: {
            amount: change.proration!.amount,
            currency: change.proration!.currency,
            orderId: order.id,
            approveUrl: order.approveUrl,
          },
        }
      : {}),
    id,
    sessionId: urls.sessionId ?? null,
    returnUrl: customerReturn,
    cancelUrl: customerCancel,
    expiresAt: new Date(Date.now() + PLAN_CHANGE_TTL_MS).toISOString(),
    plan: target.plan.id,
    interval: target.interval,
    currency: target.currency,
    price: d ? d.price : target.price,
    providerPlanId,
    requestedAt: new Date().toISOString(),
    ...(d ? { discount: { percent: d.percent, cycles: d.cycles, regularPrice: target.price } } : {}),
  };
  return { approveUrl: revision.approveUrl, pending };
}

/** Where the provider sends the buyer back after a plan change's approval page (the service checks, then redirects). */
export const planChangeReturnPath = (appId: string, changeId: string) =>
  `/apps/${appId}/plan-changes/${changeId}/return`;

/**
 * Re-reads the subscription at the provider and applies what it reports: an approved plan change,
 * a renewal (`subscription.renewed`), a cancellation or expiry there (`subscription.cancelled`, free
 * plan), the next billing time and the provider's status.
 */
export async function syncSubscription(deps: Deps, appId: string, accountId: string) {
  const em = deps.orm.em.fork();
  const pre = await em.findOne(Subscription, { appId, accountId });
  if (!pre) throw notFound(`Subscription of account ${accountId}`);
  const conn = await em.findOne(PaymentConnection, { appId });
  if (!conn) throw conflict('payment provider not connected');
  const provider = providerFor(deps.config, conn);
  const remote = await withProvider(() => provider.getSubscription(pre.providerSubscriptionId));
  // An approved upgrade's prorated difference is captured once the provider reports the revision approved (the
  // capture's idempotency key makes a second sync's capture the same one).
  const pc = pre.pendingChange;
  let proration: 'captured' | 'not_approved' | null = null;
  if (pc?.proration && remote.planId === pc.providerPlanId) {
    const order = await withProvider(() => provider.getOrder(pc.proration!.orderId));
    if (order.status === 'APPROVED')
      proration =
        (await withProvider(() => provider.captureOrder(order.id, `${pc.id}:capture`))).status === 'COMPLETED'
          ? 'captured'
          : 'not_approved';
    else proration = order.status === 'COMPLETED' ? 'captured' : 'not_approved';
  }
  return inTransaction(deps, em, async (t) => {
    const s = await findSubscription(t.em, appId, accountId, true);
    const ctx = { em: t.em, deps, app: { id: appId } };
    const apply = async (change: PendingChange, planId: string) => {
      if (change.id)
        s.lastChange = {
          id: change.id,
          outcome: 'applied',
          at: new Date().toISOString(),
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
      s.providerPlanId = planId;
      s.pendingChange = null;
      const after = await changeAccount(ctx, accountId, async (_t, account) => {
        if (s.status === 'paused') s.restorePlanId = change.plan;
        else account.planId = change.plan;
        account.offerId = null;
      });
      await t.em.flush();
      t.emit(appId, 'subscription.changed', {
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
    };
    s.providerStatus = remote.status;
    s.renewsAt = remote.nextBillingTime ? new Date(remote.nextBillingTime) : s.renewsAt;
    if ((remote.status === 'CANCELLED' || remote.status === 'EXPIRED') && s.status !== 'cancelled') {
      await t.em.flush();
      return cancelLocally(t, deps, appId, accountId);
    }
    if (s.pendingChange && remote.planId === s.pendingChange.providerPlanId) {
      const change = s.pendingChange;
      if (change.effective !== 'renewal') await apply(change, remote.planId);
      else if (!change.scheduledAt) {
        // Approved at the provider, which bills the new price from the next cycle: the account keeps its plan
        // (and what it paid for) until the renewal, when the change applies.
        s.pendingChange = { ...change, scheduledAt: new Date().toISOString() };
        await t.em.flush();
        const account = await findAccount(t.em, appId, accountId);
        t.emit(appId, 'subscription.change_scheduled', {
          object: { ...(await accountDetail(t.em, account)), subscription: presentSubscription(s) },
        });
      }
    }
    const paid = remote.lastPaymentAt ? new Date(remote.lastPaymentAt) : null;
    if (paid && (!s.lastPaymentAt || paid.getTime() > new Date(s.lastPaymentAt).getTime())) {
      const renewal = s.lastPaymentAt !== null && s.lastPaymentAt !== undefined;
      s.lastPaymentAt = paid;
      if (renewal) {
        // A change scheduled for the renewal applies now (the provider billed its price).
        if (s.pendingChange?.effective === 'renewal' && s.pendingChange.scheduledAt)
          await apply(s.pendingChange, s.pendingChange.providerPlanId);
        // A cancel-flow discount lasts a number of renewals; then the regular price is billed again.
        else if (s.discount) {
          const left = s.discount.cyclesLeft - 1;
          if (left > 0) s.discount = { ...s.discount, cyclesLeft: left };
          else {
            s.price = s.discount.regularPrice;
            s.discount = null;
          }
        }
        await t.em.flush();
        const account = await findAccount(t.em, appId, accountId);
        t.emit(appId, 'subscription.renewed', { object: await accountDetail(t.em, account) });
      }
    }
    await t.em.flush();
    return presentSubscription(s);
  });
}

/** A failed payment reported by the provider; kept on the subscription for the app to act on. */
export async function recordPaymentFailure(deps: Deps, appId: string, accountId: string) {
  await sql(
    deps.orm.em.fork(),
    'update subscriptions set last_payment_failed_at = now(), updated_at = now() where app_id = $1 and account_id = $2',
    [appId, accountId],
  );
}
