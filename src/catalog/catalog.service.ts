import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { flushOrConflict } from '../db/conflict.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import { changedFields } from '../events/events.service.js';
import { badRequest, conflict, notFound } from '../errors.js';
import {
  Addon,
  Entitlement,
  Incentive,
  Plan,
  type IAddon,
  type IEntitlement,
  type IIncentive,
  type IPlan,
  type PricingCard,
} from './catalog.entities.js';
import type * as S from './catalog.schemas.js';
import { META_BYTES } from './catalog.schemas.js';
import {
  presentPricingCard,
  presentPlan,
  presentEntitlement,
  presentAddon,
  presentIncentive,
} from './catalog.present.js';
import type { Limit } from './catalog.present.js';

// ---- link tables (plan/incentive -> entitlement/add-on), shared by plans and incentives ----------

const LINKS = {
  planEntitlements: { table: 'plan_entitlements', owner: 'plan_id', ref: 'entitlement_id', limit: true },
  planAddons: { table: 'plan_addons', owner: 'plan_id', ref: 'addon_id', limit: false },
  incentiveEntitlements: { table: 'incentive_entitlements', owner: 'incentive_id', ref: 'entitlement_id', limit: true },
  incentiveAddons: { table: 'incentive_addons', owner: 'incentive_id', ref: 'addon_id', limit: false },
} as const;
type Link = (typeof LINKS)[keyof typeof LINKS];

/** owner id -> its links in attach order. */
async function readLinks(
  em: EntityManager,
  link: Link,
  appId: string,
  ownerIds?: string[],
): Promise<Map<string, Limit[]>> {
  // An empty list would be `in ()`, which PostgreSQL rejects.
  if (ownerIds && ownerIds.length === 0) return new Map();
  const rows = await em.execute<{ owner: string; ref: string; max: string | null }[]>(
    `select ${link.owner} as owner, ${link.ref} as ref, ${link.limit ? 'max' : 'null as max'} from ${link.table}
      where app_id = ? ${ownerIds ? `and ${link.owner} in (?)` : ''} order by seq`,
    ownerIds ? [appId, ownerIds] : [appId],
  );
  const out = new Map<string, Limit[]>();
  for (const r of rows) {
    const list = out.get(r.owner) ?? [];
    list.push({ id: r.ref, max: r.max === null ? null : Number(r.max) });
    out.set(r.owner, list);
  }
  return out;
}

async function insertLink(
  em: EntityManager,
  link: Link,
  appId: string,
  owner: string,
  ref: string,
  max: number | null,
): Promise<boolean> {
  const res = await em.execute<{ affectedRows: number }>(
    `insert into ${link.table} (app_id, ${link.owner}, ${link.ref}${link.limit ? ', max' : ''})
      values (?, ?, ?${link.limit ? ', ?' : ''}) on conflict do nothing`,
    link.limit ? [appId, owner, ref, max] : [appId, owner, ref],
    'run',
  );
  return res.affectedRows === 1;
}

async function updateLinkMax(
  em: EntityManager,
  link: Link,
  appId: string,
  owner: string,
  ref: string,
  max: number | null,
): Promise<boolean> {
  const res = await em.execute<{ affectedRows: number }>(
    `update ${link.table} set max = ? where app_id = ? and ${link.owner} = ? and ${link.ref} = ?`,
    [max, appId, owner, ref],
    'run',
  );
  return res.affectedRows === 1;
}

async function deleteLinks(em: EntityManager, link: Link, appId: string, owner: string, ref?: string): Promise<number> {
  const res = await em.execute<{ affectedRows: number }>(
    `delete from ${link.table} where app_id = ? and ${link.owner} = ?${ref ? ` and ${link.ref} = ?` : ''}`,
    ref ? [appId, owner, ref] : [appId, owner],
    'run',
  );
  return res.affectedRows;
}

/** Owners (plans or incentives) that reference a record, for the 409 of a delete. */
async function ownersOf(em: EntityManager, link: Link, appId: string, ref: string): Promise<string[]> {
  const rows = await em.execute<{ owner: string }[]>(
    `select ${link.owner} as owner from ${link.table} where app_id = ? and ${link.ref} = ? order by seq`,
    [appId, ref],
  );
  return rows.map((r) => r.owner);
}

