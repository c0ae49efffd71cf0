import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { EVENT_TYPES } from '../events/catalog.js';
import { presentEvent } from '../events/events.service.js';
import type { IEvent } from '../events/events.entities.js';
import { badRequest, conflict, notFound } from '../http/errors.js';
import { cursorAtSql, cursorPage } from '../http/pagination.js';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import { DELIVERY_STOP_SIGNAL, type AttemptReport } from '../../workflows/shared.js';
import { fanOut } from './fanout.js';
import { isDemoReceiverUrl } from './demo-receiver.js';
import { sendSigned, type AttemptResult } from './sender.js';
import { checkWebhookUrl, UrlPolicyError } from './url-policy.js';
import { WebhookDelivery, WebhookEndpoint, type IWebhookDelivery, type IWebhookEndpoint } from './webhooks.entities.js';
import type * as S from './webhooks.schemas.js';

export const MAX_ENDPOINTS_PER_APP = 25;
export const GONE_REASON = 'Endpoint returned 410 Gone';
export const DISABLED_ERROR = 'Endpoint disabled';

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

// ---- presenters ------------------------------------------------------------------------------------

interface Stats {
  total: number;
  succeeded: number;
  failed: number;
  pending: number;
  last_delivery_at: string | null;
  last_status: string | null;
  last_response_status: number | null;
}
const emptyStats = (): Stats => ({
  total: 0,
  succeeded: 0,
  failed: 0,
  pending: 0,
  last_delivery_at: null,
  last_status: null,
  last_response_status: null,
});

/** Delivery stats of the last 7 days (test sends left out), per endpoint. */
async function statsFor(em: EntityManager, appId: string, endpointIds: string[]): Promise<Map<string, Stats>> {
  const out = new Map<string, Stats>();
  if (!endpointIds.length) return out;
  const rows = await sql<{
    endpoint_id: string;
    total: string;
    succeeded: string;
    failed: string;
    pending: string;
    last_at: Date | null;
    last_status: string | null;
    last_response_status: number | null;
  }>(
    em,
    `with recent as (
       select * from webhook_deliveries
        where app_id = $1 and endpoint_id = any($2::text[]) and not test and created_at > now() - interval '7 days'),
     agg as (
       select endpoint_id, count(*) as total,
              count(*) filter (where status = 'succeeded') as succeeded,
              count(*) filter (where status = 'failed') as failed,
              count(*) filter (where status = 'pending') as pending
         from recent group by endpoint_id),
     last as (
       select distinct on (endpoint_id) endpoint_id, last_attempt_at, status, response_status
         from recent where last_attempt_at is not null order by endpoint_id, last_attempt_at desc)
     select agg.*, last.last_attempt_at as last_at, last.status as last_status, last.response_status as
       last_response_status
       from agg left join last using (endpoint_id)`,
    [appId, endpointIds],
  );
  for (const r of rows) {
    out.set(r.endpoint_id, {
      total: Number(r.total),
      succeeded: Number(r.succeeded),
      failed: Number(r.failed),
      pending: Number(r.pending),
      last_delivery_at: iso(r.last_at),
      last_status: r.last_status,
      last_response_status: r.last_response_status,
    });
  }
  return out;
}

export function presentEndpoint(
  e: IWebhookEndpoint,
  stats: Stats,
  withSecret: boolean,
): z.input<typeof S.endpointSchema> {
  return {
    id: e.id,
    app_id: e.appId,
    url: e.url,
    description: e.description ?? null,
    events: e.events,
    enabled: e.enabled,
    source: e.source,
    ...(withSecret ? { secret: e.secret } : {}),
    disabled_reason: e.disabledReason ?? null,
    created_at: iso(e.createdAt)!,
    updated_at: iso(e.updatedAt)!,
    stats,
  };
}

