// Plan changes: the quote (what a change would be, asking nobody), the request (a revision the buyer approves at the
// provider, with an upgrade's prorated difference as an order), the withdrawal of a waiting or scheduled change, and
// dropping one the buyer refused or let expire. The account actor runs the changes (src/subscriptions/intents.service.ts);
// the quote is a plain read.
import { planChangePolicyOf } from '../apps/apps.present.js';
import { appNow } from '../apps/clock.js';
import { findPlan } from '../catalog/catalog.service.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { badRequest, conflict } from '../errors.js';
import { newId } from '../ids.js';
import {
  ensureRegularProviderPlan,
  hostedReturnUrl,
  requireProvider,
  withProvider,
} from '../payments/payments.service.js';
import { regularPrice } from '../offers/offers.service.js';
import { PLAN_CHANGE_TTL_MS } from '../../workflows/shared.js';
import { refusalOf, type BillingSnapshot, type Refusal, type RefusalReason } from '../../workflows/billing-rules.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../errors.js';
import { type ISubscription, type PendingChange } from './subscriptions.entities.js';
import { presentSubscription } from './subscriptions.present.js';
import { findSubscription } from './subscriptions.service.js';
import { subscriptionSnapshot } from './snapshot.service.js';
import { cancelAtPeriodEnd, dropChange, withClock, appNowOf } from './lifecycle.service.js';
import { billingScope } from '../timeline/scope.js';
import { recordTimeline } from '../timeline/timeline.service.js';

/** A refusal of the actor's rules as the answer the route gives (409 with reason, pending and next steps). */
export function refusalError(r: Refusal): AppError {
  const { status, message, reason, ...extra } = r;
  if (status === 409 && isConflictReason(reason)) return conflict(message, { ...extra, reason });
  return new AppError(status, message, { reason, ...extra }, status === 503 ? { 'Retry-After': '5' } : undefined);
}
/** The refusal reasons that are not 409s (a missing subscription is a 404, a late request a 503). */
const NOT_CONFLICTS = ['not_subscribed', 'expired_request', 'not_active'] as const;
type NotConflict = (typeof NOT_CONFLICTS)[number];
const isConflictReason = (r: RefusalReason): r is Exclude<RefusalReason, NotConflict> =>
  !(NOT_CONFLICTS as readonly string[]).includes(r);

/** The actor's state checks, on the row as it is: the quote answers what the change would. */
function checkState(s: ISubscription, intent: { plan: string; replace?: boolean }) {
  const snap: BillingSnapshot = {
    appId: s.appId,
    accountId: s.accountId,
    account: null,
    subscription: subscriptionSnapshot(s, s.planId),
    clock: { offsetMs: 0, live: false },
    readAt: '',
  };
  const r = refusalOf(snap, {
    kind: 'change',
    plan: intent.plan,
    ...(intent.replace ? { replace: true } : {}),
    by: { kind: 'system', id: null, name: null },
    deadline: '',
    requestId: '',
  });
  if (r) throw refusalError(r);
}

const perMonth = (price: number, interval: 'month' | 'year') => (interval === 'year' ? price / 12 : price);
const MONTH_MS = (365.25 / 12) * 86_400_000;
/** How old a quote's `proration_date` may be when the change is asked with it. */
export const PRORATION_DATE_MAX_AGE_MS = 30 * 60_000;

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

export interface ChangeInput {
  plan: string;
  interval?: 'month' | 'year';
  replace?: boolean;
  /** A quote's `proration_date` (ISO): the prorated amount is the quote's. */
  prorationDate?: string;
}

/** When the prorated amount is computed for: the quote's date when given (recent, not ahead of the app's clock). */
function prorationMoment(ctx: Ctx, prorationDate: string | undefined): Date {
  const now = appNow(ctx.app);
  if (!prorationDate) return now;
  const at = new Date(prorationDate);
  const age = now.getTime() - at.getTime();
  if (Number.isNaN(at.getTime()) || age < -5_000 || age > PRORATION_DATE_MAX_AGE_MS)
    throw badRequest(
      `proration_date: must be a quote's proration_date from the last ${PRORATION_DATE_MAX_AGE_MS / 60_000} minutes`,
    );
  return at;
}

