import { z } from 'zod';
import { Plan, type IPlan } from '../catalog/catalog.entities.js';
import { findPlan, planEntitlementLimits } from '../catalog/catalog.service.js';
import { findAccount } from '../accounts/accounts.service.js';
import { conflict, notFound } from '../errors.js';
import { Checkout } from '../checkouts/checkouts.entities.js';
import { checkCheckout, createOfferCheckout, createPlanCheckout } from '../checkouts/checkouts.service.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { Offer, type IOffer } from '../offers/offers.entities.js';
import { regularPrice } from '../offers/offers.service.js';
import { liveStatus } from '../offers/offers.present.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import { limitsFor } from '../security/rate-limits.js';
import { iso } from '../time.js';

export interface UpgradeOffer {
  id: string | null;
  name: string;
  plan: { id: string; name: string };
  interval: 'month' | 'year';
  currency: string;
  price: number;
  list_price: number;
  cycles: number | null;
  new_limit: number | null;
  checkout_url: string | null;
  expires_at: string | null;
}

/** The 402 body, as the MCP tools' output schemas show it beside their result (a 402 is their structured content). */
export const limitReachedSchema = z.object({
  error: z.literal('limit_reached'),
  message: z.string().describe('What was used, the upgrade and its link, in plain language'),
  entitlement: z.object({ id: z.string(), name: z.string(), usage: z.number(), max: z.number() }),
  offer: z
    .object({
      id: z.string().nullable(),
      name: z.string(),
      plan: z.object({ id: z.string(), name: z.string() }),
      interval: z.enum(['month', 'year']),
      currency: z.string(),
      price: z.number(),
      list_price: z.number(),
      cycles: z.number().nullable(),
      new_limit: z.number().nullable(),
      checkout_url: z.string().nullable().describe('The page the person opens to pay for the upgrade'),
      expires_at: z.string().nullable(),
    })
    .nullable(),
  retry_after_purchase: z.boolean(),
});

export interface LimitReachedBody {
  error: 'limit_reached';
  message: string;
  entitlement: { id: string; name: string; usage: number; max: number };
  offer: UpgradeOffer | null;
  retry_after_purchase: boolean;
}

/** How long an approval link made for a 402 is handed out again, rather than a new one. */
export const UPGRADE_LINK_REUSE_MS = 3_600_000;

function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(amount);
  } catch {
    return `${amount} ${currency}`;
  }
}

/** The app's pricing page with the selection in the query string, when the app has one. */
export function checkoutLink(
  base: string | null | undefined,
  q: { offer?: string | null; plan: string; interval: string; account: string },
): string | null {
  if (!base) return null;
  const url = new URL(base);
  if (q.offer) url.searchParams.set('offer', q.offer);
  url.searchParams.set('plan', q.plan);
  url.searchParams.set('interval', q.interval);
  url.searchParams.set('account', q.account);
  return url.toString();
}

interface Candidate {
  offerId: string | null;
  name: string;
  plan: IPlan;
  interval: 'month' | 'year';
  currency: string;
  price: number;
  listPrice: number;
  cycles: number | null;
  newLimit: number | null;
  expiresAt: Date | null;
}

const perMonth = (c: Candidate) => (c.interval === 'month' ? c.price : c.price / 12);
const raises = (limit: number | null, max: number) => limit === null || limit > max;

/** The offer's plans that raise the limit, at the offer's prices, when the account can buy it. */
async function offerCandidates(
  ctx: Ctx,
  offer: IOffer,
  a: { accountId: string; entitlementId: string; max: number },
): Promise<Candidate[]> {
  if (liveStatus(offer) !== 'active' || (offer.kind === 'targeted' && offer.accountId !== a.accountId)) return [];
  const plans = new Map(
    (await ctx.em.find(Plan, { appId: ctx.app.id, id: { $in: offer.plans.map((p) => p.plan) } })).map((p) => [p.id, p]),
  );
  const limits = await planEntitlementLimits(
    ctx.em,
    ctx.app.id,
    offer.plans.map((p) => p.plan),
  );
  const out: Candidate[] = [];
  for (const op of offer.plans) {
    const plan = plans.get(op.plan);
    if (!plan) continue;
    const extra = op.extras.entitlements.find((e) => e.id === a.entitlementId);
    const onPlan = limits.get(op.plan)?.find((l) => l.id === a.entitlementId);
    if (!extra && !onPlan) continue;
    const newLimit = extra ? extra.max : onPlan!.max;
    if (!raises(newLimit, a.max)) continue;
    for (const price of op.prices) {
      out.push({
        offerId: offer.id,
        name: offer.name,
        plan,
        interval: price.interval,
        currency: price.currency,
        price: price.amount,
        listPrice: regularPrice(plan, price.interval, price.currency) ?? price.amount,
        cycles: price.cycles,
        newLimit,
        expiresAt: offer.expiresAt ?? null,
      });
    }
  }
  return out;
}

