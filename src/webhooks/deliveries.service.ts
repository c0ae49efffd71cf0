// Delivery attempts: sending a delivery, recording each attempt, the manual retry, the test send, and
// what happens to pending deliveries when their endpoint stops taking them. The endpoint
// administration (endpoints.service.ts) calls into this module; this module never calls it back.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { prepared, sql } from '../db/sql.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import type { eventSchema } from '../events/events.schemas.js';
import { conflict, notFound } from '../errors.js';
import { newestFirstPage } from '../http/pagination.js';
import { newId } from '../ids.js';
import { outboxSignal, outboxStart, type TemporalCommand } from '../temporal/outbox.js';
import { webhookDeliveryDef, type AttemptReport, type WebhookDeliveryInput } from '../../workflows/shared.js';
import { sendSigned, type AttemptResult } from './sender.js';
import { WebhookDelivery, WebhookEndpoint, type IWebhookEndpoint } from './webhooks.entities.js';
import type * as S from './webhooks.schemas.js';
import { presentDelivery } from './webhooks.present.js';

export const GONE_REASON = 'Endpoint returned 410 Gone';
export const DISABLED_ERROR = 'Endpoint disabled';

// ---- the delivery workflow -------------------------------------------------------------------------

/** Starts the delivery's workflow (the delivery id is the workflow id); also the reconciler's restart. */
export function deliveryCommand(
  deps: Pick<Deps, 'config'>,
  d: { id: string; appId: string; endpointId: string; eventType: string },
  url: string,
  /**
   * A restarted delivery (the reconciler): the attempt to make next, after `firstDelayMs`; a single attempt asked
   * for (an MCP task) also gives the schedule that makes it the last (src/webhooks/attempts-by-workflow.ts).
   */
  resume?: Partial<Pick<WebhookDeliveryInput, 'startAttempt' | 'firstDelayMs' | 'scheduleMs'>>,
): TemporalCommand {
  const input: WebhookDeliveryInput = {
    deliveryId: d.id,
    appId: d.appId,
    endpointId: d.endpointId,
    eventType: d.eventType,
    url,
    scheduleMs: deps.config.WEBHOOK_RETRY_SCHEDULE_MS,
    ...(deps.config.ACTIVITY_RETRY_MAX_MS ? { retryMaxIntervalMs: deps.config.ACTIVITY_RETRY_MAX_MS } : {}),
    ...resume,
  };
  return outboxStart(webhookDeliveryDef, d.id, input, {
    searchAttributes: { AppId: d.appId, EndpointId: d.endpointId, EventType: d.eventType, DeliveryStatus: 'pending' },
    summary: `Webhook ${d.eventType} to ${url}`,
    details:
      `Delivers event of type \`${d.eventType}\` to endpoint ${d.endpointId} (${url}), ` +
      'retrying on the schedule until a 2xx, a 410, or the last attempt.',
  });
}

/** Tells a waiting delivery workflow to end without sending (its row already failed or is being deleted). */
const stopDeliveryCommand = (deliveryId: string): TemporalCommand =>
  outboxSignal(webhookDeliveryDef, deliveryId, webhookDeliveryDef.signals.stop);

/** The delivery routes live under their endpoint: 404 unless the app has it. */
export async function endpointOf(em: EntityManager, appId: string, id: string) {
  const e = await em.findOne(WebhookEndpoint, { appId, id });
  if (!e) throw notFound(`Webhook endpoint ${id}`);
  return e;
}

// ---- endpoints that stop taking deliveries --------------------------------------------------------

/**
 * Disables an endpoint (by PATCH or a 410): its pending deliveries fail at once with
 * `Endpoint disabled` and their workflows are told to stop waiting. Here, beside the attempts,
 * because an attempt answered 410 disables its endpoint; the administration's PATCH calls it too.
 */
