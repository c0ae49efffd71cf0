import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { limitParam } from '../http/pagination.js';
import { accountId, callerId, httpUrl } from '../http/schemas.js';

export const offerCheckoutBody = z.object({
  plan: callerId,
  interval: z.enum(['month', 'year']),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/)
    .transform((c) => c.toUpperCase())
    .optional(),
  bumps: z.array(callerId).max(10).optional(),
  account: accountId.optional(),
  email: z.email().optional(),
  ref: z.string().max(200).optional(),
  return_url: httpUrl.optional(),
  cancel_url: httpUrl.optional(),
});
export const checkoutParams = appIdParams.extend({ checkoutId: z.string().min(1).max(255) });
export const listQuery = z.object({
  offer: z.string().max(255).optional(),
  status: z.enum(['created', 'completed', 'cancelled', 'expired']).optional(),
  limit: limitParam(50, 100),
});

export const planCheckoutBody = z.object({
  interval: z.enum(['month', 'year']).optional(),
  account: accountId.optional(),
  email: z.email().optional(),
  ref: z.string().max(200).optional(),
  return_url: httpUrl.optional(),
  cancel_url: httpUrl.optional(),
});
