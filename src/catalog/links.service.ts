// What a plan or an incentive grants: attaching, re-limiting and detaching entitlements and add-ons (each one
// `*.updated` event of the owner), and a plan's limits per entitlement.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Ctx } from '../context.js';
import { type Tx } from '../db/transaction.js';
import { conflict, notFound } from '../errors.js';
import type { Limit } from './catalog.present.js';
import { deleteLinks, insertLink, LINKS, readLinks, updateLinkMax } from './catalog.links.js';
import { findAddon, findEntitlement } from './catalog.lookups.js';
import { changePlan } from './plans.service.js';
import { changeIncentive } from './incentives.service.js';

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