export function presentDelivery(d: IWebhookDelivery): z.input<typeof S.deliverySchema> {
  return {
    id: d.id,
    endpoint_id: d.endpointId,
    event_id: d.eventId,
    event_type: d.eventType,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: iso(d.nextAttemptAt),
    last_attempt_at: iso(d.lastAttemptAt),
    response_status: d.responseStatus ?? null,
    response_body: d.responseBody ?? null,
    error: d.error ?? null,
    duration_ms: d.durationMs ?? null,
    test: d.test,
    created_at: iso(d.createdAt)!,
    // Stored as presentEvent wrote it.
    payload: d.payload as z.input<typeof S.eventSchema>,
  };
}

// ---- endpoints -------------------------------------------------------------------------------------

async function findEndpoint(em: EntityManager, appId: string, id: string) {
  const e = await em.findOne(WebhookEndpoint, { appId, id });
  if (!e) throw notFound(`Webhook endpoint ${id}`);
  return e;
}

async function publicUrl(deps: Deps, url: string, appId: string): Promise<string> {
  // The demo workspace's built-in receiver (a loopback URL carrying a token only this service mints).
  if (isDemoReceiverUrl(url, appId, deps.adminKey)) return new URL(url).toString();
  try {
    return (
      await checkWebhookUrl(url, { allowPrivate: deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS, resolve: deps.resolve })
    ).toString();
  } catch (err) {
    if (err instanceof UrlPolicyError) throw badRequest(`url: ${err.message}`);
    throw err;
  }
}

