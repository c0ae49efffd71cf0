import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const Report = defineEntity({
  name: 'Report',
  tableName: 'analytics_reports',
  properties: {
    id: p.string().primary(),
    appId: p.string(),
    name: p.text(),
    entitlements: p.json<string[]>().nullable(),
    interval: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IReport = InferEntity<typeof Report>;
