// Events to deliveries: the webhooks' subscriber to published events (wired in src/runtime.ts). One
// pending delivery and one workflow start (outbox) per subscribed enabled endpoint, in the event's
// transaction.
import type { Tx } from '../db/transaction.js';
import { sql } from '../db/sql.js';
import type { Deps } from '../deps.js';
import type { IEvent } from '../events/events.entities.js';
import { presentEvent } from '../events/events.present.js';
import type { EventSubscriber } from '../events/publish.js';
import { newId } from '../ids.js';
import { deliveryCommand } from './deliveries.service.js';
import { WebhookDelivery } from './webhooks.entities.js';

/**
 * Creates a pending delivery, and its workflow start, for every enabled endpoint of the app that
 * subscribes to the event's type (or to `*`). Runs in the event's transaction.
 */
export async function fanOut(t: Tx, deps: Pick<Deps, 'config'>, event: IEvent): Promise<number> {
  const endpoints = await sql<{ id: string; url: string }>(
    t.em,
    `select id, url from webhook_endpoints where app_id = $1 and enabled and (events @> '["*"]'::jsonb or events @>
      jsonb_build_array($2::text)) order by created_at`,
    [event.appId, event.type],
  );
  const now = new Date();
  for (const ep of endpoints) {
    const d = t.em.create(WebhookDelivery, {
      id: newId('delivery'),
      appId: event.appId,
      endpointId: ep.id,
      eventId: event.id,
      eventType: event.type,
      status: 'pending',
      attempts: 0,
      nextAttemptAt: now,
      test: false,
      payload: presentEvent(event),
      createdAt: now,
      updatedAt: now,
    });
    t.temporal(deliveryCommand(deps, d, ep.url));
  }
  return endpoints.length;
}

/** The fan-out as a subscriber to published events. */
export const webhookFanOut =
  (deps: Pick<Deps, 'config'>): EventSubscriber =>
  (t, event) =>
    fanOut(t, deps, event);
