// Offers as an operator authors them: validation, create, update, publish (with the provider's plans), archive and
// delete. What a buyer sees of an offer, previews and statistics are in offer-views.service.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { findAccount } from '../accounts/accounts.service.js';
import { Plan, type IPlan } from '../catalog/catalog.entities.js';
import type { Ctx } from '../context.js';
import { flushOrConflict } from '../db/conflict.js';
import { sql } from '../db/sql.js';
import { badRequest, conflict, missingReference, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { requireProvider, withProvider } from '../payments/payments.service.js';
import type { PaymentProvider } from '../payments/provider.js';
import { Offer, type IOffer, type OfferBump, type OfferPlan } from './offers.entities.js';
import type * as S from './offers.schemas.js';
import { presentOffer } from './offers.present.js';

type OfferInput = z.output<typeof S.createOfferBody>;
type OfferFields = z.output<typeof S.updateOfferBody>;

/** The plan's regular price for an interval and currency (from its pricing card), or null. */
export function regularPrice(plan: IPlan, interval: 'month' | 'year', currency: string): number | null {
  const card = plan.pricingCard;
  if (!card || (card.currency ?? 'USD').toUpperCase() !== currency) return null;
  const value = interval === 'month' ? card.monthlyPrice : card.yearlyPrice;
  return typeof value === 'number' ? value : null;
}

export async function plansById(em: EntityManager, appId: string, ids: string[]) {
  const plans = ids.length ? await em.find(Plan, { appId, id: { $in: ids } }) : [];
  return new Map(plans.map((p) => [p.id, p]));
}

/** Checks every reference and price of an offer; the first problem is a 400 (or 404) naming it. */
export async function validate(
  ctx: Ctx,
  o: { plans: OfferPlan[]; bumps: OfferBump[]; accountId?: string | null; fallback?: string | null; id?: string },
) {
  const plans = await plansById(
    ctx.em,
    ctx.app.id,
    o.plans.map((p) => p.plan),
  );
  const ids = async (table: 'entitlements' | 'addons', list: string[]) =>
    new Set(
      (
        await sql<{ id: string }>(ctx.em, `select id from ${table} where app_id = $1 and id = any($2::text[])`, [
          ctx.app.id,
          list,
        ])
      ).map((r) => r.id),
    );
  const ents = await ids(
    'entitlements',
    o.plans.flatMap((p) => p.extras.entitlements.map((e) => e.id)),
  );
  const addons = await ids('addons', [...o.plans.flatMap((p) => p.extras.addons), ...o.bumps.map((b) => b.addon)]);
  o.plans.forEach((p, i) => {
    const plan = plans.get(p.plan);
    if (!plan) throw missingReference(`plans.${i}.plan: plan ${p.plan} does not exist`);
    p.prices.forEach((price, j) => {
      if (price.cycles && regularPrice(plan, price.interval, price.currency) === null) {
        // The plan's own prices decide it (its state), not the request alone: a 409.
        throw conflict(
          `plans.${i}.prices.${j}.cycles: plan ${p.plan} has no regular ${price.interval}ly ${price.currency} price ` +
            `to continue at after ${price.cycles} cycles`,
        );
      }
    });
    p.extras.entitlements.forEach((e, j) => {
      if (!ents.has(e.id))
        throw missingReference(`plans.${i}.extras.entitlements.${j}.id: entitlement ${e.id} does not exist`);
    });
    p.extras.addons.forEach((a, j) => {
      if (!addons.has(a)) throw missingReference(`plans.${i}.extras.addons.${j}: add-on ${a} does not exist`);
    });
  });
  o.bumps.forEach((b, i) => {
    if (!addons.has(b.addon)) throw missingReference(`bumps.${i}.addon: add-on ${b.addon} does not exist`);
  });
  if (o.accountId) await findAccount(ctx.em, ctx.app.id, o.accountId);
  if (o.fallback) {
    if (o.fallback === o.id) throw badRequest('fallback: must be another offer');
    if (!(await ctx.em.findOne(Offer, { appId: ctx.app.id, id: o.fallback })))
      throw missingReference(`fallback: offer ${o.fallback} does not exist`);
  }
}

export const normalizePlans = (plans: NonNullable<OfferFields['plans']>): OfferPlan[] =>
  plans.map((p) => ({
    plan: p.plan,
    prices: p.prices.map((x) => ({
      interval: x.interval,
      currency: x.currency,
      amount: x.amount,
      cycles: x.cycles ?? null,
    })),
    extras: {
      entitlements: (p.extras?.entitlements ?? []).map((e) => ({ id: e.id, max: e.max ?? null })),
      addons: p.extras?.addons ?? [],
      cycles: p.extras?.cycles ?? null,
    },
  }));

/** Completed purchases per offer. */
export async function redemptions(em: EntityManager, appId: string, offerIds: string[]): Promise<Map<string, number>> {
  if (!offerIds.length) return new Map();
  const rows = await sql<{ offer_id: string; n: string }>(
    em,
    `select offer_id, count(*) as n from checkouts where app_id = $1 and offer_id = any($2::text[]) and status =
      'completed' group by offer_id`,
    [appId, offerIds],
  );
  return new Map(rows.map((r) => [r.offer_id, Number(r.n)]));
}

export async function findOffer(em: EntityManager, appId: string, id: string) {
  const o = await em.findOne(Offer, { appId, id });
  if (!o) throw notFound(`Offer ${id}`);
  return o;
}

export async function listOffers(ctx: Ctx) {
  const list = await ctx.em.find(Offer, { appId: ctx.app.id }, { orderBy: { seq: 'asc' } });
  const counts = await redemptions(
    ctx.em,
    ctx.app.id,
    list.map((o) => o.id),
  );
  return list.map((o) => presentOffer(o, counts.get(o.id) ?? 0));
}

export async function getOffer(ctx: Ctx, id: string) {
  const o = await findOffer(ctx.em, ctx.app.id, id);
  return presentOffer(o, (await redemptions(ctx.em, ctx.app.id, [id])).get(id) ?? 0);
}

export async function createOffer(ctx: Ctx, input: OfferInput) {
  const plans = normalizePlans(input.plans);
  const bumps = (input.bumps ?? []) as OfferBump[];
  await validate(ctx, { plans, bumps, accountId: input.account_id, fallback: input.fallback, id: input.id });
  const o = ctx.em.create(Offer, {
    appId: ctx.app.id,
    id: input.id ?? newId('offer'),
    kind: input.account_id ? 'targeted' : 'shareable',
    accountId: input.account_id ?? null,
    name: input.name,
    description: input.description ?? null,
    status: 'draft',
    plans,
    bumps,
    startsAt: input.starts_at ?? null,
    expiresAt: input.expires_at ?? null,
    fallbackOfferId: input.fallback ?? null,
    provider: { productId: null, plans: {} },
    views: 0,
    publishedAt: null,
    archivedAt: null,
  });
  await flushOrConflict(ctx.em, `Offer ${o.id} already exists`);
  return presentOffer(o);
}

/** The key of a provider billing plan: one per plan, interval, currency and price terms. */
export const providerPlanKey = (
  plan: string,
  p: { interval: string; currency: string; amount: number; cycles: number | null },
) => `${plan}:${p.interval}:${p.currency}:${p.amount}:${p.cycles ?? 'always'}`;

/** Creates the provider product and any billing plan the offer's prices still lack (idempotent keys). */
async function ensureProviderPlans(ctx: Ctx, o: IOffer, provider: PaymentProvider) {
  const refs = { productId: o.provider.productId, plans: { ...o.provider.plans } };
  await withProvider(async () => {
    refs.productId ??= (
      await provider.createProduct(
        { name: o.name, description: o.description ?? undefined },
        `${ctx.app.id}:${o.id}:product`,
      )
    ).id;
    const plans = await plansById(
      ctx.em,
      ctx.app.id,
      o.plans.map((p) => p.plan),
    );
    for (const [i, p] of o.plans.entries()) {
      // Deleted since the offer was checked (a delete racing the publish): the same 404 the check gives.
      const plan = plans.get(p.plan);
      if (!plan) throw missingReference(`plans.${i}.plan: plan ${p.plan} does not exist`);
      for (const price of p.prices) {
        const key = providerPlanKey(p.plan, price);
        if (refs.plans[key]) continue;
        const regular = regularPrice(plan, price.interval, price.currency);
        const terms = price.cycles
          ? { price: regular!, introPrice: price.amount, introCycles: price.cycles }
          : { price: price.amount };
        refs.plans[key] = (
          await provider.createPlan(
            {
              productId: refs.productId!,
              name: `${o.name}: ${plan.name} (${price.interval}ly)`,
              interval: price.interval,
              currency: price.currency,
              ...terms,
            },
            `${ctx.app.id}:${o.id}:${key}`,
          )
        ).id;
      }
    }
  });
  o.provider = refs;
}

/** Edits apply to future purchases only; for a live offer, new prices get their provider plans now. */
export async function updateOffer(ctx: Ctx, id: string, input: OfferFields) {
  const o = await findOffer(ctx.em, ctx.app.id, id);
  const plans = input.plans ? normalizePlans(input.plans) : o.plans;
  const bumps = (input.bumps as OfferBump[] | undefined) ?? o.bumps;
  await validate(ctx, {
    plans,
    bumps,
    fallback: input.fallback === undefined ? o.fallbackOfferId : input.fallback,
    id,
  });
  if (input.name !== undefined) o.name = input.name;
  if (input.description !== undefined) o.description = input.description;
  o.plans = plans;
  o.bumps = bumps;
  if (input.starts_at !== undefined) o.startsAt = input.starts_at;
  if (input.expires_at !== undefined) o.expiresAt = input.expires_at;
  if (input.fallback !== undefined) o.fallbackOfferId = input.fallback;
  if (o.status === 'active') {
    await ensureProviderPlans(ctx, o, (await requireProvider(ctx)).provider);
    await flushSelling(ctx, o);
  } else await ctx.em.flush();
  return getOffer(ctx, id);
}

/** Creates the provider's billing plans and makes the offer active. Needs the provider connected (409). */
export async function publishOffer(ctx: Ctx, id: string) {
  const o = await findOffer(ctx.em, ctx.app.id, id);
  if (o.status === 'archived') throw conflict(`Offer ${id} is archived`, { reason: 'archived' });
  // What the draft points at may have gone since it was saved (a plan, an add-on): a 400 naming it, before the
  // provider is asked for anything.
  await validate(ctx, { plans: o.plans, bumps: o.bumps, fallback: o.fallbackOfferId, id });
  const { provider } = await requireProvider(ctx);
  await ensureProviderPlans(ctx, o, provider);
  if (o.status !== 'active') {
    o.status = 'active';
    o.publishedAt = new Date();
  }
  await flushSelling(ctx, o);
  return getOffer(ctx, id);
}

/**
 * Saves an active offer with the plans it sells locked (`for key share`) until the commit: a plan being deleted
 * meanwhile (which locks its row `for update`, src/catalog/catalog.service.ts) either went first, and this is a 400
 * naming it, or waits for this commit and then sees the offer selling it (409). A live offer never sells a plan
 * that is gone.
 */
async function flushSelling(ctx: Ctx, o: IOffer) {
  await ctx.em.transactional(async (em) => {
    const ids = [...new Set(o.plans.map((p) => p.plan))];
    const held = new Set(
      (
        await sql<{ id: string }>(
          em,
          'select id from plans where app_id = $1 and id = any($2::text[]) order by id for key share',
          [ctx.app.id, ids],
        )
      ).map((r) => r.id),
    );
    const i = o.plans.findIndex((p) => !held.has(p.plan));
    if (i >= 0) throw missingReference(`plans.${i}.plan: plan ${o.plans[i].plan} does not exist`);
    // The add-ons it sells as order bumps likewise (deleteAddon locks its row `for update`).
    if (o.bumps.length) {
      const addons = new Set(
        (
          await sql<{ id: string }>(
            em,
            'select id from addons where app_id = $1 and id = any($2::text[]) order by id for key share',
            [ctx.app.id, [...new Set(o.bumps.map((b) => b.addon))]],
          )
        ).map((r) => r.id),
      );
      const j = o.bumps.findIndex((b) => !addons.has(b.addon));
      if (j >= 0) throw missingReference(`bumps.${j}.addon: add-on ${o.bumps[j].addon} does not exist`);
    }
    await em.flush();
  });
}

/** No new purchases; existing buyers keep their price and extras. */
export async function archiveOffer(ctx: Ctx, id: string) {
  const o = await findOffer(ctx.em, ctx.app.id, id);
  if (o.status !== 'archived') {
    o.status = 'archived';
    o.archivedAt = new Date();
    await ctx.em.flush();
  }
  return getOffer(ctx, id);
}

/** Removes the offer record; buyers keep their price and extras (their checkouts hold the terms). */
/**
 * Deletes an offer, and in the same transaction every pointer at it: offers falling back to it lose their fallback,
 * entitlements whose 402 upgrade came from it lose their `overage.offer_id` (the upgrade then uses regular prices,
 * as it did while the offer was not live). Otherwise a later offer created with the same id would silently take
 * its place in both.
 */
export async function deleteOffer(ctx: Ctx, id: string) {
  const o = await findOffer(ctx.em, ctx.app.id, id);
  const view = presentOffer(o);
  await ctx.em.transactional(async (em) => {
    const args = [ctx.app.id, id];
    await sql(em, 'update offers set fallback_offer_id = null where app_id = $1 and fallback_offer_id = $2', args);
    await sql(em, 'update entitlements set overage_offer_id = null where app_id = $1 and overage_offer_id = $2', args);
    await em.nativeDelete(Offer, { appId: ctx.app.id, id });
  });
  return view;
}
