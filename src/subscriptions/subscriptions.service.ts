// Reading subscriptions, and recording one when a checkout is applied. What happens to a subscription over time is
// the account actor's (workflows/account.ts): its intents, facts and dates are in intents.service.ts, and the
// changes themselves in plan-changes, lifecycle and sync services.
import type { z } from 'zod';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { findAccount } from '../accounts/accounts.service.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import type { Tx } from '../db/transaction.js';
import { conflict, notFound } from '../errors.js';
import { cursorAtSql, cursorPage } from '../http/pagination.js';
import type { ProviderSubscription } from '../payments/provider.js';
import { Subscription, type ISubscription } from './subscriptions.entities.js';
import { actorFact } from './actor-facts.js';
import {
  SUBSCRIPTION_STATUSES,
  type listSubscriptionsQuery,
  type subscriptionPageSchema,
} from './subscriptions.schemas.js';
import { presentSubscription } from './subscriptions.present.js';

export async function findSubscription(em: EntityManager, appId: string, accountId: string, lock = false) {
  // Under the lock, the row as it is now (not a copy the transaction's entity manager loaded earlier).
  const s = await em.findOne(
    Subscription,
    { appId, accountId },
    lock ? { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } : {},
  );
  if (!s) throw notFound(`Subscription of account ${accountId}`);
  return s;
}

export async function getSubscription(ctx: Ctx, accountId: string) {
  await findAccount(ctx.em, ctx.app.id, accountId);
  return presentSubscription(await findSubscription(ctx.em, ctx.app.id, accountId));
}

/**
 * The app's subscriptions, newest first, a page at a time (keyset on `created_at`, then the account id): by
 * status (without one, those that have not ended: active and paused; `all`: every one) and paid plan.
 */
export async function listSubscriptions(
  ctx: Ctx,
  q: z.output<typeof listSubscriptionsQuery>,
): Promise<z.input<typeof subscriptionPageSchema>> {
  const statuses: string[] =
    q.status === 'all' ? [...SUBSCRIPTION_STATUSES] : q.status ? [q.status] : ['active', 'paused', 'past_due'];
  const params: unknown[] = [ctx.app.id, statuses, q.limit + 1];
  let where = 'app_id = $1 and status = any($2::text[])';
  if (q.plan !== undefined) {
    params.push(q.plan);
    where += ` and plan_id = $${params.length}`;
  }
  if (q.cursor) {
    // Only with a cursor, so the index range starts there instead of filtering every earlier row.
    params.push(q.cursor.at, q.cursor.id);
    where += ` and (created_at, account_id) < ($${params.length - 1}::timestamptz, $${params.length}::text)`;
  }
  const rows = await sql<Record<string, unknown> & { account_id: string; cursor_at: string }>(
    ctx.em,
    `select *, ${cursorAtSql('created_at')} as cursor_at from subscriptions
      where ${where} order by created_at desc, account_id desc limit $3`,
    params,
  );
  const page = cursorPage(rows, q.limit, (r) => ({ at: r.cursor_at, id: r.account_id }));
  return {
    data: page.rows.map(({ cursor_at: _at, ...row }) => {
      const s = ctx.em.map(Subscription, row);
      return { account_id: s.accountId, ...presentSubscription(s) };
    }),
    next_cursor: page.next_cursor,
  };
}

/** The account's live (active, paused or past due) subscription, or null. */
export async function liveSubscription(em: EntityManager, appId: string, accountId: string) {
  const s = await em.findOne(Subscription, { appId, accountId, status: { $in: ['active', 'paused', 'past_due'] } });
  return s ?? null;
}

/** Where an account's plan is changed (the answer to a second purchase). */
export const changeRoute = (appId: string, accountId: string) =>
  `/apps/${appId}/namespaces/${encodeURIComponent(accountId)}/subscription/change`;

/**
 * 409 for a purchase by an account that already has a live subscription: it names that subscription and points to
 * the plan change route, so a second provider subscription is never created for the account (issue 30).
 */
export function alreadySubscribed(appId: string, s: ISubscription) {
  const change = changeRoute(appId, s.accountId);
  return conflict(
    `Account ${s.accountId} already has a ${s.status} subscription ${s.providerSubscriptionId} to plan ${s.planId}; ` +
      `change its plan with POST ${change} instead of buying a second one`,
    { reason: 'already_subscribed', subscription: presentSubscription(s), change: { method: 'POST', path: change } },
  );
}

