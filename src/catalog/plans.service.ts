// Plans: list, read, create, update, merge metadata, delete; the pricing cards read from them.
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { flushOrConflict } from '../db/conflict.js';
import { type Tx } from '../db/transaction.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { Plan, type IPlan, type PricingCard } from './catalog.entities.js';
import type * as S from './catalog.schemas.js';
import { META_BYTES } from './catalog.schemas.js';
import { presentPricingCard, presentPlan } from './catalog.present.js';
import { accountsUsing, LINKS, readLinks } from './catalog.links.js';
import { changeRecord, findPlan, planView, type PlanView } from './catalog.lookups.js';
import { tx } from './catalog.lookups.js';

export async function listPlans(ctx: Ctx): Promise<PlanView[]> {
  const plans = await ctx.em.find(Plan, { appId: ctx.app.id }, { orderBy: { seq: 'asc' } });
  const [ents, addons] = await Promise.all([
    readLinks(ctx.em, LINKS.planEntitlements, ctx.app.id),
    readLinks(ctx.em, LINKS.planAddons, ctx.app.id),
  ]);
  return plans.map((p) =>
    presentPlan(
      p,
      ents.get(p.id) ?? [],
      (addons.get(p.id) ?? []).map((a) => a.id),
    ),
  );
}

export async function getPlan(ctx: Ctx, id: string): Promise<PlanView> {
  return planView(ctx.em, await findPlan(ctx.em, ctx.app.id, id));
}

export async function listPricingCards(ctx: Ctx) {
  const plans = await ctx.em.find(Plan, { appId: ctx.app.id, pricingCard: { $ne: null } }, { orderBy: { seq: 'asc' } });
  return plans.map((p) => presentPricingCard(p)!);
}

export async function getPricingCard(ctx: Ctx, id: string) {
  const card = presentPricingCard(await findPlan(ctx.em, ctx.app.id, id));
  if (!card) throw notFound(`Pricing card of plan ${id}`);
  return card;
}

export function createPlan(ctx: Ctx, input: z.output<typeof S.createPlanBody>): Promise<PlanView> {
  return tx(ctx, async (t) => {
    const plan = t.em.create(Plan, {
      appId: ctx.app.id,
      id: input.id,
      name: input.name,
      description: input.description ?? null,
      note: input.note ?? null,
      isFree: input.isFree ?? false,
      pricingCard: (input.pricingCard ?? null) as PricingCard | null,
      meta: input.meta ?? {},
      privateMetaKeys: input.privateMetaKeys ?? [],
    });
    await flushOrConflict(t.em, `Plan ${input.id} already exists`);
    const view = presentPlan(plan, [], []);
    t.emit(ctx.app.id, 'plan.created', { object: view });
    return view;
  });
}

export const changePlan = (ctx: Ctx, id: string, change: (t: Tx, plan: IPlan) => Promise<void>) =>
  changeRecord(ctx, 'plan.updated', (em) => findPlan(em, ctx.app.id, id), planView, change);

export function updatePlan(ctx: Ctx, id: string, input: z.output<typeof S.updatePlanBody>): Promise<PlanView> {
  return changePlan(ctx, id, async (_t, plan) => {
    if (input.name !== undefined) plan.name = input.name;
    if (input.description !== undefined) plan.description = input.description;
    if (input.note !== undefined) plan.note = input.note;
    if (input.isFree !== undefined) plan.isFree = input.isFree;
    if (input.pricingCard !== undefined) plan.pricingCard = input.pricingCard as PricingCard | null;
    if (input.meta !== undefined) plan.meta = input.meta;
    if (input.privateMetaKeys !== undefined) plan.privateMetaKeys = input.privateMetaKeys;
  });
}

export function mergePlanMeta(ctx: Ctx, id: string, patch: Record<string, unknown>): Promise<PlanView> {
  return changePlan(ctx, id, async (_t, plan) => {
    const meta = { ...(plan.meta ?? {}) };
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete meta[k];
      else meta[k] = v;
    }
    // Each patch is bounded by its schema; the merged whole must stay within the same size.
    if (Buffer.byteLength(JSON.stringify(meta)) > META_BYTES)
      throw badRequest(`meta: must be at most ${META_BYTES} bytes as JSON (after merging)`);
    plan.meta = meta;
  });
}