async function accountsUsing(
  em: EntityManager,
  appId: string,
  column: 'plan_id' | 'incentive_id',
  id: string,
): Promise<number> {
  const rows = await em.execute<{ n: string }[]>(
    `select count(*) as n from accounts where app_id = ? and ${column} = ?`,
    [appId, id],
  );
  return Number(rows[0].n);
}

// ---- lookups --------------------------------------------------------------------------------------

export async function findPlan(em: EntityManager, appId: string, id: string): Promise<IPlan> {
  const plan = await em.findOne(Plan, { appId, id });
  if (!plan) throw notFound(`Plan ${id}`);
  return plan;
}
export async function findEntitlement(em: EntityManager, appId: string, id: string): Promise<IEntitlement> {
  const e = await em.findOne(Entitlement, { appId, id });
  if (!e) throw notFound(`Entitlement ${id}`);
  return e;
}
export async function findAddon(em: EntityManager, appId: string, id: string): Promise<IAddon> {
  const a = await em.findOne(Addon, { appId, id });
  if (!a) throw notFound(`Add-on ${id}`);
  return a;
}
export async function findIncentive(em: EntityManager, appId: string, id: string): Promise<IIncentive> {
  const i = await em.findOne(Incentive, { appId, id });
  if (!i) throw notFound(`Incentive ${id}`);
  return i;
}

/** Every id must exist in the app's catalog; the first missing one is a 404 naming it. */
async function requireAll(
  em: EntityManager,
  appId: string,
  kind: 'entitlements' | 'addons',
  ids: string[],
): Promise<void> {
  if (ids.length === 0) return;
  const rows = await em.execute<{ id: string }[]>(`select id from ${kind} where app_id = ? and id in (?)`, [
    appId,
    [...new Set(ids)],
  ]);
  const have = new Set(rows.map((r) => r.id));
  const missing = ids.find((id) => !have.has(id));
  if (missing !== undefined) throw notFound(`${kind === 'entitlements' ? 'Entitlement' : 'Add-on'} ${missing}`);
}

// ---- presenters -------------------------------------------------------------------------------------

export type PlanView = ReturnType<typeof presentPlan>;

async function planView(em: EntityManager, plan: IPlan): Promise<PlanView> {
  const [ents, addons] = await Promise.all([
    readLinks(em, LINKS.planEntitlements, plan.appId, [plan.id]),
    readLinks(em, LINKS.planAddons, plan.appId, [plan.id]),
  ]);
  return presentPlan(
    plan,
    ents.get(plan.id) ?? [],
    (addons.get(plan.id) ?? []).map((a) => a.id),
  );
}

async function incentiveView(em: EntityManager, inc: IIncentive) {
  const [ents, addons] = await Promise.all([
    readLinks(em, LINKS.incentiveEntitlements, inc.appId, [inc.id]),
    readLinks(em, LINKS.incentiveAddons, inc.appId, [inc.id]),
  ]);
  return presentIncentive(
    inc,
    ents.get(inc.id) ?? [],
    (addons.get(inc.id) ?? []).map((a) => a.id),
  );
}

/** `previous` for an update event: changed fields only, timestamps left out. */
function previousOf<T extends { updated_at: string }>(before: T, after: T): Partial<T> {
  const { updated_at: _a, ...b } = before;
  const { updated_at: _b, ...a } = after;
  return changedFields(b as Record<string, unknown>, a as Record<string, unknown>) as Partial<T>;
}

const tx = <T>(ctx: Ctx, fn: (t: Tx) => Promise<T>) => inTransaction(ctx.deps, ctx.em, fn);

// ---- plans ------------------------------------------------------------------------------------------

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

/**
 * Runs a change to a catalog record in one transaction and emits `<kind>.updated` with the object
 * after the change and, in `previous`, the old values of the fields it changed (nothing when none did).
 */
function changeRecord<R, V extends { updated_at: string }>(
  ctx: Ctx,
  eventType: string,
  load: (em: EntityManager) => Promise<R>,
  view: (em: EntityManager, record: R) => Promise<V>,
  change: (t: Tx, record: R) => Promise<void>,
): Promise<V> {
  return tx(ctx, async (t) => {
    const record = await load(t.em);
    const before = await view(t.em, record);
    await change(t, record);
    await t.em.flush();
    const after = await view(t.em, record);
    const previous = previousOf(before, after);
    if (Object.keys(previous).length > 0) t.emit(ctx.app.id, eventType, { object: after, previous });
    return after;
  });
}

