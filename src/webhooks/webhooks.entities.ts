import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const WebhookEndpoint = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  properties: {
    id: p.string().primary(),
    appId: p.string(),
    url: p.text(),
    description: p.text().nullable(),
    events: p.json<string[]>(),
    enabled: p.boolean().default(true),
    source: p.string().default('custom'),
    secret: p.string(),
    disabledReason: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IWebhookEndpoint = InferEntity<typeof WebhookEndpoint>;

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  properties: {
    id: p.string().primary(),
    appId: p.string(),
    endpointId: p.string(),
    eventId: p.string(),
    eventType: p.string(),
    status: p.string().$type<DeliveryStatus>(),
    attempts: p.integer().default(0),
    nextAttemptAt: p.datetime().nullable(),
    lastAttemptAt: p.datetime().nullable(),
    responseStatus: p.integer().nullable(),
    responseBody: p.text().nullable(),
    error: p.text().nullable(),
    durationMs: p.integer().nullable(),
    test: p.boolean().default(false),
    payload: p.json<Record<string, unknown>>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type IWebhookDelivery = InferEntity<typeof WebhookDelivery>;
