// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { type IAddon, type IEntitlement, type IIncentive, type IPlan } from './catalog.entities.js';
import type * as S from './catalog.schemas.js';
import { iso } from '../time.js';

export const stamps = (r: { createdAt: Date; updatedAt: Date }) => ({
  created_at: iso(r.createdAt)!,
  updated_at: iso(r.updatedAt)!,
});

export function presentPricingCard(plan: IPlan): z.input<typeof S.pricingCardSchema> | null {
  if (!plan.pricingCard) return null;
  return {
    ...plan.pricingCard,
    plan_id: plan.id,
    title: plan.pricingCard.title ?? plan.name,
    isFree: plan.pricingCard.isFree ?? plan.isFree,
  };
}

export function presentPlan(plan: IPlan, entitlements: Limit[], addons: string[]): z.input<typeof S.planSchema> {
  return {
    id: plan.id,
    name: plan.name,
    description: plan.description ?? null,
    note: plan.note ?? null,
    isFree: plan.isFree,
    pricingCard: presentPricingCard(plan),
    meta: plan.meta ?? {},
    privateMetaKeys: plan.privateMetaKeys ?? [],
    entitlements,
    addons,
    ...stamps(plan),
  };
}

export function presentEntitlement(e: IEntitlement): z.input<typeof S.entitlementSchema> {
  return {
    id: e.id,
    type: e.type,
    name: e.name,
    description: e.description ?? null,
    overage: { mode: e.overageMode, offer_id: e.overageOfferId ?? null },
    credits: presentEntitlementCredits(e),
    counts: e.countsEntities ? 'entities' : null,
    per: e.type === 'usage' ? (e.usagePerEntity ? 'entity' : 'account') : null,
    ...stamps(e),
  };
}

export function presentEntitlementCredits(e: IEntitlement): z.input<typeof S.entitlementCreditsSchema> | null {
  if (e.type === 'credits')
    return {
      rollover:
        e.creditRolloverCap === null || e.creditRolloverCap === undefined
          ? 'none'
          : { cap: Number(e.creditRolloverCap) },
      per: e.creditPerEntity ? 'entity' : 'account',
    };
  if (e.creditPoolId) return { pool: e.creditPoolId, cost: Number(e.creditCost) };
  return null;
}

export function presentAddon(a: IAddon): z.input<typeof S.addonSchema> {
  return { id: a.id, name: a.name, description: a.description ?? null, ...stamps(a) };
}

export function presentIncentive(
  i: IIncentive,
  entitlements: Limit[],
  addons: string[],
): z.input<typeof S.incentiveSchema> {
  return { id: i.id, name: i.name, description: i.description ?? null, entitlements, addons, ...stamps(i) };
}

export interface Limit {
  id: string;
  max: number | null;
}
