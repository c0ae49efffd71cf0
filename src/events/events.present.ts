// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { type IEvent } from './events.entities.js';
import type { eventSchema } from './events.schemas.js';

/** The envelope sent to webhooks and listed by GET /events. */
export function presentEvent(e: IEvent, opts: { test?: boolean } = {}): z.input<typeof eventSchema> {
  return {
    id: e.id,
    type: e.type,
    created_at: iso(e.createdAt)!,
    app_id: e.appId,
    data: e.data,
    ...(opts.test ? { test: true as const } : {}),
  };
}
