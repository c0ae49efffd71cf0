import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { OfferProviderRefs } from '../offers/offers.entities.js';

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
    /** The provider product and billing plans for regular prices (plan checkouts, plan changes). */
    providerRefs: p.json<OfferProviderRefs>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IPaymentConnection = InferEntity<typeof PaymentConnection>;
