import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export interface OfferPrice {
  interval: 'month' | 'year';
  currency: string;
  /** The offer price per cycle. */
  amount: number;
  /** Cycles billed at `amount` before the plan's regular price; null: always. */
  cycles: number | null;
}
export interface OfferExtras {
  entitlements: { id: string; max: number | null }[];
  addons: string[];
  /** Cycles the extras last; null: while the subscription lasts. */
  cycles: number | null;
}
export interface OfferPlan {
  plan: string;
  prices: OfferPrice[];
  extras: OfferExtras;
}
export interface OfferBump {
  id: string;
  name: string;
  addon: string;
  price: number;
  currency: string;
}
/** Provider records created at publish: a product, and a billing plan per (plan, interval, currency, price). */
export interface OfferProviderRefs {
  productId: string | null;
  plans: Record<string, string>;
}

export const Offer = defineEntity({
  name: 'Offer',
  tableName: 'offers',
  properties: {
    appId: p.string().primary(),
    id: p.string().primary(),
    seq: p.bigint('number').autoincrement().generated('by default as identity'),
    kind: p.string().$type<'shareable' | 'targeted'>(),
    accountId: p.string().nullable(),
    name: p.text(),
    description: p.text().nullable(),
    status: p.string().$type<'draft' | 'active' | 'archived'>(),
    plans: p.json<OfferPlan[]>(),
    bumps: p.json<OfferBump[]>(),
    startsAt: p.datetime().nullable(),
    expiresAt: p.datetime().nullable(),
    fallbackOfferId: p.string().nullable(),
    provider: p.json<OfferProviderRefs>(),
    views: p.integer().default(0),
    publishedAt: p.datetime().nullable(),
    archivedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IOffer = InferEntity<typeof Offer>;
