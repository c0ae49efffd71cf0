// One attempt of a delivery made by the delivery's workflow instead of inside the request: what an MCP task of
// `retry_webhook_delivery` or `send_test_event` follows (src/mcp/tasks.ts). The row is pending and the workflow's
// start is in the outbox in one transaction; the attempt is the workflow's last (no further retries), as the
// routes' own attempt is, and its result is recorded on the row as theirs is.
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { eventSchema } from '../events/events.schemas.js';
import { conflict, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { asRestart } from '../temporal/outbox.js';
import { deliveryCommand, endpointOf, reload } from './deliveries.service.js';
import { WebhookDelivery, WebhookEndpoint, type IWebhookEndpoint } from './webhooks.entities.js';

/**
 * A finished delivery sent once more by its workflow (a new run under the delivery's id): the row goes back to
 * `pending` in one compare-and-set (a delivery still pending is the route's 409), and the attempt is numbered after
 * the ones made. To a disabled endpoint the attempt fails with `Endpoint disabled` and sends nothing, as the route's.
 */
export async function retryByWorkflow(ctx: Ctx, endpointId: string, deliveryId: string) {
  const e = await endpointOf(ctx.em, ctx.app.id, endpointId);
  const d = await ctx.em.findOne(WebhookDelivery, { id: deliveryId, endpointId });
  if (!d) throw notFound(`Delivery ${deliveryId}`);
  await inTransaction(ctx.deps, ctx.deps.orm.em.fork(), async (t) => {
    const [row] = await sql<{ attempts: number }>(
      t.em,
      `update webhook_deliveries set status = 'pending', next_attempt_at = now(), updated_at = now()
        where id = $1 and endpoint_id = $2 and status <> 'pending' returning attempts`,
      [deliveryId, endpointId],
    );
    if (!row) throw conflict(`Delivery ${deliveryId} is still being delivered`);
    // Attempt n+1 at once and as the last: the schedule has n delays before it (none is waited).
    t.temporal(
      asRestart(
        deliveryCommand(ctx.deps, d, e.url, {
          startAttempt: row.attempts + 1,
          firstDelayMs: 0,
          scheduleMs: new Array<number>(row.attempts).fill(0),
        }),
      ),
    );
  });
  return reload(ctx, deliveryId);
}

/**
 * A test delivery (`test: true`, never in the event log or the stats) made pending and sent once by its workflow:
 * even to a disabled endpoint, and a 410 does not disable it (the attempt reads the row's `test`).
 */
export async function testByWorkflow(
  ctx: Ctx,
  e: IWebhookEndpoint,
  payload: z.input<typeof eventSchema> & { test: true },
) {
  const id = newId('delivery');
  await inTransaction(ctx.deps, ctx.deps.orm.em.fork(), async (t) => {
    const now = new Date(payload.created_at);
    t.em.create(WebhookDelivery, {
      id,
      appId: ctx.app.id,
      endpointId: e.id,
      eventId: payload.id,
      eventType: payload.type,
      status: 'pending',
      attempts: 0,
      nextAttemptAt: now,
      test: true,
      payload,
      createdAt: now,
      updatedAt: now,
    });
    await t.em.flush();
    t.temporal(
      deliveryCommand(ctx.deps, { id, appId: ctx.app.id, endpointId: e.id, eventType: payload.type }, e.url, {
        scheduleMs: [],
      }),
    );
  });
  return reload(ctx, id);
}

/** A delivery of the app's endpoint and the endpoint's URL (an MCP task reads its state); null when gone. */
export async function deliveryWithUrl(ctx: Ctx, endpointId: string, deliveryId: string) {
  const d = await ctx.em.findOne(WebhookDelivery, { id: deliveryId, endpointId, appId: ctx.app.id });
  if (!d) return null;
  const e = await ctx.em.findOne(WebhookEndpoint, { id: endpointId, appId: ctx.app.id });
  return { delivery: d, url: e?.url ?? null };
}
