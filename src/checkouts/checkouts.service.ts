import { WorkflowNotFoundError } from '@temporalio/client';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { accountDetail, changeAccount, createAccount, grantAddon } from '../accounts/accounts.service.js';
import { Account } from '../accounts/accounts.entities.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { badRequest, conflict, notFound, type ConflictReason } from '../errors.js';
import { newestFirstPage } from '../http/pagination.js';
import { newId } from '../ids.js';
import { findPlan } from '../catalog/catalog.service.js';
import { Offer, type IOffer, type OfferBump, type OfferExtras } from '../offers/offers.entities.js';
import { findOffer, providerPlanKey, regularPrice } from '../offers/offers.service.js';
import { liveStatus } from '../offers/offers.present.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import {
  asHttpError,
  ensureRegularProviderPlan,
  hostedReturnUrl,
  providerFor,
  requireProvider,
  withProvider,
} from '../payments/payments.service.js';
import { ProviderError, type ProviderSubscription } from '../payments/provider.js';
import {
  alreadySubscribed,
  LiveSubscriptionExists,
  liveSubscription,
  recordSubscription,
} from '../subscriptions/subscriptions.service.js';
import { cancelAtProvider } from '../subscriptions/lifecycle.service.js';
import { clockOffsetOf } from '../apps/clock.service.js';
import type { changeSubscription } from '../subscriptions/plan-changes.service.js';
import { askActor } from '../subscriptions/actor-client.js';
import type { Caller } from '../http/route.js';
import { boundedCall, REQUEST_TEMPORAL_TIMEOUT_MS } from '../temporal/client.js';
import { outboxStart } from '../temporal/outbox.js';
import {
  CHECKOUT_TTL_MS,
  checkoutDef,
  checkoutWorkflowId,
  type CheckoutWorkflowInput,
} from '../../workflows/shared.js';
import { Checkout, type CheckoutRefund, type ICheckout } from './checkouts.entities.js';
import type * as S from './checkouts.schemas.js';
import { presentCheckout } from './checkouts.present.js';

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

export async function findCheckout(em: EntityManager, appId: string, id: string) {
  const c = await em.findOne(Checkout, { appId, id });
  if (!c) throw notFound(`Checkout ${id}`);
  return c;
}

export async function getCheckout(ctx: Ctx, id: string) {
  return presentCheckout(await findCheckout(ctx.em, ctx.app.id, id));
}

/** The app's checkouts, newest first, a page at a time (keyset on `created_at`, then the id), by offer and status. */
export async function listCheckouts(ctx: Ctx, q: z.output<typeof S.listQuery>) {
  const filters = { app_id: ctx.app.id, offer_id: q.offer, status: q.status };
  const page = await newestFirstPage<Record<string, unknown> & { id: string }>(ctx.em, 'checkouts', '*', filters, q);
  return { data: page.rows.map((row) => presentCheckout(ctx.em.map(Checkout, row))), next_cursor: page.next_cursor };
}

/**
 * Asks the checkout's workflow to check with the provider now and answers the checkout: `created`
 * while the provider is still activating, `completed` once applied (exactly once, however often it
 * is called and whatever notification came first).
 */
export async function completeCheckout(ctx: Ctx, id: string) {
  const c = await findCheckout(ctx.em, ctx.app.id, id);
  if (c.status !== 'created') return presentCheckout(c);
  const wf = ctx.deps.temporal.client.workflow;
  const ask = () =>
    boundedCall(ctx.deps.temporal.connection, COMPLETE_WAIT_MS, () =>
      wf.getHandle(checkoutWorkflowId(id)).executeUpdate(checkoutDef.updates.checkNow),
    );
  // The workflow may have just finished (applied, cancelled or expired the checkout) as the update
  // arrived: then there is nothing to check and nothing to warn about.
  const settled = async () => {
    const now = await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id);
    return now.status === 'created' ? null : now;
  };
  let failure: unknown;
  try {
    await ask();
    return presentCheckout(await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id));
  } catch (err) {
    failure = err;
  }
  const done = await settled();
  if (done) return presentCheckout(done);
  if (failure instanceof WorkflowNotFoundError) {
    // Its start still waits in the outbox (it runs after the answer that created the checkout): start
    // it now with the same command (the outbox row then finds it there), and ask it.
    try {
      await ctx.deps.outbox.carryOut(
        checkoutWorkflowStart(ctx.deps, ctx.app.id, c, await clockOffsetOf(ctx.em, ctx.app.id)),
      );
      await ask();
      return presentCheckout(await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id));
    } catch (err) {
      failure = err;
    }
    const now = await settled();
    if (now) return presentCheckout(now);
  }
  // No answer from the workflow (no worker, Temporal unreachable...): check here, with the same
  // once-only apply; the workflow finds the checkout completed when it runs.
  ctx.deps.logger.warn(
    { err: failure, checkout: id },
    'checkout workflow did not answer; checking with the provider directly',
  );
  await checkCheckout(ctx.deps, { appId: ctx.app.id, checkoutId: id }).catch((e: unknown) => {
    throw asHttpError(e);
  });
  return presentCheckout(await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id));
}

