import { z } from 'zod';
import { limitParam } from '../http/pagination.js';

export const eventsQuery = z.object({ type: z.string().optional(), limit: limitParam(50, 100) });

/** The event envelope: listed by GET /events and sent as the body of every webhook delivery. */
export const eventSchema = z.object({
  id: z.string(),
  type: z.string(),
  created_at: z.string(),
  app_id: z.string(),
  data: z.record(z.string(), z.unknown()),
  test: z.literal(true).optional(),
});