/** Plans with a pricing card that raise the limit, at their regular prices (monthly preferred). */
async function regularCandidates(
  ctx: Ctx,
  a: { accountId: string; entitlementId: string; max: number },
): Promise<Candidate[]> {
  const rows = await sql<{ id: string; max: string | null }>(
    ctx.em,
    `select p.id, pe.max from plans p
       join plan_entitlements pe on pe.app_id = p.app_id and pe.plan_id = p.id and pe.entitlement_id = $2
      where p.app_id = $1 and p.pricing_card is not null and (pe.max is null or pe.max > $3)
        and p.id <> coalesce((select plan_id from accounts where app_id = $1 and id = $4), '')`,
    [ctx.app.id, a.entitlementId, a.max, a.accountId],
  );
  const plans = new Map(
    (await ctx.em.find(Plan, { appId: ctx.app.id, id: { $in: rows.map((r) => r.id) } })).map((p) => [p.id, p]),
  );
  const out: Candidate[] = [];
  for (const r of rows) {
    const plan = plans.get(r.id)!;
    const currency = (plan.pricingCard!.currency ?? 'USD').toUpperCase();
    const interval =
      regularPrice(plan, 'month', currency) !== null
        ? 'month'
        : regularPrice(plan, 'year', currency) !== null
          ? 'year'
          : null;
    if (!interval) continue;
    const price = regularPrice(plan, interval, currency)!;
    out.push({
      offerId: null,
      name: plan.pricingCard!.title ?? plan.name,
      plan,
      interval,
      currency,
      price,
      listPrice: price,
      cycles: null,
      newLimit: r.max === null ? null : Number(r.max),
      expiresAt: null,
    });
  }
  return out;
}

/**
 * A provider approval link for the upgrade, made on the spot when the app has no pricing page:
 * an open checkout for the same account and selection from the last hour is handed out again.
 * Null when the provider is not connected or refuses.
 */
async function providerLink(
  ctx: Ctx,
  c: Candidate,
  accountId: string,
  origin: string,
  entitlement: string,
): Promise<string | null> {
  if (!(await ctx.em.findOne(PaymentConnection, { appId: ctx.app.id }))) return null;
  const recent = await ctx.em.findOne(
    Checkout,
    {
      appId: ctx.app.id,
      accountId,
      planId: c.plan.id,
      interval: c.interval,
      offerId: c.offerId,
      status: 'created',
      createdAt: { $gt: new Date(Date.now() - UPGRADE_LINK_REUSE_MS) },
    },
    { orderBy: { createdAt: 'desc' } },
  );
  if (recent?.approveUrl) return recent.openUrl ?? recent.approveUrl;
  // The publishable key is public and a 402 is on the metering hot path: new provider subscriptions made
  // for 402s are capped per account and hour, shared by every API process.
  const allowed = await limitsFor(ctx.deps).consume(
    'upgrade-link',
    `${ctx.app.id}:${accountId}`,
    ctx.deps.config.UPGRADE_LINKS_PER_HOUR,
    3600,
  );
  if (!allowed.ok) {
    ctx.deps.logger.warn({ accountId }, '402 approval links for this account are capped this hour; none made');
    return null;
  }
  const returnUrl = `${origin}/apps/${ctx.app.id}/checkouts/return`;
  try {
    const chk = c.offerId
      ? await createOfferCheckout(ctx, c.offerId, {
          plan: c.plan.id,
          interval: c.interval,
          currency: c.currency,
          account: accountId,
          return_url: returnUrl,
          origin,
          upgrade: { entitlement },
        })
      : await createPlanCheckout(ctx, c.plan.id, {
          interval: c.interval,
          account: accountId,
          return_url: returnUrl,
          origin,
          upgrade: { entitlement },
        });
    // (Never a plan change: no `if_subscribed` is sent, so a subscribed account gets a 409, caught below.)
    if (chk.object === 'plan_change') return chk.approve_url;
    // Through the service, so the funnel sees the link opened (it redirects to the provider's approval page).
    return chk.open_url ?? chk.approve_url;
  } catch (err) {
    ctx.deps.logger.warn({ err, accountId }, 'could not make a provider approval link for a 402');
    return null;
  }
}

/**
 * Counts a 402 that offered an upgrade, and whether it showed a link (the first steps of the upgrade funnel,
 * `GET /apps/:appId/analytics/upgrades`): one row per app, day, entitlement and upgrade. Never fails the 402.
 */