/**
 * What a plan change would be (the new plan, interval, currency and price, its direction and policy, the prorated
 * difference, when it applies), without asking the provider: its checks are the change's own (409 `no_price`,
 * `same_plan`, and the actor's state refusals). A free plan is a cancellation at the renewal, then that plan.
 */
export async function quotePlanChange(ctx: Ctx, accountId: string, input: ChangeInput) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  const plan = await findPlan(ctx.em, ctx.app.id, input.plan);
  checkState(s, input);
  const at = prorationMoment(ctx, input.prorationDate);
  const interval = input.interval ?? s.interval;
  const current = {
    plan: s.planId,
    interval: s.interval,
    price: Number(s.price),
    currency: s.currency,
    renews_at: s.renewsAt ? new Date(s.renewsAt).toISOString() : null,
  };
  const replaces =
    input.replace && s.scheduledChange ? { id: s.scheduledChange.id ?? null, plan: s.scheduledChange.plan } : null;
  if (plan.isFree) {
    if (plan.id === s.planId)
      throw conflict(`Account ${accountId} is already on plan ${plan.id}`, { reason: 'same_plan' });
    return {
      s,
      plan,
      currency: s.currency,
      interval,
      price: 0,
      direction: 'downgrade' as const,
      policy: 'at_renewal' as const,
      effective: 'renewal' as const,
      effectiveAt: current.renews_at,
      proration: { amount: 0, monthsLeft: 0 },
      prorationDate: at,
      current,
      cancelsAtRenewal: true,
      replaces,
    };
  }
  const currency = (plan.pricingCard?.currency ?? s.currency).toUpperCase();
  const price = regularPrice(plan, interval, currency);
  if (price === null)
    throw conflict(`Plan ${input.plan} has no ${interval}ly price on its pricing card`, { reason: 'no_price' });
  if (plan.id === s.planId && interval === s.interval)
    throw conflict(`Account ${accountId} is already on plan ${plan.id} (${interval}ly)`, { reason: 'same_plan' });
  // Direction by price per month: more is an upgrade (also a switch to a dearer interval), less a downgrade.
  const direction: 'upgrade' | 'downgrade' =
    perMonth(price, interval) > perMonth(Number(s.price), s.interval) ? 'upgrade' : 'downgrade';
  const policy = planChangePolicyOf(ctx.app)[direction];
  const proration = policy === 'prorate_now' ? prorationFor(s, { price, interval }, at) : { amount: 0, monthsLeft: 0 };
  const effective: 'now' | 'renewal' = policy === 'at_renewal' ? 'renewal' : 'now';
  return {
    s,
    plan,
    currency,
    interval,
    price,
    direction,
    policy,
    effective,
    effectiveAt: effective === 'renewal' ? current.renews_at : null,
    proration,
    prorationDate: at,
    current,
    cancelsAtRenewal: false,
    replaces,
  };
}

/** The quote as the route answers it. */
export async function presentQuote(ctx: Ctx, accountId: string, input: ChangeInput) {
  const q = await quotePlanChange(ctx, accountId, input);
  return {
    plan: { id: q.plan.id, name: q.plan.name },
    interval: q.interval,
    currency: q.currency,
    price: q.price,
    amount_due_now: q.proration.amount,
    direction: q.direction,
    policy: q.policy,
    effective: q.effective,
    effective_at: q.effectiveAt,
    proration:
      q.proration.amount > 0
        ? { amount: q.proration.amount, currency: q.currency, months_left: q.proration.monthsLeft }
        : null,
    proration_date: q.prorationDate.toISOString(),
    current: q.current,
    cancels_at_renewal: q.cancelsAtRenewal,
    replaces: q.replaces,
  };
}

/**
 * Asks the provider to move the subscription to another plan at its regular price (the actor's `change` intent):
 * the buyer approves at the provider (`approve_url`), and the change applies when the provider reports it. A free
 * plan is a cancellation at the renewal instead (nothing for the buyer to approve).
 */
