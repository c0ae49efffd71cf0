import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export type PlanChangePolicy = 'prorate_now' | 'at_renewal' | 'no_proration';

export const App = defineEntity({
  name: 'App',
  tableName: 'apps',
  properties: {
    id: p.string().primary(),
    name: p.text(),
    plan: p.text().nullable(),
    apiKey: p.string().unique(),
    publicKey: p.string().unique(),
    checkoutUrl: p.text().nullable(),
    /** How plan changes are billed per direction; null or a missing direction: the defaults. */
    planChangePolicy: p.json<{ upgrade?: PlanChangePolicy; downgrade?: PlanChangePolicy }>().nullable(),
    /** A read-only app (the demo workspace's): every write but the admin key's is refused (src/http/guard.ts). */
    readOnly: p.boolean().default(false),
    /** The test clock: the app's time is real time plus this (0 on live apps; only ever moves forward). */
    clockOffsetMs: p.bigint('number').default(0),
    /** What a failed renewal payment leads to: grace days, then `cancel` or `free_plan` (null: the defaults). */
    dunning: p.json<{ grace_days?: number; after?: 'cancel' | 'free_plan' }>().nullable(),
    /** The first request made with the publishable key (set once; the console's getting-started checklist). */
    publishableFirstUsedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IApp = InferEntity<typeof App>;
