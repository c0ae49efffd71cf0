import { z } from 'zod';
import { cursorQuery } from '../http/pagination.js';

export const eventsQuery = cursorQuery(50, 100).extend({
  type: z.string().optional().describe('Only events of this type, e.g. `account.created`. Omitted: every type.'),
});

/** The event envelope: listed by GET /events and sent as the body of every webhook delivery. */
export const eventSchema = z.object({
  id: z.string(),
  type: z.string(),
  created_at: z.string(),
  app_id: z.string(),
  data: z.record(z.string(), z.unknown()),
  test: z.literal(true).optional(),
});
