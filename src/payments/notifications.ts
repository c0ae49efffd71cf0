import { z } from 'zod';
import { Checkout } from '../checkouts/checkouts.entities.js';
import { notFound, unauthorized } from '../errors.js';
import { route } from '../http/route.js';
import { boundedCall, REQUEST_TEMPORAL_TIMEOUT_MS } from '../temporal/client.js';
import { checkoutDef, checkoutWorkflowId } from '../../workflows/shared.js';
import { Subscription } from '../subscriptions/subscriptions.entities.js';
import { actorFact } from '../subscriptions/actor-facts.js';
import { inTransaction } from '../db/transaction.js';
import { recordTimeline } from '../timeline/timeline.service.js';
import { PaymentConnection } from './payments.entities.js';
import { asHttpError, providerFor, withProvider } from './payments.service.js';
import { packNotification } from '../credits/packs-payments.service.js';

/**
 * Provider notifications: verified with the provider (a forged one is 401 and changes nothing),
 * then mapped onto what they concern. A subscription's activation wakes its checkout's workflow,
 * which re-reads the provider and applies the purchase once.
 */
export const notificationRoutes = [
  route({
    method: 'POST',
    path: '/payments/webhooks/:appId',
    throttle: ['provider-notification'],
    sdk: 'payments.notify',
    auth: ['N'],
    tags: ['Payment provider'],
    summary: 'Payment provider notifications',
    description:
      'Verified with the provider; 401 when it does not vouch for the notification. Past NOTIFICATION_FAILURE_LIMIT ' +
      'failed verifications from an address, 429 with Retry-After before the provider is asked (the provider sends ' +
      'a refused notification again).',
    errors: [401],
    // The provider's word, not a caller's write: a read-only app (the demo) still learns that a checkout its admin
    // opened was approved. The handler verifies the notification with the provider before it changes anything.
    readOnlyExempt: async () => true,
    params: z.object({ appId: z.string() }),
    body: z.looseObject({ id: z.string().optional(), event_type: z.string(), resource: z.looseObject({}).optional() }),
    response: z.object({ received: z.literal(true) }),
    handler: async ({ em, deps, app, body, headers, rawBody }) => {
      if (!app) throw notFound('App');
      const conn = await em.findOne(PaymentConnection, { appId: app.id });
      if (!conn?.webhookId) throw notFound('Payment provider connection');
      const provider = providerFor(deps.config, conn);
      // Verify the notification as received (key order included), not as re-built by validation.
      const received = rawBody ? (JSON.parse(rawBody) as unknown) : body;
      const genuine = await withProvider(() =>
        provider.verifyNotification({ headers, body: received, webhookId: conn.webhookId! }),
      );
      if (!genuine) throw unauthorized();
      // A credit pack's order: approved (capture it), captured (grant), refunded (take back). A failure answers 5xx,
      // so PayPal sends the notification again; each step is once-only, so a repeat changes nothing twice.
      await packNotification(deps, app.id, body.event_type, (body.resource ?? {}) as Record<string, unknown>).catch(
        (err: unknown) => {
          throw asHttpError(err);
        },
      );
      const resource = (body.resource ?? {}) as { id?: string; billing_agreement_id?: string; custom_id?: string };
      const subscriptionId = body.event_type.startsWith('BILLING.SUBSCRIPTION.')
        ? resource.id
        : resource.billing_agreement_id;
      const checkout = subscriptionId
        ? await em.findOne(Checkout, { appId: app.id, providerSubscriptionId: subscriptionId })
        : null;
      if (checkout && checkout.status === 'created') {
        // A finished workflow needs no nudge; one that Temporal cannot reach now checks by itself on its schedule.
        await boundedCall(deps.temporal.connection, REQUEST_TEMPORAL_TIMEOUT_MS, () =>
          deps.temporal.client.workflow
            .getHandle(checkoutWorkflowId(checkout.id))
            .signal(checkoutDef.signals.providerNotified),
        ).catch(() => undefined);
      }
      // An applied subscription: the fact is recorded (the account's timeline) and handed to the account's actor
      // through the outbox in the same transaction, so it is not lost while Temporal is away; the actor re-reads the
      // provider and applies what changed.
      const subscription = subscriptionId
        ? await em.findOne(Subscription, { appId: app.id, providerSubscriptionId: subscriptionId })
        : null;
      if (subscription)
        await inTransaction(deps, em, async (t) => {
          await recordTimeline(t.em, {
            appId: app.id,
            accountId: subscription.accountId,
            kind: 'fact',
            type: `provider.${body.event_type}`.slice(0, 255),
            summary: `The provider notified ${body.event_type}`,
            by: { kind: 'system', id: null, name: 'provider' },
            data: { notification_id: body.id ?? null },
          });
          t.temporal(
            actorFact(app.id, subscription.accountId, {
              kind: 'provider_notified',
              eventType: body.event_type,
              notificationId: body.id ?? null,
            }),
          );
        });
      return { received: true as const };
    },
  }),
];
