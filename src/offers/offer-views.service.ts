// What a buyer sees of an offer (its public view with prices and the account's eligibility), the operator's
// previews of a draft or a saved offer as an account would see it, and an offer's statistics.
import type { z } from 'zod';
import { effectiveAccess } from '../access/access.service.js';
import { Plan } from '../catalog/catalog.entities.js';
import { planEntitlementLimits } from '../catalog/catalog.service.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { iso } from '../time.js';
import { Offer, type IOffer, type OfferBump, type OfferPlan } from './offers.entities.js';
import type * as S from './offers.schemas.js';
import { presentOffer } from './offers.present.js';
import { liveStatus } from './offers.present.js';
import { findOffer, normalizePlans, plansById, regularPrice, validate } from './offers.service.js';

type OfferInput = z.output<typeof S.createOfferBody>;

interface PublicSource {
  offer: Pick<IOffer, 'id' | 'name' | 'description' | 'plans' | 'bumps' | 'expiresAt'> | null;
}

/** Plans with their prices (offer price and regular price), extras and the limits they grant. */
async function publicPlans(ctx: Ctx, src: PublicSource) {
  let offerPlans: OfferPlan[];
  if (src.offer) offerPlans = src.offer.plans;
  else {
    // Regular prices: every plan with a pricing card.
    const cards = await ctx.em.find(
      Plan,
      { appId: ctx.app.id, pricingCard: { $ne: null } },
      { orderBy: { seq: 'asc' } },
    );
    offerPlans = cards.map((p) => ({
      plan: p.id,
      prices: (['month', 'year'] as const)
        .map((interval) => ({
          interval,
          currency: (p.pricingCard!.currency ?? 'USD').toUpperCase(),
          amount: regularPrice(p, interval, (p.pricingCard!.currency ?? 'USD').toUpperCase()),
          cycles: null,
        }))
        .filter(
          (x): x is { interval: 'month' | 'year'; currency: string; amount: number; cycles: null } => x.amount !== null,
        ),
      extras: { entitlements: [], addons: [], cycles: null },
    }));
  }
  const plans = await plansById(
    ctx.em,
    ctx.app.id,
    offerPlans.map((p) => p.plan),
  );
  const limits = await planEntitlementLimits(
    ctx.em,
    ctx.app.id,
    offerPlans.map((p) => p.plan),
  );
  // Names and types, so a pricing page can say "SSO" for a switch rather than "Unlimited sso".
  const ids = [
    ...new Set([
      ...[...limits.values()].flat().map((l) => l.id),
      ...offerPlans.flatMap((p) => p.extras.entitlements.map((e) => e.id)),
    ]),
  ];
  const known = new Map(
    (
      await sql<{ id: string; name: string; type: 'usage' | 'boolean' }>(
        ctx.em,
        'select id, name, type from entitlements where app_id = $1 and id = any($2::text[])',
        [ctx.app.id, ids],
      )
    ).map((e) => [e.id, e]),
  );
  return offerPlans
    .filter((p) => plans.has(p.plan))
    .map((p) => {
      const plan = plans.get(p.plan)!;
      const granted = new Map((limits.get(p.plan) ?? []).map((l) => [l.id, l.max]));
      for (const e of p.extras.entitlements) granted.set(e.id, e.max);
      return {
        plan: { id: plan.id, name: plan.name, description: plan.description ?? null },
        prices: p.prices.map((x) => ({
          interval: x.interval,
          currency: x.currency,
          price: x.amount,
          list_price: regularPrice(plan, x.interval, x.currency) ?? x.amount,
          cycles: x.cycles,
        })),
        extras: p.extras,
        entitlements: [...granted].map(([id, max]) => ({
          id,
          name: known.get(id)?.name ?? id,
          type: known.get(id)?.type ?? 'usage',
          max,
        })),
      };
    });
}

async function publicView(
  ctx: Ctx,
  source: 'offer' | 'fallback' | 'regular',
  offer: IOffer | null,
  ref: string | null,
  account?: string,
) {
  // Bumps for add-ons the account owns are left out: a checkout with one would be refused (`bump_owned`).
  const owned = new Set(
    account && offer?.bumps.length
      ? (
          await sql<{ addon_id: string }>(
            ctx.em,
            'select addon_id from account_addons where app_id = $1 and account_id = $2',
            [ctx.app.id, account],
          )
        ).map((r) => r.addon_id)
      : [],
  );
  return {
    source,
    offer: offer
      ? { id: offer.id, name: offer.name, description: offer.description ?? null, expires_at: iso(offer.expiresAt) }
      : null,
    plans: await publicPlans(ctx, { offer }),
    bumps: offer
      ? offer.bumps
          .filter((b) => !owned.has(b.addon))
          .map((b) => ({ id: b.id, name: b.name, price: b.price, currency: b.currency }))
      : [],
    ref,
  };
}

/** Whether this offer can be shown (and so bought) right now, by this account if one is named. */
function usable(o: IOffer | null, account: string | undefined): o is IOffer {
  return (
    !!o && liveStatus(o) === 'active' && (o.kind === 'shareable' || (account !== undefined && o.accountId === account))
  );
}

/**
 * The offer for a checkout page. Never 404: the offer if it can be bought now (by `account`, for a
 * targeted one), else the `fallback` named in the query, else the offer's own fallback, else the
 * regular prices of the plans with pricing cards. Counts a view of the offer shown.
 */