export async function disableEndpoint(t: Tx, e: IWebhookEndpoint, reason: string | null) {
  e.enabled = false;
  e.disabledReason = reason;
  const stopped = await sql<{ id: string }>(
    t.em,
    `update webhook_deliveries set status = 'failed', error = $2, next_attempt_at = null, updated_at = now()
      where endpoint_id = $1 and status = 'pending' returning id`,
    [e.id, DISABLED_ERROR],
  );
  for (const d of stopped) t.temporal(stopDeliveryCommand(d.id));
}

/** The endpoint is being deleted (its deliveries with it): their waiting workflows are told to stop. */
export async function stopEndpointDeliveries(t: Tx, endpointId: string) {
  const pending = await sql<{ id: string }>(
    t.em,
    `select id from webhook_deliveries where endpoint_id = $1 and status = 'pending'`,
    [endpointId],
  );
  for (const d of pending) t.temporal(stopDeliveryCommand(d.id));
}

// ---- attempts --------------------------------------------------------------------------------------------

interface DeliveryRow {
  id: string;
  app_id: string;
  status: string;
  event_id: string;
  payload: Record<string, unknown>;
  url: string;
  secret: string;
  enabled: boolean;
  endpoint_id: string;
  /** A test send (`send_test_event`): sent even to a disabled endpoint, and a 410 does not disable it. */
  test?: boolean;
}

// Every attempt runs these two statements; named, each connection plans them once (`prepared`).
async function loadForAttempt(em: EntityManager, deliveryId: string): Promise<DeliveryRow | undefined> {
  const [row] = await prepared<DeliveryRow>(
    em,
    'webhook_attempt_load',
    `select d.id, d.app_id, d.status, d.event_id, d.payload, d.endpoint_id, e.url, e.secret, e.enabled, d.test
       from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id where d.id = $1`,
    [deliveryId],
  );
  return row;
}

function send(deps: Deps, row: DeliveryRow): Promise<AttemptResult> {
  return sendSigned({
    url: row.url,
    secret: row.secret,
    eventId: row.event_id,
    body: JSON.stringify(row.payload),
    allowPrivate: deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS || deps.demoReceiver?.accepts(row.url, row.app_id) === true,
    resolve: deps.resolve,
  });
}

/**
 * Records an attempt's result. `final` (last scheduled attempt, manual retry, test send) turns a
 * failure into `failed`; otherwise it stays `pending` until `nextAttemptAt`. A 410 fails the delivery
 * and disables the endpoint. Only a delivery still pending changes status (a disable may have
 * failed it meanwhile); setting `attempts` to the attempt number keeps a repeated activity idempotent.
 */
async function recordAttempt(
  deps: Deps,
  row: DeliveryRow,
  attempt: number,
  result: AttemptResult,
  opts: { final: boolean; nextAttemptAt: Date | null; force?: boolean },
): Promise<AttemptReport> {
  const gone = result.status === 410;
  // A test send never disables the endpoint, even on a 410 (as sendTestDelivery).
  const disables = gone && row.test !== true;
  const outcome: AttemptReport['outcome'] = result.ok ? 'succeeded' : gone || opts.final ? 'failed' : 'retry';
  const status = outcome === 'retry' ? 'pending' : outcome;
  const error = gone ? GONE_REASON : result.error;
  const update = (em: EntityManager) =>
    prepared(
      em,
      'webhook_attempt_record',
      `update webhook_deliveries
          set attempts = $2, last_attempt_at = now(), response_status = $3, response_body = $4, error = $5,
            duration_ms = $6,
              status = case when status = 'pending' or $9 then $7 else status end,
              next_attempt_at = case when $7 = 'pending' then $8::timestamptz else null end, updated_at = now()
        where id = $1`,
      [
        row.id,
        attempt,
        result.status,
        result.body,
        error,
        result.durationMs,
        status,
        opts.nextAttemptAt,
        opts.force ?? false,
      ],
    );
  if (!disables) await update(deps.orm.em.fork());
  else {
    // One transaction: this delivery fails, the endpoint is disabled, its other pending deliveries fail.
    await inTransaction(deps, deps.orm.em.fork(), async (t) => {
      await update(t.em);
      const endpoint = await t.em.findOne(WebhookEndpoint, { id: row.endpoint_id });
      if (endpoint?.enabled) {
        await disableEndpoint(t, endpoint, GONE_REASON);
        await t.em.flush();
      }
    });
  }
  return { outcome, attempt, error, responseStatus: result.status };
}

