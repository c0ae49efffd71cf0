// Creating a checkout: from an offer (its terms and order bumps) or a plan, the buyer's account checked, the
// provider's subscription opened, and the checkout workflow started through the outbox.
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { badRequest, conflict, notFound, type ConflictReason } from '../errors.js';
import { newId } from '../ids.js';
import { findPlan } from '../catalog/catalog.service.js';
import { Offer, type IOffer, type OfferBump, type OfferExtras } from '../offers/offers.entities.js';
import { findOffer, providerPlanKey, regularPrice } from '../offers/offers.service.js';
import { liveStatus } from '../offers/offers.present.js';
import {
  ensureRegularProviderPlan,
  hostedReturnUrl,
  requireProvider,
  withProvider,
} from '../payments/payments.service.js';
import { alreadySubscribed, liveSubscription } from '../subscriptions/subscriptions.service.js';
import { clockOffsetOf } from '../apps/clock.service.js';
import type { changeSubscription } from '../subscriptions/plan-changes.service.js';
import { askActor } from '../subscriptions/actor-client.js';
import type { Caller } from '../http/route.js';
import { outboxStart } from '../temporal/outbox.js';
import {
  CHECKOUT_TTL_MS,
  checkoutDef,
  checkoutWorkflowId,
  type CheckoutWorkflowInput,
} from '../../workflows/shared.js';
import { Checkout, type ICheckout } from './checkouts.entities.js';
import type * as S from './checkouts.schemas.js';
import { presentCheckout } from './checkouts.present.js';

import { buyerAccountId } from './checkout-completion.service.js';

const cannotBuy = (reason: ConflictReason, message: string) => conflict(message, { reason });

/**
 * Prices the selection on the server from the offer, then creates the provider subscription (and a
 * one-time order for order bumps) and the checkout, whose completion workflow starts with it.
 * 409 with a `reason` when the offer cannot be bought.
 *
 * The provider calls happen between reading the offer and recording the checkout, so the offer is read
 * again in the checkout's transaction under a share lock (an edit waits for the checkout to commit, or the
 * checkout sees the edit): a bump or price taken off in that window is refused with its reason, a price
 * changed in it with `offer_changed`, and the checkout never holds terms the offer no longer had.
 */
export async function createOfferCheckout(
  ctx: Ctx,
  offerId: string,
  input: z.output<typeof S.offerCheckoutBody> & CheckoutOrigin,
) {
  const o = await findOffer(ctx.em, ctx.app.id, offerId);
  const { terms, providerPlanId } = offerTerms(o, input);
  const change = await changeInstead(ctx, { ...input, bumps: terms.bumps });
  if (change) return change;
  await refuseOwnedBumps(ctx.em, ctx.app.id, input.account, terms.bumps);
  return startCheckout(ctx, terms, providerPlanId, input, async (em) => {
    const locked = await em.findOne(
      Offer,
      { appId: ctx.app.id, id: offerId },
      { lockMode: LockMode.PESSIMISTIC_READ, refresh: true },
    );
    if (!locked) throw cannotBuy('offer_changed', `Offer ${offerId} was deleted while the checkout was created`);
    const now = offerTerms(locked, input); // throws the reason when what was chosen is gone
    if (JSON.stringify(now) !== JSON.stringify({ terms, providerPlanId }))
      throw cannotBuy('offer_changed', `Offer ${offerId} changed while the checkout was created; load it again`);
    await refuseOwnedBumps(em, ctx.app.id, input.account, terms.bumps);
  });
}

/** The terms the offer gives the selection now, or the 409 saying why it cannot be bought. */
function offerTerms(o: IOffer, input: z.output<typeof S.offerCheckoutBody>) {
  const offerId = o.id;
  const live = liveStatus(o);
  if (o.status === 'draft') throw cannotBuy('not_published', `Offer ${offerId} is not published`);
  if (live === 'archived') throw cannotBuy('archived', `Offer ${offerId} is archived`);
  if (live === 'expired') throw cannotBuy('expired', `Offer ${offerId} has expired`);
  if (live === 'scheduled') throw cannotBuy('not_started', `Offer ${offerId} has not started`);
  if (o.kind === 'targeted' && input.account !== o.accountId)
    throw cannotBuy('targeted', `Offer ${offerId} is for another account`);
  const plan = o.plans.find((p) => p.plan === input.plan);
  if (!plan) throw cannotBuy('plan_not_offered', `Offer ${offerId} does not offer plan ${input.plan}`);
  const price = plan.prices.find(
    (p) => p.interval === input.interval && (!input.currency || p.currency === input.currency),
  );
  if (!price)
    throw cannotBuy(
      'interval_not_offered',
      `Offer ${offerId} has no ${input.interval}ly price${input.currency ? ` in ${input.currency}` : ''} for plan ${input.plan}`,
    );
  const bumps = (input.bumps ?? []).map((id) => {
    const b = o.bumps.find((x) => x.id === id);
    if (!b) throw cannotBuy('bump_not_offered', `Offer ${offerId} has no order bump ${id}`);
    return b;
  });
  const providerPlanId = o.provider.plans[providerPlanKey(plan.plan, price)];
  if (!providerPlanId)
    throw cannotBuy('not_published', `Offer ${offerId} has no provider plan for this price yet; publish it again`);
  const terms: CheckoutTerms = {
    offerId: o.id,
    planId: plan.plan,
    interval: price.interval,
    currency: price.currency,
    price: price.amount,
    listPrice: price.amount,
    cycles: price.cycles,
    extras: plan.extras,
    bumps,
  };
  return { terms, providerPlanId };
}