const changePlan = (ctx: Ctx, id: string, change: (t: Tx, plan: IPlan) => Promise<void>) =>
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

// ---- entitlements -----------------------------------------------------------------------------------

export async function listEntitlements(ctx: Ctx) {
  return (await ctx.em.find(Entitlement, { appId: ctx.app.id }, { orderBy: { seq: 'asc' } })).map(presentEntitlement);
}

export async function getEntitlement(ctx: Ctx, id: string) {
  return presentEntitlement(await findEntitlement(ctx.em, ctx.app.id, id));
}

type CreditsInput = z.output<typeof S.creditsInput>;

/**
 * What `credits` sets on an entitlement of this type, checked: a usage entitlement draws from an existing pool at a
 * cost (both given), a pool has a rollover and a `per`; nothing else takes `credits` (400). `null` stops a usage
 * entitlement drawing.
 */
async function creditFields(ctx: Ctx, e: { id: string; type: string }, input: CreditsInput | null) {
  if (input === null) {
    if (e.type !== 'usage') throw badRequest(`credits: only a usage entitlement stops drawing with null`);
    return { creditPoolId: null, creditCost: null };
  }
  if (e.type === 'boolean') throw badRequest('credits: a boolean entitlement neither is a pool nor draws from one');
  if (e.type === 'usage') {
    if (input.rollover !== undefined)
      throw badRequest('credits: `rollover` belongs to a pool (an entitlement of type `credits`)');
    if (input.pool === undefined || input.cost === undefined)
      throw badRequest('credits: a usage entitlement that draws from a pool needs both `pool` and `cost`');
    if (input.pool === e.id) throw badRequest('credits.pool: an entitlement cannot draw from itself');
    const pool = await ctx.em.findOne(Entitlement, { appId: ctx.app.id, id: input.pool });
    if (!pool) throw notFound(`Credits pool ${input.pool}`);
    if (pool.type !== 'credits')
      throw badRequest(`credits.pool: entitlement ${input.pool} is of type ${pool.type}, not a credits pool`);
    return { creditPoolId: input.pool, creditCost: input.cost };
  }
  if (input.pool !== undefined || input.cost !== undefined)
    throw badRequest('credits: `pool` and `cost` belong to a usage entitlement that draws from a pool');
  const out: { creditRolloverCap?: number | null } = {};
  if (input.rollover !== undefined) out.creditRolloverCap = input.rollover === 'none' ? null : input.rollover.cap;
  return out;
}

export async function createEntitlement(ctx: Ctx, input: z.output<typeof S.createEntitlementBody>) {
  if (input.type === 'credits' && input.overage)
    throw badRequest('overage: a credits pool has no overage; a draw it cannot cover is refused with 402');
  const credits = input.credits ? await creditFields(ctx, input, input.credits) : {};
  const e = ctx.em.create(Entitlement, {
    appId: ctx.app.id,
    id: input.id,
    type: input.type,
    name: input.name,
    description: input.description ?? null,
    overageMode: input.overage?.mode ?? 'allow',
    overageOfferId: input.overage?.offer_id ?? null,
    creditPoolId: null,
    creditCost: null,
    creditRolloverCap: null,
    creditPerEntity: false,
    ...credits,
  });
  await flushOrConflict(ctx.em, `Entitlement ${input.id} already exists`);
  return presentEntitlement(e);
}

export async function updateEntitlement(ctx: Ctx, id: string, input: z.output<typeof S.updateEntitlementBody>) {
  const e = await findEntitlement(ctx.em, ctx.app.id, id);
  if (input.overage !== undefined && e.type === 'credits')
    throw badRequest('overage: a credits pool has no overage; a draw it cannot cover is refused with 402');
  const credits = input.credits !== undefined ? await creditFields(ctx, e, input.credits) : {};
  if (input.name !== undefined) e.name = input.name;
  if (input.description !== undefined) e.description = input.description;
  if (input.overage !== undefined) {
    e.overageMode = input.overage.mode;
    e.overageOfferId = input.overage.offer_id ?? null;
  }
  Object.assign(e, credits);
  await ctx.em.flush();
  return presentEntitlement(e);
}

