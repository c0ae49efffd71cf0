import type { EntityManager } from '@mikro-orm/postgresql';
import type { IApp } from '../apps/apps.entities.js';
import { sql } from '../db/sql.js';
import type { Deps } from '../deps.js';
import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { EVENT_TYPES } from '../events/event-types.js';
import { eventSchema, eventsQuery } from '../events/events.schemas.js';
import * as events from '../events/events.service.js';
import { cursorPageSchema } from '../http/pagination.js';
import { ctxOf, route } from '../http/route.js';
import * as deliveries from './deliveries.service.js';
import * as endpoints from './endpoints.service.js';
import * as S from './webhooks.schemas.js';

/**
 * On the read-only demo app, a test send or a retry to the demo's built-in receiver is allowed: it changes no demo
 * data, only the delivery log, so a visitor can retry the failed delivery.
 */
async function toDemoReceiver(s: { em: EntityManager; deps: Deps; app: IApp; params: Record<string, string> }) {
  const [row] = await sql<{ url: string }>(s.em, `select url from webhook_endpoints where id = $1 and app_id = $2`, [
    s.params.webhookId,
    s.app.id,
  ]);
  return row !== undefined && s.deps.demoReceiver?.accepts(row.url, s.app.id) === true;
}

const tags = ['Webhooks'];

