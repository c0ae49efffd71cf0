import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { pageQuery } from '../http/pagination.js';
import { accountId, callerId, timestamp } from '../http/schemas.js';
import { subscriptionSchema } from '../subscriptions/subscriptions.schemas.js';

export const accountParams = appIdParams.extend({ accountId });
export const accountAddonParams = accountParams.extend({ addonId: callerId });

export const createAccountBody = z.object({
  id: accountId,
  name: z.string().max(500).nullable().optional(),
  /** Defaults to the app's free plan when omitted. */
  plan: callerId.optional(),
  incentive: callerId.nullable().optional(),
  incentive_expires_at: timestamp.nullable().optional(),
});

export const updateAccountBody = z.object({
  name: z.string().max(500).nullable().optional(),
  plan: callerId.optional(),
  incentive: callerId.nullable().optional(),
  incentive_expires_at: timestamp.nullable().optional(),
});

const boolString = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

export const searchQuery = pageQuery.extend({
  q: z.string().max(200).optional(),
  plan: callerId.optional(),
  incentive: callerId.optional(),
  offer: z.string().max(255).optional(),
  has_incentive: boolString.optional(),
});
export const withIncentiveQuery = pageQuery.extend({ incentive: callerId.optional() });

export const tokenBody = z.object({ ttl_seconds: z.number().int().min(60).max(86_400).default(3600) });

export const accountSchema = z.object({
  id: z.string(),
  app_id: z.string(),
  name: z.string().nullable(),
  plan: z.string(),
  incentive: z.string().nullable(),
  incentive_expires_at: z.string().nullable(),
  offer: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export const accountDetailSchema = accountSchema.extend({
  addons: z.array(z.string()),
  subscription: subscriptionSchema.nullable(),
});
export const accountPageSchema = z.object({
  data: z.array(accountSchema),
  total: z.number(),
  page: z.number(),
  per_page: z.number(),
});
export const tokenSchema = z.object({ account_id: z.string(), token: z.string(), expires_at: z.string() });

const entry = z.object({
  id: z.string(),
  feature: z.string(),
  name: z.string(),
  type: z.enum(['usage', 'boolean']),
  usage: z.number(),
  max: z.number().nullable(),
  left: z.number().nullable(),
  can: z.boolean(),
});
export const accessSchema = z.object({
  plan: z.object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    isFree: z.boolean(),
    meta: z.record(z.string(), z.unknown()),
  }),
  incentive: z.string().nullable(),
  offer: z.string().nullable(),
  addons: z.array(z.string()),
  entitlements: z.array(entry),
});