/**
 * An entitlement still on a plan or an incentive is not deleted (409 naming them), nor a pool that features draw
 * from (409 naming them); its counters (a pool: its balances, grants and ledger) go with it.
 */
export async function deleteEntitlement(ctx: Ctx, id: string) {
  const e = await findEntitlement(ctx.em, ctx.app.id, id);
  const [plans, incentives, drawing] = await Promise.all([
    ownersOf(ctx.em, LINKS.planEntitlements, ctx.app.id, id),
    ownersOf(ctx.em, LINKS.incentiveEntitlements, ctx.app.id, id),
    e.type === 'credits'
      ? ctx.em
          .find(Entitlement, { appId: ctx.app.id, creditPoolId: id }, { orderBy: { seq: 'asc' } })
          .then((r) => r.map((d) => d.id))
      : Promise.resolve([] as string[]),
  ]);
  if (plans.length || incentives.length) {
    throw conflict(
      `Entitlement ${id} is still attached (plans: ${plans.join(', ') || 'none'}; incentives: ` +
        `${incentives.join(', ') || 'none'}); detach it first`,
      {
        plans,
        incentives,
      },
    );
  }
  if (drawing.length)
    throw conflict(
      `Credits pool ${id} is drawn from by ${drawing.join(', ')}; stop them drawing first ` +
        '(PATCH the entitlement with `"credits": null`) or delete them',
      { features: drawing },
    );
  try {
    await ctx.em.nativeDelete(Entitlement, { appId: ctx.app.id, id });
  } catch (err) {
    // A feature started drawing from the pool after the check above: the foreign key refuses.
    if ((err as { code?: string }).code === '23503')
      throw conflict(`Credits pool ${id} is drawn from by a feature; stop it drawing first`);
    throw err;
  }
  return presentEntitlement(e);
}

// ---- add-ons ------------------------------------------------------------------------------------------

export async function listAddons(ctx: Ctx) {
  return (await ctx.em.find(Addon, { appId: ctx.app.id }, { orderBy: { seq: 'asc' } })).map(presentAddon);
}

export async function getAddon(ctx: Ctx, id: string) {
  return presentAddon(await findAddon(ctx.em, ctx.app.id, id));
}

export async function createAddon(ctx: Ctx, input: z.output<typeof S.createAddonBody>) {
  const a = ctx.em.create(Addon, {
    appId: ctx.app.id,
    id: input.id,
    name: input.name,
    description: input.description ?? null,
  });
  await flushOrConflict(ctx.em, `Add-on ${input.id} already exists`);
  return presentAddon(a);
}

export async function updateAddon(ctx: Ctx, id: string, input: z.output<typeof S.updateAddonBody>) {
  const a = await findAddon(ctx.em, ctx.app.id, id);
  if (input.name !== undefined) a.name = input.name;
  if (input.description !== undefined) a.description = input.description;
  await ctx.em.flush();
  return presentAddon(a);
}

/** An add-on on a plan or incentive, or owned by accounts, is not deleted (409 naming them). */
export function deleteAddon(ctx: Ctx, id: string) {
  return tx(ctx, async (t) => {
    const a = await findAddon(t.em, ctx.app.id, id);
    // Locked until the commit, as a plan is (deletePlan): an offer published or a checkout recorded with it as an
    // order bump holds it `for key share`, so either went first and is seen below, or finds it gone.
    await t.em.execute('select 1 from addons where app_id = ? and id = ? for update', [ctx.app.id, id]);
    const [plans, incentives, owners] = await Promise.all([
      ownersOf(t.em, LINKS.planAddons, ctx.app.id, id),
      ownersOf(t.em, LINKS.incentiveAddons, ctx.app.id, id),
      t.em.execute<{ n: string }[]>('select count(*) as n from account_addons where app_id = ? and addon_id = ?', [
        ctx.app.id,
        id,
      ]),
    ]);
    const accounts = Number(owners[0].n);
    if (plans.length || incentives.length || accounts) {
      throw conflict(
        `Add-on ${id} is still in use (plans: ${plans.join(', ') || 'none'}; incentives: ` +
          `${incentives.join(', ') || 'none'}; accounts owning it: ${accounts}); remove it there ` +
          `first`,
        { plans, incentives, accounts },
      );
    }
    // Sold as an order bump by a live offer or a checkout still waiting for its buyer: paid after the delete, the
    // bump's order would be captured and the purchase then fail to apply (the add-on to grant is gone).
    const bump = JSON.stringify([{ addon: id }]);
    const [offers, checkouts] = await Promise.all([
      t.em.execute<{ id: string }[]>(
        `select id from offers where app_id = ? and status = 'active' and bumps @> ?::jsonb order by seq`,
        [ctx.app.id, bump],
      ),
      t.em.execute<{ id: string }[]>(
        `select id from checkouts where app_id = ? and status = 'created' and bumps @> ?::jsonb order by created_at, id`,
        [ctx.app.id, bump],
      ),
    ]);
    if (offers.length || checkouts.length)
      throw conflict(
        `Add-on ${id} is sold as an order bump (active offers: ${offers.map((r) => r.id).join(', ') || 'none'}; ` +
          `open checkouts: ${checkouts.map((r) => r.id).join(', ') || 'none'}); take it out of the offers or ` +
          'archive them; expire the checkouts (POST .../checkouts/:checkoutId/expire) or wait until they complete or ' +
          'expire (24 hours)',
        { offers: offers.map((r) => r.id), checkouts: checkouts.map((r) => r.id) },
      );
    await t.em.nativeDelete(Addon, { appId: ctx.app.id, id });
    return presentAddon(a);
  });
}