/**
 * Ends a checkout whose buyer has not paid: what the 24-hour expiry does, now (Stripe's "expire a Checkout Session"),
 * so that, say, the plan it sells can be deleted. The provider is asked first, with the same once-only apply as
 * `complete`: a checkout its buyer already approved is completed, not expired (409 naming its status). Then the row
 * moves from `created` to `expired` in one compare-and-set, so a completion racing it wins or loses whole, and the
 * checkout's workflow is nudged to end (it ends at its next check anyway: it finds the row no longer waiting).
 * Expiring an expired checkout answers it again.
 */
export async function expireCheckoutNow(ctx: Ctx, id: string) {
  const c = await findCheckout(ctx.em, ctx.app.id, id);
  if (c.status === 'created') {
    const seen = await checkCheckout(ctx.deps, { appId: ctx.app.id, checkoutId: id }).catch((e: unknown) => {
      throw asHttpError(e);
    });
    // Still waiting here, but approved at the provider (PayPal activates an approved subscription a moment later):
    // the buyer has paid or is about to, so it is not expired. Only a subscription the buyer has not approved yet
    // (or none at all) is.
    if (seen.status === 'created' && c.providerSubscriptionId && seen.providerStatus !== 'APPROVAL_PENDING')
      throw conflict(
        `Checkout ${id} cannot be expired: the provider reports its subscription ${seen.providerStatus}; it ` +
          'completes once the provider activates it',
        { reason: 'approved', provider_status: seen.providerStatus },
      );
    await expireCheckout(ctx.deps, id);
    await boundedCall(ctx.deps.temporal.connection, REQUEST_TEMPORAL_TIMEOUT_MS, () =>
      ctx.deps.temporal.client.workflow.getHandle(checkoutWorkflowId(id)).signal(checkoutDef.signals.providerNotified),
    ).catch(() => undefined);
  }
  const now = await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id);
  if (now.status !== 'expired')
    throw conflict(`Checkout ${id} is ${now.status}; only a checkout waiting for its buyer can be expired`, {
      reason: now.status,
    });
  return presentCheckout(now);
}

/** How long `complete` waits for the checkout workflow's answer before checking by itself. */
const COMPLETE_WAIT_MS = 8_000;

// ---- run by the checkout workflow's activities --------------------------------------------------------

