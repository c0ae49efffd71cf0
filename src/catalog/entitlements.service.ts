// Entitlements (booleans, usage limits, credit pools and what draws from them): list, read, create, update, delete.
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { flushOrConflict } from '../db/conflict.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { Entitlement } from './catalog.entities.js';
import type * as S from './catalog.schemas.js';
import { presentEntitlement } from './catalog.present.js';
import { LINKS, ownersOf } from './catalog.links.js';
import { findEntitlement } from './catalog.lookups.js';
import { sql } from '../db/sql.js';

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
    if (input.per !== undefined)
      throw badRequest('credits: `per` belongs to a pool (an entitlement of type `credits`)');
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
  const out: { creditRolloverCap?: number | null; creditPerEntity?: boolean } = {};
  if (input.rollover !== undefined) out.creditRolloverCap = input.rollover === 'none' ? null : input.rollover.cap;
  if (input.per !== undefined) out.creditPerEntity = input.per === 'entity';
  return out;
}

/**
 * `per` is a usage entitlement's (a pool says it in `credits.per`); the seats counter is the account's own (it counts
 * the entities, it is not kept per entity).
 */
function perRule(type: string, per: 'account' | 'entity' | undefined, counting: boolean) {
  if (per === undefined) return;
  if (type !== 'usage')
    throw badRequest(
      `per: only a usage entitlement is counted per entity${type === 'credits' ? ' (a pool says it in `credits.per`)' : ''}`,
    );
  if (per === 'entity' && counting)
    throw badRequest('per: the entitlement that counts entities (`counts: "entities"`) is the account\'s own counter');
}

/** Flushes; the one-per-app index of `counts: "entities"` and any other clash are 409s saying which. */
async function flushCounting(ctx: Ctx, other: string, counting: boolean) {
  try {
    await flushOrConflict(ctx.em, other);
  } catch (err) {
    const e = err as { status?: number };
    if (e.status !== 409 || !counting) throw err;
    const [c] = await sql<{ id: string }>(
      ctx.em.fork(),
      'select id from entitlements where app_id = $1 and counts_entities',
      [ctx.app.id],
    );
    if (c) throw conflict(`counts: entitlement ${c.id} already counts the entities (one entitlement per app does)`);
    throw err;
  }
}

export async function createEntitlement(ctx: Ctx, input: z.output<typeof S.createEntitlementBody>) {
  if (input.type === 'credits' && input.overage)
    throw badRequest('overage: a credits pool has no overage; a draw it cannot cover is refused with 402');
  const credits = input.credits ? await creditFields(ctx, input, input.credits) : {};
  if (input.counts && input.type !== 'usage')
    throw badRequest('counts: only a usage entitlement counts entities (the seats)');
  perRule(input.type, input.per, input.counts === 'entities');
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
    countsEntities: input.counts === 'entities',
    usagePerEntity: input.per === 'entity',
    ...credits,
  });
  await flushCounting(ctx, `Entitlement ${input.id} already exists`, input.counts === 'entities');
  return presentEntitlement(e);
}

export async function updateEntitlement(ctx: Ctx, id: string, input: z.output<typeof S.updateEntitlementBody>) {
  const e = await findEntitlement(ctx.em, ctx.app.id, id);
  if (input.overage !== undefined && e.type === 'credits')
    throw badRequest('overage: a credits pool has no overage; a draw it cannot cover is refused with 402');
  const credits = input.credits !== undefined ? await creditFields(ctx, e, input.credits) : {};
  if (input.counts && e.type !== 'usage')
    throw badRequest('counts: only a usage entitlement counts entities (the seats)');
  perRule(
    e.type,
    input.per ?? (e.usagePerEntity ? 'entity' : undefined),
    input.counts === undefined ? e.countsEntities : input.counts === 'entities',
  );
  // Whose counters a usage entitlement keeps is not switched under counters it already has (as a pool's balances).
  if (input.per !== undefined && (input.per === 'entity') !== e.usagePerEntity) {
    const [held] = await sql<{ n: string }>(
      ctx.em,
      'select count(*) as n from usage_counters where app_id = $1 and entitlement_id = $2',
      [ctx.app.id, id],
    );
    if (Number(held.n) > 0)
      throw conflict(
        `per: entitlement ${id} already has ${held.n} counter(s) kept per ${e.usagePerEntity ? 'entity' : 'account'}; ` +
          'make a new entitlement instead',
        { counters: Number(held.n) },
      );
  }
  // Whose balance a pool keeps is not switched under balances it already has: they would belong to no one.
  const per = 'creditPerEntity' in credits ? credits.creditPerEntity : undefined;
  if (per !== undefined && per !== e.creditPerEntity) {
    const [held] = await sql<{ n: string; packs: string }>(
      ctx.em,
      `select (select count(*) from credit_balances where app_id = $1 and pool_id = $2) as n,
              (select count(*) from credit_packs where app_id = $1 and pool_id = $2) as packs`,
      [ctx.app.id, id],
    );
    if (Number(held.n) > 0)
      throw conflict(
        `credits.per: pool ${id} already has ${held.n} balance(s) kept per ${e.creditPerEntity ? 'entity' : 'account'}; ` +
          'make a new pool instead',
        { balances: Number(held.n) },
      );
    if (per && Number(held.packs) > 0)
      throw conflict(
        `credits.per: pool ${id} has top-up packs, which top up per-account pools only; delete them first`,
      );
  }
  if (input.name !== undefined) e.name = input.name;
  if (input.description !== undefined) e.description = input.description;
  if (input.overage !== undefined) {
    e.overageMode = input.overage.mode;
    e.overageOfferId = input.overage.offer_id ?? null;
  }
  if (input.counts !== undefined) e.countsEntities = input.counts === 'entities';
  if (input.per !== undefined) e.usagePerEntity = input.per === 'entity';
  Object.assign(e, credits);
  await flushCounting(ctx, `Entitlement ${id} changed meanwhile`, input.counts === 'entities');
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
