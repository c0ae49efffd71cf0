import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const AgentThread = defineEntity({
  name: 'AgentThread',
  tableName: 'agent_threads',
  properties: {
    appId: p.string().primary(),
    id: p.string().primary(),
    userId: p.text(),
    title: p.text().nullable(),
    messages: p.json<unknown[]>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IAgentThread = InferEntity<typeof AgentThread>;