export const webhookRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/webhooks',
    sdk: 'webhooks.list',
    auth: ['S'],
    mcp: {
      tool: 'list_webhooks',
      use: 'Returns every endpoint, signing secrets redacted.',
      level: 'R',
      redact: ['secret'],
    },
    tags,
    summary: 'Webhook endpoints with 7-day delivery stats',
    params: appIdParams,
    response: z.array(S.endpointSchema),
    handler: (s) => endpoints.listEndpoints(ctxOf(s)),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/webhooks',
    sdk: 'webhooks.create',
    auth: ['S'],
    mcp: {
      tool: 'create_webhook',
      about: 'The URL must be a public http(s) address. At most 25 per app (409).',
      use: 'Returns the endpoint; its signing secret is redacted (the console shows it).',
      level: 'W',
      redact: ['secret'],
      omit: ['source'],
    },
    tags,
    summary: 'Add a webhook endpoint',
    description:
      'The URL must be a public http(s) address (checked again at every send). `events` lists event types from ' +
      '`/event-types`, or `["*"]` for all, including future ones. At most 25 per app (409). Returns the signing ' +
      'secret.',
    params: appIdParams,
    body: S.createEndpointBody,
    status: 201,
    errors: [409],
    response: S.endpointWithSecretSchema,
    handler: (s) => endpoints.createEndpoint(ctxOf(s), s.body),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/webhooks/:webhookId',
    sdk: 'webhooks.get',
    auth: ['S'],
    mcp: {
      tool: 'get_webhook',
      use: 'Returns the endpoint with its stats, the secret redacted.',
      level: 'R',
      redact: ['secret'],
    },
    tags,
    summary: 'A webhook endpoint, with its secret',
    params: S.endpointParams,
    response: S.endpointWithSecretSchema,
    handler: (s) => endpoints.getEndpoint(ctxOf(s), s.params.webhookId),
  }),
  route({
    method: 'PATCH',
    path: '/apps/:appId/webhooks/:webhookId',
    sdk: 'webhooks.update',
    auth: ['S'],
    mcp: {
      tool: 'update_webhook',
      use: 'Returns the endpoint.',
      level: 'W',
      redact: ['secret'],
    },
    tags,
    summary: 'Update a webhook endpoint',
    description:
      '`enabled: false` fails its pending deliveries with `Endpoint disabled`; `enabled: true` clears ' +
      '`disabled_reason`.',
    params: S.endpointParams,
    body: S.updateEndpointBody,
    response: S.endpointSchema,
    handler: (s) => endpoints.updateEndpoint(ctxOf(s), s.params.webhookId, s.body),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/webhooks/:webhookId',
    sdk: 'webhooks.delete',
    auth: ['S'],
    mcp: { tool: 'delete_webhook', use: 'Returns the deleted endpoint.', level: 'F', redact: ['secret'] },
    tags,
    summary: 'Delete a webhook endpoint and its deliveries',
    params: S.endpointParams,
    response: S.endpointSchema,
    handler: (s) => endpoints.deleteEndpoint(ctxOf(s), s.params.webhookId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/webhooks/:webhookId/secret/regenerate',
    sdk: 'webhooks.regenerateSecret',
    auth: ['S'],
    tags,
    summary: 'Replace the signing secret',
    description: 'Every later attempt, retries included, is signed with the new secret.',
    params: S.endpointParams,
    response: S.endpointWithSecretSchema,
    handler: (s) => endpoints.regenerateSecret(ctxOf(s), s.params.webhookId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/webhooks/:webhookId/test',
    readOnlyExempt: toDemoReceiver,
    sdk: 'webhooks.sendTest',
    auth: ['S'],
    mcp: {
      tool: 'send_test_event',
      about: 'One attempt, even to a disabled endpoint, with a sample payload marked `test: true`.',
      use: 'Use it to check an endpoint receives and verifies events. Returns the delivery.',
      level: 'W',
      redact: ['secret'],
      openWorld: true,
      preview: (ctx, params, body) =>
        endpoints.previewTestEvent(ctx, params.webhookId, body as Parameters<typeof endpoints.sendTestEvent>[2]),
    },
    tags,
    summary: 'Send a test event now',
    description:
      'One attempt, even to a disabled endpoint, with a sample payload marked `test: true`; not in the event log ' +
      "or the stats. Without `type`, the endpoint's first subscribed type (`account.created` for `*`). Returns " +
      'the delivery.',
    params: S.endpointParams,
    body: S.testBody,
    response: S.deliverySchema,
    handler: (s) => endpoints.sendTestEvent(ctxOf(s), s.params.webhookId, s.body),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/webhooks/:webhookId/deliveries',
    sdk: 'webhooks.listDeliveries',
    auth: ['S'],
    mcp: {
      tool: 'list_webhook_deliveries',
      about: '',
      use: 'Use it to see why an endpoint fails. Returns a page of deliveries.',
      level: 'R',
      redact: ['secret'],
    },
    tags,
    summary: 'Deliveries to an endpoint, newest first',
    description: 'Pass `next_cursor` back as `cursor` for the next page (null on the last).',
    params: S.endpointParams,
    query: S.deliveriesQuery,
    response: cursorPageSchema(S.deliverySchema),
    handler: (s) => deliveries.listDeliveries(ctxOf(s), s.params.webhookId, s.query),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/webhooks/:webhookId/deliveries/:deliveryId/retry',
    readOnlyExempt: toDemoReceiver,
    sdk: 'webhooks.retryDelivery',
    auth: ['S'],
    mcp: {
      tool: 'retry_webhook_delivery',
      about: 'One attempt, no further retries; to a disabled endpoint it fails at once. 409 while pending.',
      use: 'Use it after fixing a failing endpoint. Returns the delivery.',
      level: 'W',
      redact: ['secret'],
      openWorld: true,
      preview: (ctx, params) => deliveries.previewRetry(ctx, params.webhookId, params.deliveryId),
    },
    tags,
    summary: 'Retry a delivery once, now',
    description:
      'One attempt, returning the delivery with its result; no further retries. To a disabled endpoint it fails at ' +
      'once with `Endpoint disabled` and nothing is sent. 409 while the delivery is still pending.',
    params: S.deliveryParams,
    errors: [409],
    response: S.deliverySchema,
    handler: (s) => deliveries.retryDelivery(ctxOf(s), s.params.webhookId, s.params.deliveryId),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/events',
    sdk: 'events.list',
    auth: ['S'],
    mcp: {
      tool: 'list_events',
      about: '',
      use: 'Use it to see what happened recently. Returns a page of events.',
      level: 'R',
    },
    tags: ['Events'],
    summary: 'Event log of the last 30 days, newest first',
    description: 'Pass `next_cursor` back as `cursor` for the next page (null on the last).',
    params: appIdParams,
    query: eventsQuery,
    response: cursorPageSchema(eventSchema),
    handler: (s) => events.listEvents(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/event-types',
    sdk: 'events.listTypes',
    auth: ['N'],
    tags: ['Events'],
    summary: 'Event catalog with a sample `data` for each type',
    response: z.array(
      z.object({ type: z.string(), description: z.string(), sample: z.record(z.string(), z.unknown()) }),
    ),
    handler: () => EVENT_TYPES.map((e) => ({ type: e.type, description: e.description, sample: e.sample() })),
  }),
];
