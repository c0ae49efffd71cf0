// Finding catalog items of an app (404 when missing), the plan and incentive views the routes answer, and the
// change record (before and after) each update emits.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Ctx } from '../context.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import { changedFields } from '../events/events.service.js';
import { notFound } from '../errors.js';
import {
  Addon,
  Entitlement,
  Incentive,
  Plan,
  type IAddon,
  type IEntitlement,
  type IIncentive,
  type IPlan,
} from './catalog.entities.js';
import { presentPlan, presentIncentive } from './catalog.present.js';
import { LINKS, readLinks } from './catalog.links.js';

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
export async function requireAll(
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

export type PlanView = ReturnType<typeof presentPlan>;

export async function planView(em: EntityManager, plan: IPlan): Promise<PlanView> {
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

export async function incentiveView(em: EntityManager, inc: IIncentive) {
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
export function previousOf<T extends { updated_at: string }>(before: T, after: T): Partial<T> {
  const { updated_at: _a, ...b } = before;
  const { updated_at: _b, ...a } = after;
  return changedFields(b as Record<string, unknown>, a as Record<string, unknown>) as Partial<T>;
}

export const tx = <T>(ctx: Ctx, fn: (t: Tx) => Promise<T>) => inTransaction(ctx.deps, ctx.em, fn);

/**
 * Runs a change to a catalog record in one transaction and emits `<kind>.updated` with the object
 * after the change and, in `previous`, the old values of the fields it changed (nothing when none did).
 */
export function changeRecord<R, V extends { updated_at: string }>(
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