/** Checks the provider and applies the purchase when the subscription is active. */
export async function checkCheckout(
  deps: Deps,
  input: CheckoutWorkflowInput,
): Promise<{ status: ICheckout['status']; providerStatus: string | null }> {
  const em = deps.orm.em.fork();
  const c = await em.findOne(Checkout, { id: input.checkoutId });
  if (!c) return { status: 'cancelled', providerStatus: null };
  if (c.status !== 'created') return { status: c.status, providerStatus: null };
  const conn = await em.findOne(PaymentConnection, { appId: c.appId });
  if (!conn || !c.providerSubscriptionId) return { status: 'created', providerStatus: 'not connected' };
  const provider = providerFor(deps.config, conn);
  const sub = await provider.getSubscription(c.providerSubscriptionId);
  if (sub.status === 'ACTIVE') {
    // The account got a live subscription since this checkout was created (another tab, a concurrent checkout):
    // this one is a duplicate; it is cancelled at the provider before anything is captured or applied.
    const live = await liveSubscription(em, c.appId, buyerAccountId(c));
    if (live && live.providerSubscriptionId !== c.providerSubscriptionId)
      return supersede(deps, provider, c, live.providerSubscriptionId);
    let bumpsPaid = false;
    let paid = c.bumps;
    if (c.providerOrderId) {
      const order = await provider.getOrder(c.providerOrderId);
      // Another checkout (another tab, an older page) may have granted some of the bumped add-ons since this
      // one was created: only the others are charged. An approved order for add-ons the account now owns
      // entirely is left uncaptured; one it owns in part has its amount lowered to the rest before capture.
      paid = await bumpsStillDue(em, c);
      if (order.status === 'APPROVED' && paid.length > 0) {
        if (paid.length < c.bumps.length)
          await provider.updateOrderAmount(order.id, {
            amount: paid.reduce((sum, b) => sum + b.price, 0),
            currency: paid[0].currency,
            description: paid.map((b) => b.name).join(', '),
          });
        bumpsPaid = (await provider.captureOrder(order.id, `${c.id}:capture`)).status === 'COMPLETED';
      } else bumpsPaid = order.status === 'COMPLETED';
    }
    try {
      await applyCheckout(deps, c.id, bumpsPaid, sub, paid);
    } catch (err) {
      // A concurrent completion for the same account recorded its subscription first (decided in the database).
      if (!(err instanceof LiveSubscriptionExists)) throw err;
      return supersede(deps, provider, c, err.providerSubscriptionId);
    }
    return { status: 'completed', providerStatus: sub.status };
  }
  if (sub.status === 'CANCELLED' || sub.status === 'EXPIRED') {
    await sql(
      em,
      `update checkouts set status = 'cancelled', cancel_reason = coalesce(cancel_reason, $2), updated_at = now()
        where id = $1 and status = 'created'`,
      [c.id, `The provider reports the subscription ${sub.status}`],
    );
    return { status: 'cancelled', providerStatus: sub.status };
  }
  return { status: 'created', providerStatus: sub.status };
}

/**
 * A checkout approved for an account that has another live subscription: its provider subscription is cancelled at
 * the provider first, and only then is the checkout marked cancelled, so a crash in between leaves it `created` and
 * the next check (the workflow's, or the reconciler's restart of it) cancels again (a no-op once cancelled) and marks
 * it. Order bumps already captured for it (a race with the capture) are granted: the buyer paid for them.
 */
async function supersede(
  deps: Deps,
  provider: ReturnType<typeof providerFor>,
  c: ICheckout,
  liveId: string,
): Promise<{ status: ICheckout['status']; providerStatus: string | null }> {
  const account = buyerAccountId(c);
  const reason = `Account ${account} already has the live subscription ${liveId}: this duplicate was cancelled at the provider`;
  await cancelAtProvider(provider, c.providerSubscriptionId!, `Duplicate of subscription ${liveId}`);
  // Then the first cycle PayPal charged at activation goes back to the buyer, before the checkout is marked: a crash
  // anywhere here leaves it `created`, and the next check repeats both (idempotent at PayPal).
  const refund =
    c.refund ?? (await refundDuplicate(provider, c, liveId, await clockOffsetOf(deps.orm.em.fork(), c.appId)));
  deps.logger.warn(
    {
      checkout: c.id,
      account,
      duplicate: c.providerSubscriptionId,
      live: liveId,
      refunded: refund.amount,
      currency: refund.currency,
    },
    'an approved checkout duplicated a live subscription; cancelled it at the provider and refunded what it charged',
  );
  const order = c.providerOrderId ? await provider.getOrder(c.providerOrderId) : null;
  await inTransaction(deps, deps.orm.em.fork(), async (t) => {
    const marked = await sql<{ id: string }>(
      t.em,
      `update checkouts set status = 'cancelled', cancel_reason = $2, bumps_paid = $3, refund = $4::jsonb,
         updated_at = now()
        where id = $1 and status = 'created' returning id`,
      [c.id, reason, order?.status === 'COMPLETED', JSON.stringify(refund)],
    );
    if (!marked.length || order?.status !== 'COMPLETED') return;
    for (const b of c.bumps)
      await grantAddon({ em: t.em, deps, app: { id: c.appId } as never }, account, b.addon, 'order_bump').catch(
        (err: { status?: number }) => {
          if (err.status !== 409) throw err; // already owned
        },
      );
  });
  return { status: 'cancelled', providerStatus: 'CANCELLED' };
}

/**
 * Refunds every payment PayPal charged for a duplicate's subscription (the first cycle, charged at activation; a
 * renewal too if one slipped in): the subscription's transactions since the checkout was made, each completed one
 * refunded in full with the request id `<checkout>:refund:<payment>`, so a retried activity gets the same refund
 * back instead of a second one. A payment already refunded in full (by an earlier attempt whose answer was lost)
 * counts as refunded.
 */
