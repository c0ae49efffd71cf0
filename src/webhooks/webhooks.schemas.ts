import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { EVENT_TYPE_NAMES } from '../events/event-types.js';
import { eventSchema } from '../events/events.schemas.js';
import { cursorQuery } from '../http/pagination.js';
import { HTTP_URL_PATTERN } from '../http/schemas.js';

const eventType = z.enum([...EVENT_TYPE_NAMES] as [string, ...string[]], {
  error: (iss) => `unknown event type ${JSON.stringify(iss.input)}`,
});
const eventOrAll = z.enum(['*', ...EVENT_TYPE_NAMES] as [string, ...string[]], {
  error: (iss) => `unknown event type ${JSON.stringify(iss.input)}`,
});
/** Every event type once, and `*`: a longer list repeats one. */
export const MAX_ENDPOINT_EVENTS = EVENT_TYPE_NAMES.size + 1;
const events = z
  .array(eventOrAll)
  .min(1, 'must list at least one event type, or "*"')
  .max(MAX_ENDPOINT_EVENTS, `must list at most ${MAX_ENDPOINT_EVENTS} event types (each once)`)
  .superRefine((types, ctx) => {
    const seen = new Set<string>();
    for (const [i, type] of types.entries()) {
      if (seen.has(type))
        ctx.addIssue({ code: 'custom', path: [i], message: `repeats ${JSON.stringify(type)} (list each type once)` });
      seen.add(type);
    }
  })
  .meta({ uniqueItems: true })
  .describe(
    'The event types to send, each once, e.g. `["usage.limit_reached"]`; `["*"]`: all, future ones too. ' +
      'A repeated type is a 400.',
  );
const url = z
  .string()
  .trim()
  .min(1)
  .max(2000)
  .meta({ pattern: HTTP_URL_PATTERN })
  .describe('The public http(s) address that receives the events, e.g. `https://example.com/hooks`.');
const note = z
  .string()
  .max(500)
  .nullable()
  .optional()
  .describe('What the endpoint is for. Omitted: none on create, unchanged on update.');
const enabled = z
  .boolean()
  .optional()
  .describe('false pauses deliveries. Omitted: true on create, unchanged on update.');

export const endpointParams = appIdParams.extend({
  webhookId: z.string().min(1).describe('The webhook endpoint id, e.g. `whk_...`.'),
});
export const deliveryParams = endpointParams.extend({
  deliveryId: z.string().min(1).describe("The delivery id (list_webhook_deliveries shows an endpoint's deliveries)."),
});

export const createEndpointBody = z.object({
  url,
  events,
  description: note,
  source: z.enum(['custom', 'zapier']).optional().describe('Who set it up: `custom` or `zapier`. Omitted: custom.'),
  enabled,
});
export const updateEndpointBody = z.object({
  url: url.optional(),
  events: events.optional(),
  description: note,
  enabled,
});
export const testBody = z.object({
  type: eventType
    .optional()
    .describe("The sample event's type, e.g. `account.created`. Omitted: the endpoint's first subscribed type."),
});
export const deliveriesQuery = cursorQuery(50, 100).extend({
  status: z
    .enum(['pending', 'succeeded', 'failed'])
    .optional()
    .describe('Only deliveries in this state, e.g. `failed`. Omitted: all.'),
});

const stats = z.object({
  total: z.number(),
  succeeded: z.number(),
  failed: z.number(),
  pending: z.number(),
  last_delivery_at: z.string().nullable(),
  last_status: z.string().nullable(),
  last_response_status: z.number().nullable(),
});
export const endpointSchema = z.object({
  id: z.string(),
  app_id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  source: z.string(),
  disabled_reason: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  stats,
});
/**
 * An endpoint as created, read alone or given a new secret: with its signing secret (the spec's rule). Lists,
 * updates and deletes answer without it (`endpointSchema` has no `secret`, so the SDK's types do not offer one).
 */
export const endpointWithSecretSchema = endpointSchema.extend({ secret: z.string() });
export const deliverySchema = z.object({
  id: z.string(),
  endpoint_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  status: z.enum(['pending', 'succeeded', 'failed']),
  attempts: z.number(),
  next_attempt_at: z.string().nullable(),
  last_attempt_at: z.string().nullable(),
  response_status: z.number().nullable(),
  response_body: z.string().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number().nullable(),
  test: z.boolean(),
  workflow_id: z
    .string()
    .nullable()
    .describe(
      'The Temporal workflow that delivers it (the delivery id); null for a test delivery, sent at once without one, ' +
        'and while its start still waits in the outbox.',
    ),
  created_at: z.string(),
  payload: eventSchema,
});