// ---- incentives ---------------------------------------------------------------------------------------

export async function listIncentives(ctx: Ctx) {
  const list = await ctx.em.find(Incentive, { appId: ctx.app.id }, { orderBy: { seq: 'asc' } });
  const [ents, addons] = await Promise.all([
    readLinks(ctx.em, LINKS.incentiveEntitlements, ctx.app.id),
    readLinks(ctx.em, LINKS.incentiveAddons, ctx.app.id),
  ]);
  return list.map((i) =>
    presentIncentive(
      i,
      ents.get(i.id) ?? [],
      (addons.get(i.id) ?? []).map((a) => a.id),
    ),
  );
}

export async function getIncentive(ctx: Ctx, id: string) {
  return incentiveView(ctx.em, await findIncentive(ctx.em, ctx.app.id, id));
}

async function replaceIncentiveLinks(
  t: Tx,
  appId: string,
  id: string,
  input: { entitlements?: { id: string; max?: number | null }[]; addons?: string[] },
) {
  if (input.entitlements) {
    await requireAll(
      t.em,
      appId,
      'entitlements',
      input.entitlements.map((e) => e.id),
    );
    await deleteLinks(t.em, LINKS.incentiveEntitlements, appId, id);
    for (const e of input.entitlements)
      await insertLink(t.em, LINKS.incentiveEntitlements, appId, id, e.id, e.max ?? null);
  }
  if (input.addons) {
    await requireAll(t.em, appId, 'addons', input.addons);
    await deleteLinks(t.em, LINKS.incentiveAddons, appId, id);
    for (const a of input.addons) await insertLink(t.em, LINKS.incentiveAddons, appId, id, a, null);
  }
}

export function createIncentive(ctx: Ctx, input: z.output<typeof S.createIncentiveBody>) {
  return tx(ctx, async (t) => {
    const inc = t.em.create(Incentive, {
      appId: ctx.app.id,
      id: input.id,
      name: input.name,
      description: input.description ?? null,
    });
    await flushOrConflict(t.em, `Incentive ${input.id} already exists`);
    await replaceIncentiveLinks(t, ctx.app.id, input.id, input);
    const view = await incentiveView(t.em, inc);
    t.emit(ctx.app.id, 'incentive.created', { object: view });
    return view;
  });
}

const changeIncentive = (ctx: Ctx, id: string, change: (t: Tx, inc: IIncentive) => Promise<void>) =>
  changeRecord(ctx, 'incentive.updated', (em) => findIncentive(em, ctx.app.id, id), incentiveView, change);

export function updateIncentive(ctx: Ctx, id: string, input: z.output<typeof S.updateIncentiveBody>) {
  return changeIncentive(ctx, id, async (t, inc) => {
    if (input.name !== undefined) inc.name = input.name;
    if (input.description !== undefined) inc.description = input.description;
    await replaceIncentiveLinks(t, ctx.app.id, id, input);
  });
}