export async function changeSubscription(
  ctx: Ctx,
  accountId: string,
  input: ChangeInput & { return_url?: string; cancel_url?: string; origin?: string },
) {
  const q = await quotePlanChange(ctx, accountId, input);
  if (q.cancelsAtRenewal) {
    const view = await cancelAtPeriodEnd(ctx, accountId, `Moving to the free plan ${q.plan.id}`);
    return {
      ...view,
      approve_url: null,
      revision_approve_url: null,
      direction: 'downgrade' as const,
      policy: 'at_renewal' as const,
      effective: 'renewal' as const,
      proration: null,
      effective_at: view.cancel_at,
    };
  }
  const { approveUrl, pending } = await requestPlanChange(
    ctx,
    q.s,
    { plan: q.plan, interval: q.interval, currency: q.currency, price: q.price },
    input,
    {
      kind: 'change',
      direction: q.direction,
      policy: q.policy,
      effective: q.effective,
      replaces: q.replaces?.id ?? null,
      ...(q.proration.amount > 0 ? { proration: { amount: q.proration.amount, currency: q.currency } } : {}),
    },
  );
  const view = await recordPending(ctx, accountId, pending);
  return {
    ...view,
    // The first page to send the buyer to: the prorated difference's order (which goes on to the revision), else
    // the revision.
    approve_url: pending.proration?.approveUrl ?? approveUrl,
    revision_approve_url: approveUrl,
    direction: q.direction,
    policy: q.policy,
    effective: q.effective,
    proration: pending.proration
      ? { amount: pending.proration.amount, currency: pending.proration.currency, months_left: q.proration.monthsLeft }
      : null,
    effective_at: q.effectiveAt,
  };
}

/** Records a change now waiting for the buyer's approval (the plan it moves to is held against deletion). */
export async function recordPending(ctx: Ctx, accountId: string, pending: PendingChange) {
  return inTransaction(ctx.deps, ctx.deps.orm.em.fork(), async (t) => {
    await holdChangeTarget(t.em, ctx.app.id, pending.plan);
    const row = await findSubscription(t.em, ctx.app.id, accountId, true);
    if (row.pendingChange)
      throw conflict(`The subscription of account ${accountId} already has a change waiting`, {
        reason: 'change_pending',
      });
    row.pendingChange = pending;
    await t.em.flush();
    await notePendingChange(t, ctx.app.id, accountId, pending);
    return presentSubscription(row);
  });
}

/**
 * The timeline's line for a change now waiting for the buyer, written in the transaction that records it: no event
 * says so until the provider reports the approval, and this line is the intent's outcome (with its request).
 */
export async function notePendingChange(t: Tx, appId: string, accountId: string, pending: PendingChange) {
  const what =
    pending.kind === 'withdrawal'
      ? 'undoing the scheduled change'
      : `${pending.kind === 'change' || !pending.kind ? 'change' : pending.kind} to ${pending.planName ?? pending.plan} ` +
        `(${pending.price} ${pending.currency}/${pending.interval})`;
  await recordTimeline(t.em, {
    appId,
    accountId,
    kind: 'outcome',
    type: 'change_requested',
    summary:
      `Waiting for the buyer's approval at the provider until ` +
      `${pending.expiresAt ? `${pending.expiresAt.slice(0, 16).replace('T', ' ')} UTC` : '?'}: ${what} (${pending.id})`,
    data: {
      change_id: pending.id ?? null,
      ...(pending.requestId ? { request_id: pending.requestId } : {}),
    },
  });
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

/** Where the provider sends the buyer back after a plan change's approval page (the service checks, then redirects). */
export const planChangeReturnPath = (appId: string, changeId: string) =>
  `/apps/${appId}/plan-changes/${changeId}/return`;

/**
 * The provider half of a plan or price change: revises the provider subscription to the billing plan of these terms
 * (with a discounted price for `discount.cycles` renewals when given) and returns the approval link and the pending
 * change to record. Nothing changes here until the provider reports the approval.
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
    /** The provider plan to revise to when already known (a withdrawal goes back to the current one). */
    providerPlanId?: string;
  },
  urls: { return_url?: string; cancel_url?: string; origin?: string; sessionId?: string },
  change: Pick<PendingChange, 'direction' | 'policy' | 'effective' | 'kind' | 'replaces'> & {
    proration?: { amount: number; currency: string };
  } = {},
): Promise<{ approveUrl: string | null; pending: PendingChange }> {
  if (s.status !== 'active') throw conflict(`The subscription of account ${s.accountId} is ${s.status}, not active`);
  // The buyer comes back through the service (which checks the provider at once, then sends them on to the
  // app's pages), so a refusal ("Cancel and return") is known when it happens, not only at expiry. With no page
  // of the caller's or the app's, the service's hosted return page (docs/decisions/0365-where-a-buyer-lands-when-nobody-named-a-page.md).
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
  const providerPlanId =
    target.providerPlanId ?? (await ensureRegularProviderPlan(ctx, connection, provider, target.plan, terms));
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
  const now = appNow(ctx.app);
  const pending: PendingChange = {
    kind: change.kind ?? 'change',
    planName: target.plan.name,
    replaces: change.replaces ?? null,
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
    expiresAt: new Date(now.getTime() + PLAN_CHANGE_TTL_MS).toISOString(),
    plan: target.plan.id,
    interval: target.interval,
    currency: target.currency,
    price: d ? d.price : target.price,
    providerPlanId,
    requestedAt: now.toISOString(),
    ...(d ? { discount: { percent: d.percent, cycles: d.cycles, regularPrice: target.price } } : {}),
    approveUrl: revision.approveUrl,
    requestId: billingScope()?.requestId ?? null,
  };
  return { approveUrl: revision.approveUrl, pending };
}

