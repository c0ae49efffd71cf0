import { cursorAtSql, cursorPage } from '../http/pagination.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { newId } from '../ids.js';
import { Event, type IEvent } from './events.entities.js';
import type { eventsQuery } from './events.schemas.js';
import { presentEvent } from './events.present.js';

/** Writes one event row in the caller's transaction. */
export function recordEvent(em: EntityManager, appId: string, type: string, data: Record<string, unknown>): IEvent {
  return em.create(Event, { id: newId('event'), appId, type, data, createdAt: new Date() });
}

/** `previous` for update events: the old values of the fields that changed. */
export function changedFields<T extends Record<string, unknown>>(before: T, after: T): Partial<T> {
  const previous: Partial<T> = {};
  for (const key of Object.keys(after) as (keyof T)[]) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) previous[key] = before[key];
  }
  return previous;
}

/** GET /events: the event log of the last 30 days, newest first. */
export async function listEvents(ctx: Ctx, q: z.output<typeof eventsQuery>) {
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
