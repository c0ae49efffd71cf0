import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import { Event, type IEvent } from './events.entities.js';
import type { eventSchema } from '../webhooks/webhooks.schemas.js';

/** Writes one event row in the caller's transaction. */
export function recordEvent(em: EntityManager, appId: string, type: string, data: Record<string, unknown>): IEvent {
  return em.create(Event, { id: newId('event'), appId, type, data, createdAt: new Date() });
}

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

/** `previous` for update events: the old values of the fields that changed. */
export function changedFields<T extends Record<string, unknown>>(before: T, after: T): Partial<T> {
  const previous: Partial<T> = {};
  for (const key of Object.keys(after) as (keyof T)[]) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) previous[key] = before[key];
  }
  return previous;
}
