import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { limitParam } from '../http/pagination.js';
import { callerId } from '../http/schemas.js';

export const INTERVALS = ['7d', '30d', '60d', '6m', 'year', 'alltime'] as const;
export const interval = z.enum(INTERVALS).describe('The time window, e.g. `30d`.');
const accountFilter = z.string().min(1).max(255).optional().describe('Only this account, e.g. `alice`. Omitted: all.');
const entitlementFilter = callerId.optional().describe('Only this entitlement, e.g. `api_calls`. Omitted: all.');
export type Interval = z.output<typeof interval>;

export const summaryQuery = z.object({ interval, namespace: accountFilter });
export const topQuery = z.object({
  interval,
  entitlement: entitlementFilter,
  limit: z.coerce
    .number()
    .int()
    .min(1, 'must be between 1 and 100')
    .max(100, 'must be between 1 and 100')
    .default(10)
    .describe('How many accounts, 1 to 100, e.g. 5. Omitted: 10.'),
});
export const timeseriesQuery = z.object({ interval, namespace: accountFilter, entitlement: entitlementFilter });
export const eventsQuery = z.object({
  namespace: accountFilter,
  entitlement: entitlementFilter,
  limit: limitParam(50, 200),
});

export const reportParams = appIdParams.extend({ id: z.string().min(1) });
export const createReportBody = z.object({
  name: z.string().trim().min(1, 'must not be empty').max(200),
  entitlements: z.array(callerId).max(100).nullable().optional(),
  interval: interval.nullable().optional(),
});
export const updateReportBody = createReportBody.partial();

const window = { interval, from: z.string().nullable(), to: z.string() };
export const summarySchema = z.object({
  ...window,
  namespace: z.string().nullable(),
  entitlements: z.array(
    z.object({ id: z.string(), name: z.string().nullable(), calls: z.number(), amount: z.number() }),
  ),
});
export const topSchema = z.object({
  ...window,
  entitlement: z.string().nullable(),
  data: z.array(z.object({ account_id: z.string(), calls: z.number(), amount: z.number() })),
});
export const timeseriesSchema = z.object({
  ...window,
  bucket: z.enum(['day', 'week']),
  points: z.array(z.object({ start: z.string(), calls: z.number(), amount: z.number() })),
});
export const usageEventSchema = z.object({
  id: z.string(),
  account_id: z.string(),
  entitlement_id: z.string(),
  amount: z.number(),
  count: z.number().nullable(),
  created_at: z.string(),
});
export const reportSchema = z.object({
  id: z.string(),
  name: z.string(),
  entitlements: z.array(z.string()).nullable(),
  interval: interval.nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** `GET /apps/:appId/analytics/upgrades`: the 402 upgrade funnel. */
export const upgradesQuery = z.object({
  interval,
  entitlement: callerId.optional().describe('Only the upgrades offered when this limit was reached'),
});
const funnelCounts = {
  /** 402 answers that offered an upgrade. */
  limit_reached: z.number(),
  /** Those that carried a checkout link (a provider approval link, or the app's pricing page). */
  link_shown: z.number(),
  /** Provider approval links a 402 made that a buyer opened (or paid). */
  opened: z.number(),
  /** Of those, the checkouts that completed. */
  paid: z.number(),
};
export const upgradesSchema = z.object({
  interval,
  from: z.string().nullable(),
  to: z.string(),
  ...funnelCounts,
  /** First payments of the paid upgrades, per currency. */
  revenue: z.record(z.string(), z.number()),
  by_entitlement: z.array(z.object({ entitlement: z.string(), ...funnelCounts })),
});

/** `GET /apps/:appId/analytics/credits`: credits consumed by feature and by pool over time, from the ledger. */
export const creditsQuery = z.object({
  interval,
  namespace: accountFilter,
  pool: callerId.optional().describe('Only this credits pool, e.g. `credits`. Omitted: all.'),
  feature: callerId.optional().describe('Only this drawing feature, e.g. `premium`. Omitted: all.'),
});
const consumedCounts = {
  debited: z.number().describe('Credits its draws took'),
  refunded: z.number().describe('Credits given back by negative usage of it (a `refund` ledger row)'),
  consumed: z.number().describe('`debited` less `refunded`'),
};
export const creditsSchema = z.object({
  ...window,
  bucket: z.enum(['day', 'week']),
  namespace: z.string().nullable(),
  pool: z.string().nullable(),
  feature: z.string().nullable(),
  ...consumedCounts,
  pools: z.array(z.object({ pool: z.string(), name: z.string().nullable(), ...consumedCounts })),
  features: z.array(
    z.object({ feature: z.string(), name: z.string().nullable(), pool: z.string(), ...consumedCounts }),
  ),
  points: z.array(
    z.object({
      start: z.string(),
      consumed: z.number(),
      features: z
        .array(z.object({ feature: z.string(), consumed: z.number() }))
        .describe('The features that drew in this bucket (none: an empty list)'),
    }),
  ),
});

/** `GET /apps/:appId/analytics/credits/topups`: top-up revenue, the pack orders PayPal confirmed captured. */
export const topupsQuery = z.object({
  interval,
  namespace: accountFilter,
  pool: callerId.optional().describe('Only the packs of this credits pool, e.g. `credits`. Omitted: all.'),
});
const revenueCounts = {
  orders: z.number().describe('Pack orders whose capture PayPal confirmed in the window'),
  credits: z.number().describe('Credits those orders bought'),
  captured: z.number().describe('Money PayPal captured for them, e.g. `20` (two decimals at most)'),
  refunded: z.number().describe('Money refunded of those captures at PayPal so far (in part or in full)'),
  net: z.number().describe('`captured` less `refunded`'),
};
export const topupsSchema = z.object({
  ...window,
  namespace: z.string().nullable(),
  pool: z.string().nullable(),
  totals: z
    .array(z.object({ currency: z.string(), ...revenueCounts }))
    .describe('One row per currency (amounts in different currencies are never added up); none: an empty list'),
  data: z
    .array(z.object({ pack: z.string(), pool: z.string(), currency: z.string(), ...revenueCounts }))
    .describe('One row per pack and currency, by currency, then most net first'),
});
