// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import type { eventSchema } from '../events/events.schemas.js';
import { iso } from '../time.js';
import { type IWebhookDelivery, type IWebhookEndpoint } from './webhooks.entities.js';
import type * as S from './webhooks.schemas.js';

/** `started`: whether the delivery's workflow was started (false while its start waits in the outbox). */
export function presentDelivery(d: IWebhookDelivery, started = true): z.input<typeof S.deliverySchema> {
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
    workflow_id: d.test || !started ? null : d.id,
    created_at: iso(d.createdAt)!,
    // Stored as presentEvent wrote it.
    payload: d.payload as z.input<typeof eventSchema>,
  };
}

export function presentEndpoint(
  e: IWebhookEndpoint,
  stats: Stats,
  withSecret: true,
): z.input<typeof S.endpointWithSecretSchema>;
export function presentEndpoint(e: IWebhookEndpoint, stats: Stats, withSecret: false): z.input<typeof S.endpointSchema>;
export function presentEndpoint(
  e: IWebhookEndpoint,
  stats: Stats,
  withSecret: boolean,
): z.input<typeof S.endpointSchema> & { secret?: string } {
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

export interface Stats {
  total: number;
  succeeded: number;
  failed: number;
  pending: number;
  last_delivery_at: string | null;
  last_status: string | null;
  last_response_status: number | null;
}