/** A bump whose add-on the buyer's account already owns would be paid for twice: 409 `bump_owned`. */
async function refuseOwnedBumps(em: EntityManager, appId: string, account: string | undefined, bumps: OfferBump[]) {
  if (!account || !bumps.length) return;
  const owned = await sql<{ addon_id: string }>(
    em,
    'select addon_id from account_addons where app_id = $1 and account_id = $2 and addon_id = any($3::text[])',
    [appId, account, bumps.map((b) => b.addon)],
  );
  const bump = bumps.find((b) => owned.some((r) => r.addon_id === b.addon));
  if (bump) throw cannotBuy('bump_owned', `Account ${account} already owns ${bump.name} (order bump ${bump.id})`);
}

/** Not from the body: the API's public origin (for `open_url`), and the 402 a checkout is made for. */
export interface CheckoutOrigin {
  origin?: string;
  upgrade?: { entitlement: string };
  /** Who asked (a purchase that becomes a plan change is an intent of the account's actor). */
  who?: { caller?: Caller; requestId?: string };
}

/** The approval link through the service (`GET .../checkouts/:id/open`), when the API's origin is known. */
const openUrlOf = (origin: string | undefined, appId: string, id: string) =>
  origin ? `${origin.replace(/\/$/, '')}/apps/${appId}/checkouts/${id}/open` : null;

/**
 * The buyer opened the checkout's approval link: recorded once (the funnel counts it from then on); answers where to
 * send them (the provider's approval page while the checkout waits), or null.
 */
export async function openCheckout(
  deps: Deps,
  appId: string,
  id: string,
): Promise<{ to: string } | { to: null; subscribed: boolean }> {
  const em = deps.orm.em.fork();
  const [row] = await sql<{
    approve_url: string | null;
    status: string;
    account_id: string | null;
    email: string | null;
    provider_subscription_id: string | null;
  }>(
    em,
    `update checkouts set opened_at = coalesce(opened_at, now()), updated_at = now()
      where app_id = $1 and id = $2 returning approve_url, status, account_id, email, provider_subscription_id`,
    [appId, id],
  );
  if (!row) throw notFound(`Checkout ${id}`);
  if (row.status !== 'created' || !row.approve_url) return { to: null, subscribed: false };
  // An older link (a 402's upgrade link, a page left open) for a buyer who has subscribed since: following it would
  // make a second subscription, which is then cancelled and refunded. The buyer is told instead, before paying.
  const live = await liveSubscription(em, appId, buyerAccountId({ id, accountId: row.account_id, email: row.email }));
  if (live && live.providerSubscriptionId !== row.provider_subscription_id) return { to: null, subscribed: true };
  return { to: row.approve_url };
}

interface CheckoutTerms {
  offerId: string | null;
  planId: string;
  interval: 'month' | 'year';
  currency: string;
  price: number;
  listPrice: number;
  cycles: number | null;
  extras: OfferExtras;
  bumps: OfferBump[];
}

/**
 * Creates the provider subscription (and bump order) and the checkout, with its workflow start. `recheck` runs
 * in the checkout's transaction before it is recorded, and refuses terms that no longer hold.
 */
