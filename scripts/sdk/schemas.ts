// Schemas the SDK types that the route table does not carry: each webhook event's `data` (built from the
// response schemas of the routes that present the same records) and the 402 body of the spec's Errors section.
import { z } from 'zod';
import type { RouteDef } from '../../src/http/route.js';
import { untrackedSchema } from '../../src/subscriptions/subscriptions.schemas.js';

function responseOf(routes: readonly RouteDef[], key: string): z.ZodType {
  const r = routes.find((d) => `${d.method} ${d.path}` === key);
  if (!r?.response) throw new Error(`SDK generator: no response schema on ${key}`);
  return r.response;
}

/** `data` of every event type of the catalog, keyed by type. The generator fails on a type missing here. */
export function eventDataSchemas(routes: readonly RouteDef[]): Record<string, z.ZodType> {
  const account = responseOf(routes, 'GET /apps/:appId/namespaces/:accountId');
  const plan = responseOf(routes, 'GET /apps/:appId/plans/:planId');
  const incentive = responseOf(routes, 'GET /apps/:appId/incentives/:incentiveId');
  const checkout = responseOf(routes, 'GET /apps/:appId/checkouts/:checkoutId');
  const session = responseOf(routes, 'GET /apps/:appId/cancel-sessions/:sessionId');
  /** Old values of the fields that changed. */
  const previous = z.record(z.string(), z.unknown());
  const previousPlan = z.object({ plan: z.string().nullable() });
  const previousIncentive = z.object({ incentive: z.string().nullable() });
  /** A payment the provider charged (a renewal, a recovery). */
  const payment = z.object({ id: z.string(), amount: z.number(), currency: z.string(), time: z.string() });
  /** One line for the account's timeline. */
  const summary = z.string();
  const usage = z.object({
    object: z.object({
      account_id: z.string(),
      entitlement_id: z.string(),
      entitlement_name: z.string(),
      usage: z.number().int(),
      max: z.number().int(),
      left: z.number().int(),
      percent: z.number().int(),
    }),
  });
  /** `credits.low` and `credits.depleted`: the pool's balance after the draw that crossed the line. */
  const creditsLevel = z.object({
    object: z.object({
      account_id: z.string(),
      entity: z.string().nullable(),
      pool: z.string(),
      pool_name: z.string(),
      balance: z.number().int(),
      previous_balance: z.number().int(),
      granted_per_period: z.number().int().nullable(),
      feature: z.string(),
    }),
  });
  const grant = z.object({
    id: z.string(),
    pool: z.string(),
    amount: z.number().int(),
    remaining: z.number().int(),
    expires_at: z.string().nullable(),
    source: z.enum(['plan', 'api', 'pack', 'refund', 'rollover']),
    reason: z.string().nullable(),
    created_at: z.string(),
  });
  return {
    'credits.granted': z.object({
      object: z.object({
        account_id: z.string(),
        entity: z.string().nullable(),
        pool: z.string(),
        grant,
        balance: z.number().int(),
      }),
    }),
    'credits.low': creditsLevel,
    'credits.depleted': creditsLevel,
    'credits.expired': z.object({
      object: z.object({
        account_id: z.string(),
        entity: z.string().nullable(),
        pool: z.string(),
        grant: z.string(),
        expired: z.number().int(),
        balance: z.number().int(),
      }),
    }),
    'account.created': z.object({ object: account }),
    'account.updated': z.object({ object: account, previous }),
    'account.deleted': z.object({ object: account }),
    'account.plan_changed': z.object({ object: account, previous: previousPlan }),
    'account.incentive_applied': z.object({ object: account, previous: previousIncentive }),
    'account.incentive_removed': z.object({ object: account, previous: previousIncentive }),
    'account.addon_granted': z.object({ object: account, addon_id: z.string(), source: z.string() }),
    'usage.limit_warning': usage,
    'usage.limit_reached': usage,
    'plan.created': z.object({ object: plan }),
    'plan.updated': z.object({ object: plan, previous }),
    'plan.deleted': z.object({ object: plan }),
    'incentive.created': z.object({ object: incentive }),
    'incentive.updated': z.object({ object: incentive, previous }),
    'incentive.deleted': z.object({ object: incentive }),
    'checkout.completed': z.object({ object: checkout, account }),
    'subscription.renewed': z.object({ object: account, payment: payment.optional() }),
    'subscription.cancelled': z.object({ object: account, previous: previousPlan }),
    'subscription.paused': z.object({ object: account, previous: previousPlan }),
    'subscription.resumed': z.object({ object: account, previous: previousPlan }),
    'subscription.changed': z.object({
      object: account,
      previous: z.object({ plan: z.string(), price: z.number(), interval: z.enum(['month', 'year']) }),
      /** An upgrade's prorated difference (policy prorate_now); absent otherwise. */
      proration: z
        .object({ amount: z.number(), currency: z.string(), status: z.enum(['captured', 'not_approved']) })
        .optional(),
    }),
    'subscription.change_scheduled': z.object({ object: account }),
    'subscription.change_dropped': z.object({
      object: account,
      change: z.object({
        id: z.string().nullable(),
        kind: z.enum(['change', 'discount', 'downgrade', 'withdrawal']),
        plan: z.string(),
        price: z.number(),
        currency: z.string(),
        interval: z.enum(['month', 'year']),
        status: z.enum(['awaiting_approval', 'scheduled']),
      }),
      reason: z.enum(['refused', 'expired', 'withdrawn', 'replaced', 'cancelled']),
      summary,
    }),
    'subscription.cancel_scheduled': z.object({ object: account, cancel_at: z.string().nullable(), summary }),
    'subscription.cancel_undone': z.object({ object: account, summary }),
    'subscription.payment_failed': z.object({
      object: account,
      /** Failures since the subscription fell past due (1 for the renewal's own). */
      attempt: z.number().int(),
      payment: z.object({
        id: z.string().nullable(),
        amount: z.number().nullable(),
        currency: z.string(),
        time: z.string(),
      }),
      /** When the provider tries again; null: not before the next cycle. */
      next_retry_at: z.string().nullable(),
      outstanding: z.number().nullable(),
      summary,
    }),
    'subscription.past_due': z.object({
      object: account,
      grace_ends_at: z.string(),
      after: z.enum(['cancel', 'free_plan']),
      summary,
    }),
    'subscription.recovered': z.object({ object: account, payment, summary }),
    'subscription.grace_ended': z.object({
      object: account,
      after: z.enum(['cancel', 'free_plan']),
      outstanding: z.number().nullable(),
      summary,
    }),
    'subscription.untracked': z.object({ object: untrackedSchema }),
    'cancel_flow.saved': z.object({ object: session, account }),
    'cancel_flow.cancelled': z.object({ object: session, account }),
  };
}

/** The 402 body (spec, Errors, "402 body"). */
export const limitReachedBody = z.object({
  error: z.literal('limit_reached'),
  message: z.string(),
  entitlement: z.object({ id: z.string(), name: z.string(), usage: z.number(), max: z.number() }),
  offer: z
    .object({
      id: z.string().nullable(),
      name: z.string(),
      plan: z.object({ id: z.string(), name: z.string() }),
      interval: z.enum(['month', 'year']),
      currency: z.string(),
      price: z.number(),
      list_price: z.number(),
      cycles: z.number().nullable(),
      new_limit: z.number().nullable(),
      checkout_url: z.string().nullable(),
      expires_at: z.string().nullable(),
    })
    .nullable(),
  retry_after_purchase: z.boolean(),
});