export async function listEndpoints(ctx: Ctx) {
  const list = await ctx.em.find(WebhookEndpoint, { appId: ctx.app.id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  const stats = await statsFor(
    ctx.em,
    ctx.app.id,
    list.map((e) => e.id),
  );
  return list.map((e) => presentEndpoint(e, stats.get(e.id) ?? emptyStats(), false));
}

export async function getEndpoint(ctx: Ctx, id: string) {
  const e = await findEndpoint(ctx.em, ctx.app.id, id);
  const stats = await statsFor(ctx.em, ctx.app.id, [id]);
  return presentEndpoint(e, stats.get(id) ?? emptyStats(), true);
}

export async function createEndpoint(ctx: Ctx, input: z.output<typeof S.createEndpointBody>) {
  const url = await publicUrl(ctx.deps, input.url, ctx.app.id);
  return inTransaction(ctx.deps, ctx.em, async (t) => {
    // The app row lock serializes creates, so the limit holds under concurrency.
    await sql(t.em, 'select 1 from apps where id = $1 for update', [ctx.app.id]);
    const [{ n }] = await sql<{ n: string }>(t.em, 'select count(*) as n from webhook_endpoints where app_id = $1', [
      ctx.app.id,
    ]);
    if (Number(n) >= MAX_ENDPOINTS_PER_APP)
      throw conflict(`An app can have at most ${MAX_ENDPOINTS_PER_APP} webhook endpoints`);
    const e = t.em.create(WebhookEndpoint, {
      id: newId('webhook'),
      appId: ctx.app.id,
      url,
      description: input.description ?? null,
      events: input.events,
      enabled: input.enabled ?? true,
      source: input.source ?? 'custom',
      secret: newSecret(),
      disabledReason: null,
    });
    await t.em.flush();
    return presentEndpoint(e, emptyStats(), true);
  });
}

/**
 * Disables an endpoint (by PATCH or a 410): its pending deliveries fail at once with
 * `Endpoint disabled` and their workflows are told to stop waiting.
 */
async function disableEndpoint(t: Tx, e: IWebhookEndpoint, reason: string | null) {
  e.enabled = false;
  e.disabledReason = reason;
  await stopPendingDeliveries(t, e.id, DISABLED_ERROR);
}

async function stopPendingDeliveries(t: Tx, endpointId: string, error: string) {
  const stopped = await sql<{ id: string }>(
    t.em,
    `update webhook_deliveries set status = 'failed', error = $2, next_attempt_at = null, updated_at = now()
      where endpoint_id = $1 and status = 'pending' returning id`,
    [endpointId, error],
  );
  for (const d of stopped) t.temporal({ kind: 'signal', workflowId: d.id, signal: DELIVERY_STOP_SIGNAL, args: [] });
}

export async function updateEndpoint(ctx: Ctx, id: string, input: z.output<typeof S.updateEndpointBody>) {
  const url = input.url !== undefined ? await publicUrl(ctx.deps, input.url, ctx.app.id) : undefined;
  return inTransaction(ctx.deps, ctx.em, async (t) => {
    const e = await findEndpoint(t.em, ctx.app.id, id);
    if (url !== undefined) e.url = url;
    if (input.events !== undefined) e.events = input.events;
    if (input.description !== undefined) e.description = input.description;
    if (input.enabled === false && e.enabled) await disableEndpoint(t, e, null);
    if (input.enabled === true) {
      e.enabled = true;
      e.disabledReason = null;
    }
    await t.em.flush();
    const stats = await statsFor(t.em, ctx.app.id, [id]);
    // The spec shows the signing secret on create and single read only.
    return presentEndpoint(e, stats.get(id) ?? emptyStats(), false);
  });
}

/** Deletes the endpoint with its deliveries; waiting delivery workflows are told to stop. */
export async function deleteEndpoint(ctx: Ctx, id: string) {
  return inTransaction(ctx.deps, ctx.em, async (t) => {
    const e = await findEndpoint(t.em, ctx.app.id, id);
    const pending = await sql<{ id: string }>(
      t.em,
      `select id from webhook_deliveries where endpoint_id = $1 and status = 'pending'`,
      [id],
    );
    for (const d of pending) t.temporal({ kind: 'signal', workflowId: d.id, signal: DELIVERY_STOP_SIGNAL, args: [] });
    const view = presentEndpoint(e, emptyStats(), false);
    await t.em.nativeDelete(WebhookEndpoint, { id });
    return view;
  });
}

export async function regenerateSecret(ctx: Ctx, id: string) {
  const e = await findEndpoint(ctx.em, ctx.app.id, id);
  e.secret = newSecret();
  await ctx.em.flush();
  const stats = await statsFor(ctx.em, ctx.app.id, [id]);
  return presentEndpoint(e, stats.get(id) ?? emptyStats(), true);
}

// ---- fan-out: events to deliveries ---------------------------------------------------------------------

/**
 * Fans out events written by SQL (usage thresholds) whose fan-out is still to do. Called right after
 * such an event is written, and by the relay for any a crash left behind.
 */
export async function fanOutPending(deps: Deps, eventIds?: string[]): Promise<number> {
  return inTransaction(deps, deps.orm.em.fork(), async (t) => {
    const rows = await sql<{
      id: string;
      app_id: string;
      type: string;
      data: Record<string, unknown>;
      created_at: Date;
    }>(
      t.em,
      `select id, app_id, type, data, created_at from events
        where fanout_pending ${eventIds ? 'and id = any($1::text[])' : "and created_at < now() - interval '2 seconds'"}
        order by created_at limit 500 for update skip locked`,
      eventIds ? [eventIds] : [],
    );
    for (const r of rows) {
      await fanOut(t, deps, {
        id: r.id,
        appId: r.app_id,
        type: r.type,
        data: r.data,
        createdAt: r.created_at,
      } as IEvent);
    }
    if (rows.length)
      await sql(t.em, 'update events set fanout_pending = false where id = any($1::text[])', [rows.map((r) => r.id)]);
    return rows.length;
  });
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
}

async function loadForAttempt(em: EntityManager, deliveryId: string): Promise<DeliveryRow | undefined> {
  const [row] = await sql<DeliveryRow>(
    em,
    `select d.id, d.app_id, d.status, d.event_id, d.payload, d.endpoint_id, e.url, e.secret, e.enabled
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
    allowPrivate: deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS || isDemoReceiverUrl(row.url, row.app_id, deps.adminKey),
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
  const outcome: AttemptReport['outcome'] = result.ok ? 'succeeded' : gone || opts.final ? 'failed' : 'retry';
  const status = outcome === 'retry' ? 'pending' : outcome;
  const error = gone ? GONE_REASON : result.error;
  const update = (em: EntityManager) =>
    sql(
      em,
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
  if (!gone) await update(deps.orm.em.fork());
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
  if (!row.enabled) {
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

export async function listDeliveries(ctx: Ctx, endpointId: string, q: z.output<typeof S.deliveriesQuery>) {
  await findEndpoint(ctx.em, ctx.app.id, endpointId);
  const list = await ctx.em.find(
    WebhookDelivery,
    { endpointId, ...(q.status ? { status: q.status } : {}) },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: q.limit },
  );
  return { data: list.map(presentDelivery) };
}

async function reload(ctx: Ctx, id: string) {
  const d = await ctx.deps.orm.em.fork().findOne(WebhookDelivery, { id });
  if (!d) throw notFound(`Delivery ${id}`);
  return presentDelivery(d);
}

/**
 * One more attempt of a finished delivery, now, returning its result. To a disabled endpoint it
 * fails at once with `Endpoint disabled` and nothing is sent.
 */
export async function retryDelivery(ctx: Ctx, endpointId: string, deliveryId: string) {
  await findEndpoint(ctx.em, ctx.app.id, endpointId);
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
 * Sends a sample event of one type to the endpoint once, even when it is disabled. The payload has
 * `test: true`; it is not in the event log or the stats.
 */
export async function sendTestEvent(ctx: Ctx, endpointId: string, input: z.output<typeof S.testBody>) {
  const e = await findEndpoint(ctx.em, ctx.app.id, endpointId);
  const type = input.type ?? (e.events[0] === '*' || !e.events[0] ? 'account.created' : e.events[0]);
  const info = EVENT_TYPES.find((t) => t.type === type)!;
  const now = new Date();
  const event = { id: newId('event'), appId: ctx.app.id, type, data: info.sample(), createdAt: now } as IEvent;
  const d = ctx.em.create(WebhookDelivery, {
    id: newId('delivery'),
    appId: ctx.app.id,
    endpointId,
    eventId: event.id,
    eventType: type,
    status: 'pending',
    attempts: 0,
    nextAttemptAt: null,
    test: true,
    payload: presentEvent(event, { test: true }),
    createdAt: now,
    updatedAt: now,
  });
  await ctx.em.flush();
  const row: DeliveryRow = {
    id: d.id,
    app_id: ctx.app.id,
    status: 'pending',
    event_id: event.id,
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

// ---- event log ---------------------------------------------------------------------------------------------

export async function listEvents(ctx: Ctx, q: z.output<typeof S.eventsQuery>) {
  const params: unknown[] = [ctx.app.id, q.type ?? null, q.limit + 1];
  let after = '';
  if (q.cursor) {
    params.push(q.cursor.at, q.cursor.id);
    after = 'and (created_at, id) < ($4::timestamptz, $5::text)';
  }
  const rows = await sql<{
    id: string;
    app_id: string;
    type: string;
    data: Record<string, unknown>;
    created_at: Date;
    cursor_at: string;
  }>(
    ctx.em,
    `select id, app_id, type, data, created_at, ${cursorAtSql('created_at')} as cursor_at from events
      where app_id = $1 and created_at > now() - interval '30 days' and ($2::text is null or type = $2) ${after}
      order by created_at desc, id desc limit $3`,
    params,
  );
  const page = cursorPage(rows, q.limit, (r) => ({ at: r.cursor_at, id: r.id }));
  return {
    data: page.rows.map((r) =>
      presentEvent({ id: r.id, appId: r.app_id, type: r.type, data: r.data, createdAt: r.created_at } as IEvent),
    ),
    next_cursor: page.next_cursor,
  };
}
