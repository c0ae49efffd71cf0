import { Event } from '../../src/events/events.entities.js';
import { testEnv } from './servers.js';

/** Events recorded for an app, oldest first (read straight from the event log table). */
export async function eventsOf(appId: string, type?: string) {
  const rows = await testEnv()
    .deps.orm.em.fork()
    .find(Event, { appId, ...(type ? { type } : {}) }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return rows.map((r) => ({ type: r.type, data: r.data as Record<string, any> }));
}