async function refundDuplicate(
  provider: ReturnType<typeof providerFor>,
  c: ICheckout,
  liveId: string,
  /** The app's clock offset (a test clock): the provider charged on the app's time. */
  offsetMs: number,
): Promise<CheckoutRefund> {
  const from = new Date((c.createdAt ?? new Date()).getTime() - 60_000);
  const to = new Date(Date.now() + offsetMs + 60_000);
  const payments = await provider.listSubscriptionPayments(c.providerSubscriptionId!, { from, to });
  const done: CheckoutRefund['payments'] = [];
  let currency: string | null = null;
  for (const p of payments) {
    if (p.status !== 'COMPLETED' && p.status !== 'REFUNDED' && p.status !== 'PARTIALLY_REFUNDED') continue;
    const refundId = await provider
      .refundPayment(
        p.id,
        { note: `A duplicate of your subscription ${liveId}: refunded`, invoiceId: `${c.id}-refund-${p.id}` },
        `${c.id}:refund:${p.id}`,
      )
      .then((r) => r.id)
      .catch((err: unknown) => {
        // Refunded in full already (the earlier attempt's answer was lost): nothing is left to give back.
        if (err instanceof ProviderError && /CAPTURE_FULLY_REFUNDED/.test(err.message)) return 'already_refunded';
        throw err;
      });
    done.push({ payment_id: p.id, refund_id: refundId, amount: p.amount });
    currency = p.currency;
  }
  const amount = Math.round(done.reduce((sum, p) => sum + p.amount, 0) * 100) / 100;
  return {
    status: done.length ? 'refunded' : 'none',
    amount,
    currency,
    payments: done,
    refunded_at: new Date().toISOString(),
  };
}

/** The checkout's bumps whose add-ons the account it applies to does not own yet. */
async function bumpsStillDue(em: EntityManager, c: ICheckout): Promise<OfferBump[]> {
  if (!c.bumps.length) return [];
  const rows = await sql<{ addon_id: string }>(
    em,
    'select addon_id from account_addons where app_id = $1 and account_id = $2 and addon_id = any($3::text[])',
    [c.appId, buyerAccountId(c), c.bumps.map((b) => b.addon)],
  );
  const owned = new Set(rows.map((r) => r.addon_id));
  return c.bumps.filter((b) => !owned.has(b.addon));
}

/** The account a checkout applies to: the one it names, else the buyer's email, else one made for it. */
const buyerAccountId = (c: Pick<ICheckout, 'id' | 'accountId' | 'email'>) =>
  c.accountId ?? c.email ?? `buyer_${c.id.slice(4)}`;

export async function expireCheckout(deps: Deps, checkoutId: string) {
  await sql(
    deps.orm.em.fork(),
    `update checkouts set status = 'expired', updated_at = now() where id = $1 and status = 'created'`,
    [checkoutId],
  );
}

const addCycles = (from: Date, interval: 'month' | 'year', cycles: number) => {
  const d = new Date(from);
  if (interval === 'year') d.setUTCFullYear(d.getUTCFullYear() + cycles);
  else d.setUTCMonth(d.getUTCMonth() + cycles);
  return d;
};

/**
 * Applies a paid checkout once: the status moves from `created` to `completed` in the same
 * transaction as everything else, so a second caller finds nothing to do. Creates the account if
 * the buyer had none, moves it to the plan, records the offer and its extras (layer 2 of effective
 * access), grants the bumped add-ons, and emits the events.
 */
