import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const Org = defineEntity({
  name: 'Org',
  tableName: 'orgs',
  properties: {
    id: p.string().primary(),
    name: p.text().nullable(),
    appIds: p.json<string[]>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IOrg = InferEntity<typeof Org>;
