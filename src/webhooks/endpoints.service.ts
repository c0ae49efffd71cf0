// Webhook endpoint administration: create, read, update, delete, the signing secret, the test send.
// What an endpoint change means for its deliveries (a disable fails them, a delete stops their
// workflows) and the sending itself are in deliveries.service.ts.
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { EVENT_TYPES } from '../events/event-types.js';
import type { IEvent } from '../events/events.entities.js';
import { presentEvent } from '../events/events.present.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import { disableEndpoint, sendTestDelivery, stopEndpointDeliveries } from './deliveries.service.js';
import { testByWorkflow } from './attempts-by-workflow.js';
import { checkWebhookUrl, UrlPolicyError } from './url-policy.js';
import { WebhookEndpoint } from './webhooks.entities.js';
import type * as S from './webhooks.schemas.js';
import { presentEndpoint } from './webhooks.present.js';
import type { Stats } from './webhooks.present.js';

export const MAX_ENDPOINTS_PER_APP = 25;

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

// ---- presenter -------------------------------------------------------------------------------------

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

// ---- endpoints -------------------------------------------------------------------------------------

async function findEndpoint(em: EntityManager, appId: string, id: string) {
  const e = await em.findOne(WebhookEndpoint, { appId, id });
  if (!e) throw notFound(`Webhook endpoint ${id}`);
  return e;
}

async function publicUrl(deps: Deps, url: string, appId: string): Promise<string> {
  // The demo workspace's built-in receiver (a loopback URL carrying a token only this service mints).
  if (deps.demoReceiver?.accepts(url, appId)) return new URL(url).toString();
  try {
    return (
      await checkWebhookUrl(url, { allowPrivate: deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS, resolve: deps.resolve })
    ).toString();
  } catch (err) {
    if (!(err instanceof UrlPolicyError)) throw err;
    // A developer trying a local receiver (the usual first endpoint) learns which setting allows it.
    const local = /^must be a public address|does not resolve$/.test(err.message);
    throw badRequest(`url: ${err.message}${local ? PRIVATE_URLS_HINT : ''}`);
  }
}

/** Said after a refused private or unresolvable address. */
export const PRIVATE_URLS_HINT =
  '; to deliver to a local or private receiver (while developing), start the service with ' +
  'WEBHOOKS_ALLOW_PRIVATE_URLS=true';

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
    await stopEndpointDeliveries(t, id);
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

/**
 * Sends a sample event of one type to the endpoint once, even when it is disabled. The payload has
 * `test: true`; it is not in the event log or the stats.
 */
const testTypeOf = (e: { events: string[] }, input: z.output<typeof S.testBody>) =>
  input.type ?? (e.events[0] === '*' || !e.events[0] ? 'account.created' : e.events[0]);

/** What `sendTestEvent` would do, for an MCP dry run: the same lookup (404), then a sentence instead of the send. */
export async function previewTestEvent(ctx: Ctx, endpointId: string, input: z.output<typeof S.testBody>) {
  const e = await findEndpoint(ctx.em, ctx.app.id, endpointId);
  return (
    `Would send one test ${testTypeOf(e, input)} event (a sample payload marked test: true) to ${e.url}` +
    `${e.enabled ? '' : ' (the endpoint is disabled; a test is sent all the same)'}, signed with the endpoint's ` +
    'secret, and answer the delivery with its result. A dry run does not make the call.'
  );
}

export async function sendTestEvent(
  ctx: Ctx,
  endpointId: string,
  input: z.output<typeof S.testBody>,
  /** Sent by the delivery's workflow, answered pending (an MCP task follows it); else sent here, answered with its result. */
  byWorkflow = false,
) {
  const e = await findEndpoint(ctx.em, ctx.app.id, endpointId);
  const type = testTypeOf(e, input);
  const info = EVENT_TYPES.find((t) => t.type === type)!;
  const event = { id: newId('event'), appId: ctx.app.id, type, data: info.sample(), createdAt: new Date() } as IEvent;
  const payload = { ...presentEvent(event), test: true as const };
  return byWorkflow ? testByWorkflow(ctx, e, payload) : sendTestDelivery(ctx, e, payload);
}