export async function applyCheckout(
  deps: Deps,
  checkoutId: string,
  bumpsPaid: boolean,
  providerSub: ProviderSubscription | null = null,
  paidBumps: OfferBump[] | null = null,
): Promise<boolean> {
  return inTransaction(deps, deps.orm.em.fork(), async (t) => {
    // A bump left out of the capture (its add-on came to be owned meanwhile) is not part of what was bought:
    // the checkout keeps the bumps that were charged, so its view and the offer's stats count what was paid.
    const claimed = await sql<{ id: string }>(
      t.em,
      `update checkouts set status = 'completed', completed_at = now(), bumps_paid = $2,
        bumps = coalesce($3::jsonb, bumps), updated_at = now() where id = $1 and status = 'created' returning id`,
      [checkoutId, bumpsPaid, bumpsPaid && paidBumps ? JSON.stringify(paidBumps) : null],
    );
    if (!claimed.length) return false;
    const c = (await t.em.findOne(Checkout, { id: checkoutId }, { refresh: true }))!;
    const ctx = { em: t.em, deps, app: { id: c.appId } };
    const accountId = buyerAccountId(c);
    const existing = await t.em.findOne(Account, { appId: c.appId, id: accountId });
    if (!existing) await createAccount({ ...ctx, app: { id: c.appId } as never }, { id: accountId, plan: c.planId });
    await changeAccount(ctx, accountId, async (_t, account) => {
      account.planId = c.planId;
      account.offerId = c.offerId ?? null;
    });
    if (!c.accountId) c.accountId = accountId;
    await recordSubscription(
      t,
      {
        appId: c.appId,
        accountId,
        providerSubscriptionId: c.providerSubscriptionId!,
        checkoutId: c.id,
        offerId: c.offerId ?? null,
        planId: c.planId,
        interval: c.interval,
        currency: c.currency,
        price: Number(c.price),
      },
      providerSub,
    );
    const endsAt = c.extras.cycles ? addCycles(new Date(), c.interval, c.extras.cycles) : null;
    for (const e of c.extras.entitlements) {
      await sql(
        t.em,
        `insert into account_extras (app_id, account_id, offer_id, kind, ref_id, max, ends_at) values ($1, $2, $3,
          'entitlement', $4, $5, $6)`,
        [c.appId, accountId, c.offerId ?? c.planId, e.id, e.max, endsAt],
      );
    }
    for (const a of c.extras.addons) {
      await sql(
        t.em,
        `insert into account_extras (app_id, account_id, offer_id, kind, ref_id, max, ends_at) values ($1, $2, $3,
          'addon', $4, null, $5)`,
        [c.appId, accountId, c.offerId ?? c.planId, a, endsAt],
      );
    }
    if (bumpsPaid) {
      for (const b of c.bumps) {
        await grantAddon({ ...ctx, app: { id: c.appId } as never }, accountId, b.addon, 'order_bump').catch(
          (err: { status?: number }) => {
            if (err.status !== 409) throw err; // already owned
          },
        );
      }
    }
    await t.em.flush();
    const account = (await t.em.findOne(Account, { appId: c.appId, id: accountId }))!;
    t.emit(c.appId, 'checkout.completed', { object: presentCheckout(c), account: await accountDetail(t.em, account) });
    return true;
  });
}

/** The buyer came back from the provider: make the checkout check now (nothing is revealed either way). */
/**
 * What the hosted return page says: the app's name, and the checkout the buyer comes back from (completed now, still
 * activating, or cancelled at the provider). Asks a waiting checkout to complete first.
 */
export async function returnPageState(
  deps: Deps,
  appId: string,
  query: { subscription_id?: string; outcome?: 'cancelled' },
): Promise<{ appName: string | null; state: 'completed' | 'approved' | 'cancelled' | 'duplicate' }> {
  const [app] = await sql<{ name: string }>(deps.orm.em.fork(), 'select name from apps where id = $1', [appId]);
  const appName = app?.name ?? null;
  if (query.outcome === 'cancelled') return { appName, state: 'cancelled' };
  await nudgeReturnedCheckout(deps, appId, query.subscription_id);
  const em = deps.orm.em.fork();
  const c = query.subscription_id
    ? await em.findOne(Checkout, { appId, providerSubscriptionId: query.subscription_id })
    : null;
  if (c?.status === 'completed') return { appName, state: 'completed' };
  // The buyer already had a live subscription: this one is (or is about to be) cancelled at the provider and what it
  // charged refunded (`checkCheckout`), so "your new plan applies" would not be true.
  if (c && c.providerSubscriptionId) {
    const live = await liveSubscription(em, appId, buyerAccountId(c));
    if (
      (c.status === 'cancelled' && c.refund) ||
      (c.status === 'created' && live && live.providerSubscriptionId !== c.providerSubscriptionId)
    )
      return { appName, state: 'duplicate' };
  }
  return { appName, state: c?.status === 'cancelled' ? 'cancelled' : 'approved' };
}

export async function nudgeReturnedCheckout(deps: Deps, appId: string, providerSubscriptionId: string | undefined) {
  if (!providerSubscriptionId) return;
  const c = await deps.orm.em.fork().findOne(Checkout, { appId, providerSubscriptionId });
  if (!c || c.status !== 'created') return;
  await boundedCall(deps.temporal.connection, REQUEST_TEMPORAL_TIMEOUT_MS, () =>
    deps.temporal.client.workflow.getHandle(checkoutWorkflowId(c.id)).signal(checkoutDef.signals.providerNotified),
  ).catch(() => undefined);
}