export function deleteIncentive(ctx: Ctx, id: string) {
  return tx(ctx, async (t) => {
    const inc = await findIncentive(t.em, ctx.app.id, id);
    const accounts = await accountsUsing(t.em, ctx.app.id, 'incentive_id', id);
    if (accounts > 0)
      throw conflict(`Incentive ${id} is applied to ${accounts} account(s); remove it from them first`, { accounts });
    const view = await incentiveView(t.em, inc);
    await t.em.nativeDelete(Incentive, { appId: ctx.app.id, id });
    t.emit(ctx.app.id, 'incentive.deleted', { object: view });
    return view;
  });
}

// ---- links: what a plan or an incentive grants (entitlements with a limit, add-ons) -----------------

/** The owners of links: how each is changed (one `*.updated` event) and named in messages. */
const OWNERS = {
  plan: { change: changePlan, links: { entitlement: LINKS.planEntitlements, addon: LINKS.planAddons } },
  incentive: {
    change: changeIncentive,
    links: { entitlement: LINKS.incentiveEntitlements, addon: LINKS.incentiveAddons },
  },
} as const;
export type LinkOwner = keyof typeof OWNERS;
/** What a link operation answers: the owner as the spec shows it. */
type OwnerView<O extends LinkOwner> = Awaited<ReturnType<(typeof OWNERS)[O]['change']>>;
const changeOwner = <O extends LinkOwner>(ctx: Ctx, owner: O, id: string, change: (t: Tx) => Promise<void>) =>
  OWNERS[owner].change(ctx, id, change) as Promise<OwnerView<O>>;
export type LinkTarget = 'entitlement' | 'addon';

const TARGETS = {
  entitlement: { find: findEntitlement, noun: 'Entitlement' },
  addon: { find: findAddon, noun: 'Add-on' },
} as const;

/** The 409 of a second attach: an incentive's entitlement link is an override of the plan's limit. */
const alreadyLinked = (owner: LinkOwner, target: LinkTarget, ref: string, ownerId: string) =>
  owner === 'incentive' && target === 'entitlement'
    ? `Entitlement ${ref} already has an override on incentive ${ownerId}`
    : `${TARGETS[target].noun} ${ref} is already on ${owner} ${ownerId}`;

/** Attaches an entitlement (with its limit, null for unlimited) or an add-on to a plan or an incentive. */
export function attachLink<O extends LinkOwner>(
  ctx: Ctx,
  owner: O,
  ownerId: string,
  target: LinkTarget,
  ref: string,
  max: number | null = null,
): Promise<OwnerView<O>> {
  return changeOwner(ctx, owner, ownerId, async (t) => {
    await TARGETS[target].find(t.em, ctx.app.id, ref);
    if (!(await insertLink(t.em, OWNERS[owner].links[target], ctx.app.id, ownerId, ref, max)))
      throw conflict(alreadyLinked(owner, target, ref, ownerId));
  });
}

/** Changes the limit of an entitlement on a plan or an incentive. */
export function setLinkLimit<O extends LinkOwner>(
  ctx: Ctx,
  owner: O,
  ownerId: string,
  entitlementId: string,
  max: number | null,
): Promise<OwnerView<O>> {
  return changeOwner(ctx, owner, ownerId, async (t) => {
    if (!(await updateLinkMax(t.em, OWNERS[owner].links.entitlement, ctx.app.id, ownerId, entitlementId, max)))
      throw notFound(`Entitlement ${entitlementId} on ${owner} ${ownerId}`);
  });
}

/** Detaches an entitlement or an add-on from a plan or an incentive. */
export function detachLink<O extends LinkOwner>(
  ctx: Ctx,
  owner: O,
  ownerId: string,
  target: LinkTarget,
  ref: string,
): Promise<OwnerView<O>> {
  return changeOwner(ctx, owner, ownerId, async (t) => {
    if (!(await deleteLinks(t.em, OWNERS[owner].links[target], ctx.app.id, ownerId, ref)))
      throw notFound(`${TARGETS[target].noun} ${ref} on ${owner} ${ownerId}`);
  });
}

/** plan id -> its entitlement limits (attach order), for the plans given. */
export function planEntitlementLimits(
  em: EntityManager,
  appId: string,
  planIds: string[],
): Promise<Map<string, Limit[]>> {
  return readLinks(em, LINKS.planEntitlements, appId, planIds);
}