async function startCheckout(
  ctx: Ctx,
  terms: CheckoutTerms,
  providerPlanId: string,
  input: { account?: string; email?: string; ref?: string; return_url?: string; cancel_url?: string } & CheckoutOrigin,
  recheck?: (em: EntityManager) => Promise<void>,
) {
  // The caller's page, else the app's checkout_url, else the service's hosted return page
  // (docs/decisions/0365-where-a-buyer-lands-when-nobody-named-a-page.md).
  const origin = input.origin || ctx.deps.config.PUBLIC_API_URL;
  const ownPage = input.return_url ?? ctx.app.checkoutUrl;
  const returnUrl = ownPage ?? hostedReturnUrl(origin, ctx.app.id, 'approved');
  if (!returnUrl) throw badRequest('return_url: is required (the app has no checkout_url to return to)');
  await refuseSubscribed(ctx.em, ctx.app.id, input);
  const { provider } = await requireProvider(ctx);
  const id = newId('checkout');
  const cancelUrl = input.cancel_url ?? ownPage ?? hostedReturnUrl(origin, ctx.app.id, 'cancelled') ?? returnUrl;
  const sub = await withProvider(() =>
    provider.createSubscription(
      { planId: providerPlanId, customId: id, returnUrl, cancelUrl, email: input.email },
      `${id}:subscription`,
    ),
  );
  // An app whose test clock was moved: the provider's stand-in bills this subscription on the app's clock too.
  const offset = await clockOffsetOf(ctx.em, ctx.app.id);
  if (offset > 0) await withProvider(() => provider.setTestClock([sub.id], new Date(Date.now() + offset), 'align'));
  let order: { id: string; approveUrl: string | null } | null = null;
  if (terms.bumps.length) {
    const total = terms.bumps.reduce((sum, b) => sum + b.price, 0);
    order = await withProvider(() =>
      provider.createOrder(
        {
          amount: total,
          currency: terms.bumps[0].currency,
          customId: id,
          description: terms.bumps.map((b) => b.name).join(', '),
          returnUrl,
          cancelUrl,
        },
        `${id}:bumps`,
      ),
    );
  }
  return inTransaction(ctx.deps, ctx.em, async (t) => {
    await recheck?.(t.em);
    // The plan (and the bumped add-ons) stay until the commit: a delete racing this checkout (which locks the row
    // `for update`, src/catalog/catalog.service.ts) either went first, and this is refused, or waits and then sees
    // the open checkout (409). A buyer never pays for a plan or add-on that is gone.
    await holdSold(t.em, ctx.app.id, terms);
    const c = t.em.create(Checkout, {
      id,
      appId: ctx.app.id,
      ...terms,
      accountId: input.account ?? null,
      email: input.email ?? null,
      ref: input.ref ?? null,
      returnUrl,
      cancelUrl,
      status: 'created',
      providerSubscriptionId: sub.id,
      providerOrderId: order?.id ?? null,
      approveUrl: sub.approveUrl,
      bumpApproveUrl: order?.approveUrl ?? null,
      source: input.upgrade ? 'upgrade_link' : 'checkout',
      upgradeEntitlementId: input.upgrade?.entitlement ?? null,
      openUrl: openUrlOf(input.origin || ctx.deps.config.PUBLIC_API_URL, ctx.app.id, id),
      openedAt: null,
      bumpsPaid: false,
      completedAt: null,
      // On the app's clock: a test clock moved forward expires it when the app's time passes this.
      expiresAt: new Date(Date.now() + offset + CHECKOUT_TTL_MS),
    });
    t.temporal(checkoutWorkflowStart(ctx.deps, ctx.app.id, c, offset));
    return presentCheckout(c);
  });
}

/** Locks what a checkout sells (`for key share`) until its transaction ends; 409 when it is gone meanwhile. */
async function holdSold(em: EntityManager, appId: string, terms: Pick<CheckoutTerms, 'planId' | 'bumps'>) {
  const plan = await sql(em, 'select 1 from plans where app_id = $1 and id = $2 for key share', [appId, terms.planId]);
  if (!plan.length) throw cannotBuy('plan_deleted', `Plan ${terms.planId} was deleted while the checkout was created`);
  if (!terms.bumps.length) return;
  const held = await sql<{ id: string }>(
    em,
    'select id from addons where app_id = $1 and id = any($2::text[]) order by id for key share',
    [appId, terms.bumps.map((b) => b.addon)],
  );
  const gone = terms.bumps.find((b) => !held.some((r) => r.id === b.addon));
  if (gone) throw cannotBuy('bump_not_offered', `The add-on of order bump ${gone.id} (${gone.addon}) was deleted`);
}

/**
 * `if_subscribed: "change"` from a buyer with a live subscription: the purchase becomes a change of that
 * subscription to the chosen plan and interval (the change route's answer, at the plan's regular price, with the
 * app's proration policy), so the buyer is never billed by a second subscription. Order bumps cannot ride on a
 * change (they are one-time orders of a checkout): 409 `bumps_with_change`. Null when the checkout goes ahead.
 */
