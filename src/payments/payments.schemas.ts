import { z } from 'zod';

export const connectBody = z.object({
  client_id: z.string().trim().min(1).max(255),
  client_secret: z.string().min(1).max(500),
  env: z.enum(['sandbox', 'live']),
});

export const connectionSchema = z.object({
  connected: z.boolean(),
  provider: z.string(),
  env: z.enum(['sandbox', 'live']).nullable(),
  client_id: z.string().nullable(),
  webhook: z.object({ id: z.string(), url: z.string().nullable() }).nullable(),
  connected_at: z.string().nullable(),
});