/** The account has a live subscription other than the one a completion would record. */
export class LiveSubscriptionExists extends Error {
  constructor(
    readonly accountId: string,
    readonly providerSubscriptionId: string,
  ) {
    super(`Account ${accountId} already has the live subscription ${providerSubscriptionId}`);
    this.name = 'LiveSubscriptionExists';
  }
}

/**
 * Records the account's subscription when a checkout is applied: a new row, or in place of one that has ended
 * (cancelled). Never over a live one with another provider subscription: then nothing is written and
 * LiveSubscriptionExists is thrown (the caller's transaction rolls back). The conflict is decided by PostgreSQL on
 * the row (a concurrent completion for the same account waits for this one's commit, then sees its row), and a
 * trigger refuses the overwrite whatever the statement (migration Migration20261201090000_one_live_subscription).
 */
export async function recordSubscription(
  t: Tx,
  c: {
    appId: string;
    accountId: string;
    providerSubscriptionId: string;
    checkoutId: string;
    offerId: string | null;
    planId: string;
    interval: 'month' | 'year';
    currency: string;
    price: number;
  },
  providerSub: ProviderSubscription | null,
) {
  const written = await sql<{ account_id: string }>(
    t.em,
    `insert into subscriptions (app_id, account_id, provider_subscription_id, checkout_id, offer_id, plan_id,
      interval, currency, price, status, renews_at,
                                provider_status, provider_plan_id, last_payment_at, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'active', $10, $11, $12, $13, now(), now())
     on conflict (app_id, account_id) do update set provider_subscription_id = excluded.provider_subscription_id,
       checkout_id = excluded.checkout_id,
       offer_id = excluded.offer_id, plan_id = excluded.plan_id, interval = excluded.interval, currency =
         excluded.currency, price = excluded.price,
       status = 'active', renews_at = excluded.renews_at, provider_status = excluded.provider_status,
         provider_plan_id = excluded.provider_plan_id,
       last_payment_at = excluded.last_payment_at, paused_at = null, resume_at = null, restore_plan_id = null,
         cancelled_at = null, pending_change = null, discount = null, scheduled_change = null, cancel_at = null,
         past_due_since = null, payment_failures = 0, next_payment_retry_at = null, outstanding_balance = null,
         grace_ends_at = null, dunning_after = null, dunning_restore_plan_id = null,
       updated_at = now()
     where subscriptions.status = 'cancelled'
        or subscriptions.provider_subscription_id = excluded.provider_subscription_id
     returning account_id`,
    [
      c.appId,
      c.accountId,
      c.providerSubscriptionId,
      c.checkoutId,
      c.offerId,
      c.planId,
      c.interval,
      c.currency,
      c.price,
      providerSub?.nextBillingTime ?? null,
      providerSub?.status ?? null,
      providerSub?.planId ?? null,
      providerSub?.lastPaymentAt ?? null,
    ],
  );
  if (written.length) {
    // From now on the account's actor owns it (renewals, changes, pauses): it hears of it through the outbox.
    t.temporal(actorFact(c.appId, c.accountId, { kind: 'subscription_started', checkoutId: c.checkoutId }));
    return;
  }
  const [live] = await sql<{ provider_subscription_id: string }>(
    t.em,
    'select provider_subscription_id from subscriptions where app_id = $1 and account_id = $2',
    [c.appId, c.accountId],
  );
  throw new LiveSubscriptionExists(c.accountId, live?.provider_subscription_id ?? 'unknown');
}

/** Paused subscriptions whose resume time has passed on their app's clock (for an external scheduler), oldest first. */
export async function duePauses(em: EntityManager, limit: number) {
  const rows = await sql<{
    app_id: string;
    account_id: string;
    resume_at: Date | null;
    restore_plan_id: string | null;
    pause_count: number;
  }>(
    em,
    `select s.app_id, s.account_id, s.resume_at, s.restore_plan_id, s.pause_count
       from subscriptions s join apps a on a.id = s.app_id
      where s.status = 'paused' and s.resume_at <= now() + make_interval(secs => a.clock_offset_ms / 1000.0)
      order by s.resume_at asc limit $1`,
    [limit],
  );
  return {
    data: rows.map((s) => ({
      app_id: s.app_id,
      account_id: s.account_id,
      resume_at: s.resume_at ? new Date(s.resume_at).toISOString() : null,
      restore_plan: s.restore_plan_id ?? null,
      pause: s.pause_count,
    })),
  };
}
