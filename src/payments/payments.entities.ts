import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** An app's connection to its payment provider. */
export const PaymentConnection = defineEntity({
  name: 'PaymentConnection',
  tableName: 'payment_connections',
  properties: {
    appId: p.string().primary(),
    provider: p.string().default('paypal'),
    env: p.string().$type<'sandbox' | 'live'>(),
    clientId: p.string(),
    clientSecret: p.text(),
    webhookId: p.string().nullable(),
    webhookUrl: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type IPaymentConnection = InferEntity<typeof PaymentConnection>;
