// Incentives (an offer's extra limits and add-ons for a while): list, read, create, update, delete.
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { flushOrConflict } from '../db/conflict.js';
import { type Tx } from '../db/transaction.js';
import { conflict } from '../errors.js';
import { Incentive, type IIncentive } from './catalog.entities.js';
import type * as S from './catalog.schemas.js';
import { presentIncentive } from './catalog.present.js';
import { accountsUsing, deleteLinks, insertLink, LINKS, readLinks } from './catalog.links.js';
import { changeRecord, findIncentive, incentiveView, requireAll } from './catalog.lookups.js';
import { tx } from './catalog.lookups.js';

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

export const changeIncentive = (ctx: Ctx, id: string, change: (t: Tx, inc: IIncentive) => Promise<void>) =>
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