export function deletePlan(ctx: Ctx, id: string) {
  return tx(ctx, async (t) => {
    const plan = await findPlan(t.em, ctx.app.id, id);
    // The plan's row is locked until the commit: an offer being published with it (which holds it `for key share`,
    // src/offers/offers.service.ts) either went first, and is seen below, or waits and then finds it gone.
    await t.em.execute('select 1 from plans where app_id = ? and id = ? for update', [ctx.app.id, id]);
    const accounts = await accountsUsing(t.em, ctx.app.id, 'plan_id', id);
    if (accounts > 0)
      throw conflict(`Plan ${id} has ${accounts} account(s); move them to another plan first`, { accounts });
    // A live offer selling it would sell a plan that is gone (its checkout has nothing to grant): take it out of the
    // offer, or archive the offer, first. Drafts and archived offers do not stop it (publishing a draft checks again).
    const selling = (
      await t.em.execute<{ id: string }[]>(
        `select id from offers where app_id = ? and status = 'active' and plans @> ?::jsonb order by seq`,
        [ctx.app.id, JSON.stringify([{ plan: id }])],
      )
    ).map((r) => r.id);
    if (selling.length > 0)
      throw conflict(
        `Plan ${id} is sold by active offer(s) ${selling.join(', ')}; take the plan out of them or archive them first`,
        { offers: selling },
      );
    // A checkout still waiting for its buyer sells it too (a plan's own checkout, or one of an offer archived since):
    // paid after the delete, it would charge the buyer for a plan that is gone and fail to apply. Checkouts hold
    // the plan `for key share` while they are recorded (src/checkouts/checkouts.service.ts), so one racing this
    // delete either is seen here or finds the plan gone.
    const open = (
      await t.em.execute<{ id: string }[]>(
        `select id from checkouts where app_id = ? and plan_id = ? and status = 'created' order by created_at, id`,
        [ctx.app.id, id],
      )
    ).map((r) => r.id);
    if (open.length > 0)
      throw conflict(
        `Plan ${id} has open checkout(s) ${open.join(', ')} a buyer may still pay; expire them ` +
          '(POST .../checkouts/:checkoutId/expire) or wait until they complete or expire (24 hours)',
        { checkouts: open },
      );
    // A plan change waiting for its buyer's approval (or approved for the next renewal) moves a subscription to it:
    // approved after the delete, PayPal would bill the new plan while the change could not apply here.
    const changing = (
      await t.em.execute<{ account_id: string }[]>(
        `select account_id from subscriptions where app_id = ? and pending_change->>'plan' = ? order by account_id`,
        [ctx.app.id, id],
      )
    ).map((r) => r.account_id);
    if (changing.length > 0)
      throw conflict(
        `Plan ${id} is the target of plan change(s) waiting for account(s) ${changing.join(', ')}; wait until they ` +
          'are approved and applied, refused or expire',
        { pending_changes: changing },
      );
    // A paused subscription comes back to it when it resumes (the account waits on the free plan meanwhile); the
    // pause moves the account off the plan and records it to restore in one transaction, so one of the two checks
    // sees it.
    const paused = (
      await t.em.execute<{ account_id: string }[]>(
        `select account_id from subscriptions where app_id = ? and status = 'paused' and restore_plan_id = ?
          order by account_id`,
        [ctx.app.id, id],
      )
    ).map((r) => r.account_id);
    if (paused.length > 0)
      throw conflict(
        `Plan ${id} is where paused subscription(s) of account(s) ${paused.join(', ')} resume; wait until they ` +
          'resume or end',
        { paused },
      );
    const view = await planView(t.em, plan);
    await t.em.nativeDelete(Plan, { appId: ctx.app.id, id });
    t.emit(ctx.app.id, 'plan.deleted', { object: view });
    return view;
  });
}