async function countPrompt(ctx: Ctx, entitlementId: string, best: Candidate, link: boolean) {
  await sql(
    ctx.em,
    `insert into upgrade_prompts (app_id, day, entitlement_id, plan_id, offer_id, prompts, links)
     values ($1, (now() at time zone 'utc')::date, $2, $3, $4, 1, $5)
     on conflict (app_id, day, entitlement_id, plan_id, offer_id)
     do update set prompts = upgrade_prompts.prompts + 1, links = upgrade_prompts.links + excluded.links`,
    [ctx.app.id, entitlementId, best.plan.id, best.offerId ?? '', link ? 1 : 0],
  ).catch((err: unknown) => ctx.deps.logger.warn({ err }, 'could not count a 402 upgrade prompt'));
}

/**
 * The 402 body: the cheapest plan (per month) that raises this limit, from the entitlement's
 * `offer_id` when the account can buy it, else at regular prices; with a checkout link.
 */
export async function upgradeFor(
  ctx: Ctx,
  a: {
    accountId: string;
    entitlementId: string;
    entitlementName: string;
    usage: number;
    max: number;
    offerId: string | null;
    origin: string;
  },
): Promise<LimitReachedBody> {
  let candidates: Candidate[] = [];
  if (a.offerId) {
    const offer = await ctx.em.findOne(Offer, { appId: ctx.app.id, id: a.offerId });
    if (offer) candidates = await offerCandidates(ctx, offer, a);
  }
  if (!candidates.length) candidates = await regularCandidates(ctx, a);
  candidates.sort((x, y) => perMonth(x) - perMonth(y) || Number(x.plan.seq) - Number(y.plan.seq));
  const best = candidates[0];
  const entitlement = { id: a.entitlementId, name: a.entitlementName, usage: a.usage, max: a.max };
  const used = `${a.entitlementName}: ${a.usage} of ${a.max} used.`;
  if (!best)
    return {
      error: 'limit_reached',
      message: `${used} No plan with a higher limit is available.`,
      entitlement,
      offer: null,
      retry_after_purchase: false,
    };

  const checkoutUrl =
    checkoutLink(ctx.app.checkoutUrl, {
      offer: best.offerId,
      plan: best.plan.id,
      interval: best.interval,
      account: a.accountId,
    }) ?? (await providerLink(ctx, best, a.accountId, a.origin, a.entitlementId));
  await countPrompt(ctx, a.entitlementId, best, checkoutUrl !== null);
  const offer: UpgradeOffer = {
    id: best.offerId,
    name: best.name,
    plan: { id: best.plan.id, name: best.plan.name },
    interval: best.interval,
    currency: best.currency,
    price: best.price,
    list_price: best.listPrice,
    cycles: best.cycles,
    new_limit: best.newLimit,
    checkout_url: checkoutUrl,
    expires_at: iso(best.expiresAt),
  };
  const message =
    `${used} Upgrade to ${best.plan.name} (${money(best.price, best.currency)}/${best.interval}` +
    `${best.cycles ? ` for ${best.cycles} ${best.interval}s` : ''}) for ` +
    `${best.newLimit === null ? 'unlimited' : best.newLimit} ${a.entitlementName}${checkoutUrl ? `: ${checkoutUrl}` : '.'}`;
  return { error: 'limit_reached', message, entitlement, offer, retry_after_purchase: true };
}

/**
 * Before answering a 402: the account may have just paid. At most once per account and
 * UPGRADE_SETTLE_INTERVAL_SECONDS (across processes), checks the account's newest open checkout of the
 * last 24 hours with the provider, applying it when it is now active; other 402s answer without the
 * provider (each checkout's own workflow keeps checking on its schedule). True when one completed.
 */
export async function settleOpenCheckouts(ctx: Ctx, accountId: string): Promise<boolean> {
  const [open] = await ctx.em.find(
    Checkout,
    { appId: ctx.app.id, accountId, status: 'created', createdAt: { $gt: new Date(Date.now() - 86_400_000) } },
    { orderBy: { createdAt: 'desc' }, limit: 1 },
  );
  if (!open) return false;
  const interval = ctx.deps.config.UPGRADE_SETTLE_INTERVAL_SECONDS;
  if (interval > 0) {
    const slot = await limitsFor(ctx.deps).consume('upgrade-settle', `${ctx.app.id}:${accountId}`, 1, interval);
    if (!slot.ok) return false;
  }
  try {
    return (await checkCheckout(ctx.deps, { appId: ctx.app.id, checkoutId: open.id })).status === 'completed';
  } catch (err) {
    ctx.deps.logger.warn({ err, checkout: open.id }, 'could not check an open checkout before a 402');
    return false;
  }
}

