import { z } from 'zod';
import { endNeedsIncentive } from '../accounts/accounts.schemas.js';
import { accountId, callerId, historyTimestamp, timestamp } from '../http/schemas.js';

export const MAX_IMPORT_ROWS = 10_000;

export const importBody = z.object({
  accounts: z
    .array(
      z
        .object({
          id: accountId,
          name: z.string().max(500).nullable().optional(),
          /** Defaults to the app's free plan. */
          plan: callerId.optional(),
          incentive: callerId.nullable().optional(),
          incentive_expires_at: timestamp.nullable().optional(),
          created_at: historyTimestamp.optional(),
        })
        .meta(endNeedsIncentive(true)),
    )
    .max(MAX_IMPORT_ROWS)
    .default([]),
  usage: z
    .array(
      z.object({
        account_id: accountId,
        entitlement_id: callerId,
        amount: z.number().int().min(-1e12).max(1e12),
        created_at: historyTimestamp,
      }),
    )
    .max(MAX_IMPORT_ROWS)
    .default([]),
});

export const importResultSchema = z.object({ accounts: z.number(), usage_events: z.number() });