export async function publicOffer(ctx: Ctx, id: string, q: z.output<typeof S.publicQuery>) {
  const find = (offerId: string | null | undefined) =>
    offerId ? ctx.em.findOne(Offer, { appId: ctx.app.id, id: offerId }) : Promise.resolve(null);
  const requested = await find(id);
  const chain: [IOffer | null, 'offer' | 'fallback'][] = [
    [requested, 'offer'],
    [await find(q.fallback), 'fallback'],
    [await find(requested?.fallbackOfferId), 'fallback'],
  ];
  for (const [o, source] of chain) {
    if (usable(o, q.account)) {
      await sql(ctx.em, 'update offers set views = views + 1 where app_id = $1 and id = $2', [ctx.app.id, o.id]);
      return publicView(ctx, source, o, q.ref ?? null, q.account);
    }
  }
  return publicView(ctx, 'regular', null, q.ref ?? null);
}

/** The public view of unsaved offer fields, validated; nothing is stored. */
export async function draftPreview(ctx: Ctx, input: OfferInput) {
  const plans = normalizePlans(input.plans);
  const bumps = (input.bumps ?? []) as OfferBump[];
  await validate(ctx, { plans, bumps, accountId: input.account_id, fallback: input.fallback, id: input.id });
  const draft = {
    id: input.id ?? 'draft',
    name: input.name,
    description: input.description ?? null,
    plans,
    bumps,
    expiresAt: input.expires_at ?? null,
  } as IOffer;
  return publicView(ctx, 'offer', draft, null);
}

/** What each plan of the offer grants and, for an account, how its access would change. */
export async function previewOffer(ctx: Ctx, id: string, account: string | undefined) {
  const o = await findOffer(ctx.em, ctx.app.id, id);
  const plans = await publicPlans(ctx, { offer: o });
  if (!account) return { offer: presentOffer(o), plans, account: null };
  const current = await effectiveAccess(ctx.em, ctx.app.id, account, { includePrivateMeta: false });
  const now = new Map(current.entitlements.map((e) => [e.id, e.max]));
  return {
    offer: presentOffer(o),
    account: { id: account, plan: current.plan.id },
    plans: plans.map((p) => ({
      ...p,
      changes: p.entitlements
        .filter((e) => !now.has(e.id) || now.get(e.id) !== e.max)
        .map((e) => ({ entitlement: e.id, current: now.has(e.id) ? now.get(e.id)! : 0, new: e.max })),
    })),
  };
}

/**
 * Views, checkouts, conversion (completed checkouts per view) and first-payment revenue of completed
 * checkouts, by plan, by `ref` and by order bump (bumps count when their order was paid). Revenue is
 * per currency.
 */
export async function offerStats(ctx: Ctx, id: string) {
  const o = await findOffer(ctx.em, ctx.app.id, id);
  const rows = await sql<{
    plan_id: string;
    ref: string | null;
    status: string;
    price: string;
    currency: string;
    bumps: OfferBump[];
    bumps_paid: boolean;
    source: string;
    opened: boolean;
  }>(
    ctx.em,
    `select plan_id, ref, status, price, currency, bumps, bumps_paid, source, opened_at is not null as opened
       from checkouts where app_id = $1 and offer_id = $2`,
    [ctx.app.id, id],
  );
  const upgradeLinks = { prepared: 0, opened: 0, completed: 0 };
  let counted = 0;
  const add = (m: Record<string, number>, currency: string, amount: number) =>
    (m[currency] = Math.round(((m[currency] ?? 0) + amount) * 100) / 100);
  const group = () => new Map<string, { checkouts: number; completed: number; revenue: Record<string, number> }>();
  const byPlan = group();
  const byRef = group();
  const byBump = new Map<string, { completed: number; revenue: Record<string, number> }>();
  const revenue: Record<string, number> = {};
  let completed = 0;
  for (const r of rows) {
    const done = r.status === 'completed';
    if (r.source === 'upgrade_link') {
      upgradeLinks.prepared++;
      if (r.opened) upgradeLinks.opened++;
      if (done) upgradeLinks.completed++;
    }
    // A checkout counts once the buyer opened its approval link or completed it, not when it was only prepared
    // (a 402 makes one for every account that reaches a limit).
    if (!r.opened && !done) continue;
    counted++;
    for (const [map, key] of [
      [byPlan, r.plan_id],
      [byRef, r.ref ?? '(none)'],
    ] as const) {
      const g = map.get(key) ?? { checkouts: 0, completed: 0, revenue: {} };
      g.checkouts++;
      if (done) {
        g.completed++;
        add(g.revenue, r.currency, Number(r.price));
      }
      map.set(key, g);
    }
    if (!done) continue;
    completed++;
    add(revenue, r.currency, Number(r.price));
    if (r.bumps_paid) {
      for (const b of r.bumps) {
        const g = byBump.get(b.id) ?? { completed: 0, revenue: {} };
        g.completed++;
        add(g.revenue, b.currency, b.price);
        add(revenue, b.currency, b.price);
        byBump.set(b.id, g);
      }
    }
  }
  return {
    offer: o.id,
    views: o.views,
    checkouts: counted,
    completed,
    conversion: o.views ? Math.round((completed / o.views) * 10000) / 10000 : 0,
    prepared: rows.length,
    upgrade_links: upgradeLinks,
    revenue,
    by_plan: [...byPlan].map(([plan, g]) => ({ plan, ...g })),
    by_ref: [...byRef].map(([ref, g]) => ({ ref, ...g })),
    by_bump: [...byBump].map(([bump, g]) => ({ bump, ...g })),
  };
}