async function changeInstead(
  ctx: Ctx,
  input: CheckoutOrigin & {
    plan: string;
    interval: 'month' | 'year';
    account?: string;
    email?: string;
    return_url?: string;
    cancel_url?: string;
    if_subscribed?: 'refuse' | 'change';
    bumps: OfferBump[];
  },
) {
  const buyer = input.account ?? input.email;
  if (input.if_subscribed !== 'change' || !buyer) return null;
  const live = await liveSubscription(ctx.em, ctx.app.id, buyer);
  if (!live) return null;
  if (input.bumps.length)
    throw cannotBuy(
      'bumps_with_change',
      `Account ${buyer} already has a subscription, so this becomes a plan change, which cannot include order bumps; ` +
        'leave out `bumps`',
    );
  const returnUrl = input.return_url ?? ctx.app.checkoutUrl ?? undefined;
  const change = await askActor(
    ctx,
    buyer,
    {
      kind: 'change',
      plan: input.plan,
      interval: input.interval,
      ...(returnUrl ? { returnUrl } : {}),
      ...(input.cancel_url ? { cancelUrl: input.cancel_url } : {}),
      ...(input.origin ? { origin: input.origin } : {}),
    },
    input.who ?? {},
  );
  return { object: 'plan_change' as const, ...(change as Awaited<ReturnType<typeof changeSubscription>>) };
}

/**
 * A second purchase by an account with a live subscription is refused (409 naming it and the change route) before
 * anything is created at the provider. Two checkouts started at once both pass here; their completions settle it
 * (one subscription is recorded, the other is cancelled at the provider: `checkCheckout`).
 */
async function refuseSubscribed(em: EntityManager, appId: string, input: { account?: string; email?: string }) {
  const buyer = input.account ?? input.email;
  if (!buyer) return;
  const live = await liveSubscription(em, appId, buyer);
  if (live) throw alreadySubscribed(appId, live);
}

/**
 * A checkout for a plan at its regular price (monthly when it has a monthly price, unless `interval` says otherwise).
 */
export async function createPlanCheckout(
  ctx: Ctx,
  planId: string,
  input: z.output<typeof S.planCheckoutBody> & CheckoutOrigin,
) {
  const plan = await findPlan(ctx.em, ctx.app.id, planId);
  const currency = (plan.pricingCard?.currency ?? 'USD').toUpperCase();
  const interval = input.interval ?? (regularPrice(plan, 'month', currency) !== null ? 'month' : 'year');
  const price = regularPrice(plan, interval, currency);
  if (price === null) throw cannotBuy('no_price', `Plan ${planId} has no ${interval}ly price on its pricing card`);
  const change = await changeInstead(ctx, { ...input, plan: planId, interval, bumps: [] });
  if (change) return change;
  const { connection, provider } = await requireProvider(ctx);
  const providerPlanId = await ensureRegularProviderPlan(ctx, connection, provider, plan, {
    interval,
    currency,
    price,
  });
  return startCheckout(
    ctx,
    {
      offerId: null,
      planId,
      interval,
      currency,
      price,
      listPrice: price,
      cycles: null,
      extras: { entitlements: [], addons: [], cycles: null },
      bumps: [],
    },
    providerPlanId,
    input,
  );
}

export function checkoutWorkflowStart(
  deps: Pick<Deps, 'config'>,
  appId: string,
  c: Pick<ICheckout, 'id' | 'accountId' | 'offerId' | 'planId' | 'createdAt' | 'expiresAt'>,
  /** The app's clock offset now (a test clock); the workflow hears of later moves by a signal. */
  offsetMs: number,
) {
  const input: CheckoutWorkflowInput = {
    appId,
    checkoutId: c.id,
    // Recorded with the checkout (app time), so a run restarted by the reconciler keeps the same deadline; older
    // checkouts: 24 hours from their creation.
    expiresAt: (c.expiresAt
      ? new Date(c.expiresAt)
      : new Date((c.createdAt ?? new Date()).getTime() + CHECKOUT_TTL_MS)
    ).toISOString(),
    ...(offsetMs ? { offsetMs } : {}),
    ...(deps.config.ACTIVITY_RETRY_MAX_MS ? { retryMaxIntervalMs: deps.config.ACTIVITY_RETRY_MAX_MS } : {}),
  };
  return outboxStart(checkoutDef, checkoutWorkflowId(c.id), input, {
    searchAttributes: {
      AppId: appId,
      CheckoutId: c.id,
      ...(c.accountId ? { AccountId: c.accountId } : {}),
      ...(c.offerId ? { OfferId: c.offerId } : {}),
    },
    summary: `Checkout ${c.id}: ${c.planId}${c.offerId ? ` via offer ${c.offerId}` : ''}${c.accountId ? ` for ${c.accountId}` : ''}`,
    details: 'Waits for the buyer to approve at the payment provider, then applies the purchase exactly once.',
  });
}