/**
 * Withdraws a change (the actor's `withdraw_change` intent). One waiting for the buyer is dropped now (the provider's
 * revision is never approved). One already approved for the renewal needs the provider moved back to the current
 * plan, which the buyer approves too: until they do, the scheduled change stands.
 */
export async function withdrawChange(
  ctx: Ctx,
  accountId: string,
  urls: { return_url?: string; cancel_url?: string; origin?: string },
) {
  const s = await findSubscription(ctx.em, ctx.app.id, accountId);
  if (s.pendingChange) {
    const view = await inTransaction(ctx.deps, ctx.deps.orm.em.fork(), async (t) => {
      await withClock(t, ctx.app.id);
      const row = await findSubscription(t.em, ctx.app.id, accountId, true);
      if (row.pendingChange) await dropChange(t, row, row.pendingChange, 'withdrawn');
      return presentSubscription(row);
    });
    return { ...view, approve_url: null };
  }
  if (!s.scheduledChange)
    throw conflict(`The subscription of account ${accountId} has no change to withdraw`, { reason: 'no_change' });
  const plan = await findPlan(ctx.em, ctx.app.id, s.planId);
  const { approveUrl, pending } = await requestPlanChange(
    ctx,
    s,
    {
      plan,
      interval: s.interval,
      currency: s.currency,
      price: Number(s.price),
      ...(s.providerPlanId ? { providerPlanId: s.providerPlanId } : {}),
    },
    urls,
    { kind: 'withdrawal', effective: 'now', replaces: s.scheduledChange.id ?? null },
  );
  const view = await recordPending(ctx, accountId, pending);
  return { ...view, approve_url: approveUrl };
}

/**
 * Drops the waiting change `changeId` the buyer refused or did not approve in time, unless the provider reports it
 * approved (the caller syncs first): the subscription stops waiting on it, a save it carried goes back to `open`
 * (its offer step, where the customer can accept again, decline, or go on to cancel), and
 * `subscription.change_dropped` says so.
 */
export async function dropPendingChange(
  deps: Deps,
  appId: string,
  accountId: string,
  changeId: string,
  why: 'refused' | 'expired',
) {
  return inTransaction(deps, deps.orm.em.fork(), async (t) => {
    await withClock(t, appId);
    const s = await findSubscription(t.em, appId, accountId, true);
    if (s.pendingChange?.id !== changeId) return false;
    const expiresAt = s.pendingChange.expiresAt ? Date.parse(s.pendingChange.expiresAt) : 0;
    if (why === 'expired' && expiresAt > appNowOf(t).getTime()) return false;
    await dropChange(t, s, s.pendingChange, why);
    return true;
  });
}