/** One scheduled attempt, run by the delivery workflow's activity. */
export async function attemptDelivery(
  deps: Deps,
  input: { deliveryId: string; attempt: number; final: boolean; nextDelayMs: number | null },
): Promise<AttemptReport> {
  const row = await loadForAttempt(deps.orm.em.fork(), input.deliveryId);
  if (!row) return { outcome: 'gone', attempt: input.attempt, error: 'Delivery deleted', responseStatus: null };
  if (row.status !== 'pending')
    return {
      outcome: row.status === 'succeeded' ? 'succeeded' : 'failed',
      attempt: input.attempt,
      error: null,
      responseStatus: null,
    };
  if (!row.enabled && row.test !== true) {
    await sql(
      deps.orm.em.fork(),
      `update webhook_deliveries set status = 'failed', error = $2, next_attempt_at = null, updated_at = now() where
        id = $1 and status = 'pending'`,
      [row.id, DISABLED_ERROR],
    );
    return { outcome: 'failed', attempt: input.attempt, error: DISABLED_ERROR, responseStatus: null };
  }
  // A retry of this attempt after the send went out but recording it failed (database down) records
  // the result it already has instead of sending again: one attempt of the schedule is one send.
  const key = `${input.deliveryId}:${input.attempt}`;
  let result = unrecordedSends.get(key);
  if (!result) {
    result = await send(deps, row);
    if (unrecordedSends.size >= 10_000) unrecordedSends.delete(unrecordedSends.keys().next().value!);
    unrecordedSends.set(key, result);
  }
  const nextAttemptAt = input.nextDelayMs === null ? null : new Date(Date.now() + input.nextDelayMs);
  const report = await recordAttempt(deps, row, input.attempt, result, { final: input.final, nextAttemptAt });
  unrecordedSends.delete(key);
  return report;
}

/** Results of sends made but not yet recorded, by `<delivery>:<attempt>` (this worker process only). */
const unrecordedSends = new Map<string, AttemptResult>();

// ---- deliveries: list, manual retry, test send --------------------------------------------------------------

/** The endpoint's deliveries, newest first, a page at a time (keyset on `created_at`, then the id), by status. */
export async function listDeliveries(ctx: Ctx, endpointId: string, q: z.output<typeof S.deliveriesQuery>) {
  await endpointOf(ctx.em, ctx.app.id, endpointId);
  const filters = { endpoint_id: endpointId, status: q.status };
  const page = await newestFirstPage<Record<string, unknown> & { id: string }>(
    ctx.em,
    'webhook_deliveries',
    '*',
    filters,
    q,
  );
  const waiting = await unstarted(
    ctx.em,
    page.rows.map((r) => r.id),
  );
  return {
    data: page.rows.map((row) => presentDelivery(ctx.em.map(WebhookDelivery, row), !waiting.has(row.id))),
    next_cursor: page.next_cursor,
  };
}

/** Of these deliveries, those whose workflow start still waits in the outbox (no workflow to link to yet). */
async function unstarted(em: EntityManager, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await sql<{ workflow_id: string }>(
    em,
    `select workflow_id from outbox where kind = 'start' and workflow_id = any($1)`,
    [ids],
  );
  return new Set(rows.map((r) => r.workflow_id));
}

export async function reload(ctx: Ctx, id: string) {
  const em = ctx.deps.orm.em.fork();
  const d = await em.findOne(WebhookDelivery, { id });
  if (!d) throw notFound(`Delivery ${id}`);
  return presentDelivery(d, !(await unstarted(em, [id])).has(id));
}