/** A link a person opens to buy a plan (or an offer's price of it) for their account: what the upgrade-link route answers. */
export interface UpgradeLink {
  account: string;
  plan: { id: string; name: string };
  offer: string | null;
  interval: 'month' | 'year';
  currency: string;
  price: number;
  /** `pricing_page`: the app's own checkout page with the selection; `provider_approval`: the provider's approval page. */
  kind: 'pricing_page' | 'provider_approval';
  url: string;
  /** The checkout the provider link belongs to (null for the pricing page, which starts its own). */
  checkout: string | null;
}

/**
 * What an upgrade link would sell (the plan, offer, interval, currency and price), without making it: its checks
 * (the account, plan and offer exist, the price is there) are the link's own. Also the MCP tool's spend and dry run.
 */
export async function quoteUpgradeLink(
  ctx: Ctx,
  accountId: string,
  input: { plan: string; interval?: 'month' | 'year'; offer?: string },
) {
  await findAccount(ctx.em, ctx.app.id, accountId);
  const plan = await findPlan(ctx.em, ctx.app.id, input.plan);
  let offerId: string | null = null;
  let interval: 'month' | 'year';
  let currency: string;
  let price: number;
  if (input.offer) {
    const offer = await ctx.em.findOne(Offer, { appId: ctx.app.id, id: input.offer });
    if (!offer) throw notFound(`Offer ${input.offer}`);
    if (liveStatus(offer) !== 'active' || (offer.kind === 'targeted' && offer.accountId !== accountId))
      throw conflict(`Offer ${offer.id} cannot be bought by account ${accountId} now`, { reason: 'not_available' });
    const op = offer.plans.find((p) => p.plan === plan.id);
    if (!op) throw conflict(`Offer ${offer.id} does not offer plan ${plan.id}`, { reason: 'plan_not_offered' });
    const p = op.prices.find((x) => !input.interval || x.interval === input.interval);
    if (!p)
      throw conflict(`Offer ${offer.id} has no ${input.interval}ly price for plan ${plan.id}`, {
        reason: 'interval_not_offered',
      });
    offerId = offer.id;
    ({ interval, currency, amount: price } = p);
  } else {
    currency = (plan.pricingCard?.currency ?? 'USD').toUpperCase();
    interval = input.interval ?? (regularPrice(plan, 'month', currency) !== null ? 'month' : 'year');
    const regular = regularPrice(plan, interval, currency);
    if (regular === null)
      throw conflict(`Plan ${plan.id} has no ${interval}ly price on its pricing card`, { reason: 'no_price' });
    price = regular;
  }
  const base = {
    account: accountId,
    plan: { id: plan.id, name: plan.name },
    offer: offerId,
    interval,
    currency,
    price,
  };
  return { base, plan, offerId, interval, currency, price };
}

/**
 * A checkout or upgrade link for an account, for a person to open (the same link a 402 would name): the app's
 * checkout page with the selection when the app has one, else a provider approval link, handed out again for the
 * same account and selection within an hour (as a 402's link is) rather than a new provider subscription each time.
 * 409 (`reason`) when the plan or offer cannot be bought at that interval, or the provider is not connected.
 */
export async function upgradeLink(
  ctx: Ctx,
  accountId: string,
  input: { plan: string; interval?: 'month' | 'year'; offer?: string },
  origin: string,
): Promise<UpgradeLink> {
  const { base, plan, offerId, interval, currency } = await quoteUpgradeLink(ctx, accountId, input);
  const page = checkoutLink(ctx.app.checkoutUrl, { offer: offerId, plan: plan.id, interval, account: accountId });
  if (page) return { ...base, kind: 'pricing_page', url: page, checkout: null };

  const recent = await ctx.em.findOne(
    Checkout,
    {
      appId: ctx.app.id,
      accountId,
      planId: plan.id,
      interval,
      offerId,
      status: 'created',
      createdAt: { $gt: new Date(Date.now() - UPGRADE_LINK_REUSE_MS) },
    },
    { orderBy: { createdAt: 'desc' } },
  );
  if (recent?.approveUrl) return { ...base, kind: 'provider_approval', url: recent.approveUrl, checkout: recent.id };
  const returnUrl = `${origin}/apps/${ctx.app.id}/checkouts/return`;
  const chk = offerId
    ? await createOfferCheckout(ctx, offerId, {
        plan: plan.id,
        interval,
        currency,
        account: accountId,
        return_url: returnUrl,
      })
    : await createPlanCheckout(ctx, plan.id, { interval, account: accountId, return_url: returnUrl });
  if (!chk.approve_url) throw conflict('The payment provider gave no approval link', { reason: 'no_link' });
  return { ...base, kind: 'provider_approval', url: chk.approve_url, checkout: chk.id };
}
