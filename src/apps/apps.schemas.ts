import { z } from 'zod';
import { httpUrl } from '../http/schemas.js';

/** App ids are generated (`app_` and 20 letters or digits); anything else names no app (401, or 404 for the admin). */
export const appIdParams = z.object({ appId: z.string().min(1).max(100).meta({ pattern: '^app_[A-Za-z0-9]+$' }) });

export const createAppBody = z.object({
  name: z.string().trim().min(1, 'must not be empty').max(200),
  plan: z.string().trim().min(1).max(100).optional(),
});

/** Merge: only the sent fields change; key fields are not accepted here (an unknown field: 400). */
export const updateAppBody = z.object({
  name: z.string().trim().min(1, 'must not be empty').max(200).optional(),
  plan: z.string().trim().min(1).max(100).nullable().optional(),
  checkout_url: httpUrl.nullable().optional(),
});

export const appSchema = z.object({
  id: z.string(),
  name: z.string(),
  plan: z.string().nullable(),
  api_key: z.string(),
  public_key: z.string(),
  checkout_url: z.string().nullable(),
  created_at: z.string(),
});