/**
 * One more attempt of a finished delivery, now, returning its result. To a disabled endpoint it
 * fails at once with `Endpoint disabled` and nothing is sent.
 */
export async function retryDelivery(ctx: Ctx, endpointId: string, deliveryId: string) {
  await endpointOf(ctx.em, ctx.app.id, endpointId);
  const d = await ctx.em.findOne(WebhookDelivery, { id: deliveryId, endpointId });
  if (!d) throw notFound(`Delivery ${deliveryId}`);
  if (d.status === 'pending') throw conflict(`Delivery ${deliveryId} is still being delivered`);
  const row = (await loadForAttempt(ctx.em, deliveryId))!;
  const attempt = d.attempts + 1;
  if (!row.enabled) {
    await sql(
      ctx.em,
      `update webhook_deliveries set status = 'failed', attempts = $2, error = $3, next_attempt_at = null, updated_at
        = now() where id = $1`,
      [deliveryId, attempt, DISABLED_ERROR],
    );
    return reload(ctx, deliveryId);
  }
  await recordAttempt(ctx.deps, row, attempt, await send(ctx.deps, row), {
    final: true,
    nextAttemptAt: null,
    force: true,
  });
  return reload(ctx, deliveryId);
}

/**
 * What `retryDelivery` would do, for an MCP dry run: the same lookups and refusals (404, 409 while pending), then a
 * sentence instead of the attempt. Reads only.
 */
export async function previewRetry(ctx: Ctx, endpointId: string, deliveryId: string): Promise<string> {
  const e = await endpointOf(ctx.em, ctx.app.id, endpointId);
  const d = await ctx.em.findOne(WebhookDelivery, { id: deliveryId, endpointId });
  if (!d) throw notFound(`Delivery ${deliveryId}`);
  if (d.status === 'pending') throw conflict(`Delivery ${deliveryId} is still being delivered`);
  const what = `delivery ${d.id} (${d.eventType}${d.test ? ', a test' : ''}, ${d.status} after ${d.attempts} attempt${
    d.attempts === 1 ? '' : 's'
  })`;
  if (!e.enabled)
    return `The endpoint ${e.id} is disabled: a retry would mark ${what} failed with "${DISABLED_ERROR}" at once and send nothing.`;
  return (
    `Would send ${what} to ${e.url} once more, signed with the endpoint's secret, as attempt ${d.attempts + 1} ` +
    'with no further retries, and answer the delivery with its result. A dry run does not make the call.'
  );
}

/**
 * Sends an event envelope marked `test: true` to the endpoint once, even when it is disabled, and
 * keeps it as a test delivery (never in the event log or the stats). A 410 does not disable the endpoint.
 */
export async function sendTestDelivery(
  ctx: Ctx,
  e: IWebhookEndpoint,
  payload: z.input<typeof eventSchema> & { test: true },
) {
  const now = new Date(payload.created_at);
  const d = ctx.em.create(WebhookDelivery, {
    id: newId('delivery'),
    appId: ctx.app.id,
    endpointId: e.id,
    eventId: payload.id,
    eventType: payload.type,
    status: 'pending',
    attempts: 0,
    nextAttemptAt: null,
    test: true,
    payload,
    createdAt: now,
    updatedAt: now,
  });
  await ctx.em.flush();
  const row: DeliveryRow = {
    id: d.id,
    app_id: ctx.app.id,
    status: 'pending',
    event_id: payload.id,
    payload: d.payload,
    endpoint_id: e.id,
    url: e.url,
    secret: e.secret,
    enabled: true,
  };
  const result = await send(ctx.deps, row);
  // A test send never disables the endpoint, even on a 410.
  await sql(
    ctx.em,
    `update webhook_deliveries set attempts = 1, last_attempt_at = now(), response_status = $2, response_body = $3,
      error = $4, duration_ms = $5, status = $6, updated_at = now() where id = $1`,
    [d.id, result.status, result.body, result.error, result.durationMs, result.ok ? 'succeeded' : 'failed'],
  );
  return reload(ctx, d.id);
}
