// Add-ons: list, read, create, update, delete.
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { flushOrConflict } from '../db/conflict.js';
import { conflict } from '../errors.js';
import { Addon } from './catalog.entities.js';
import type * as S from './catalog.schemas.js';
import { presentAddon } from './catalog.present.js';
import { LINKS, ownersOf } from './catalog.links.js';
import { findAddon } from './catalog.lookups.js';
import { tx } from './catalog.lookups.js';

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
