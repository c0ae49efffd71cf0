import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import { providerFor } from '../payments/payments.service.js';
import { liveSubscription } from './subscriptions.service.js';
import { cancelAtProvider } from './lifecycle.service.js';
import { presentUntracked } from './subscriptions.present.js';

/** Checkouts whose provider subscription is looked at per reconciler run (oldest first). */
const SWEEP_LIMIT = 50;

/**
 * Finds provider subscriptions offerkit made through its checkouts that it does not track as an account's live
 * subscription yet are live at the provider (ACTIVE or SUSPENDED): a duplicate from before one live subscription
 * per account was enforced, or a subscription approved after its checkout expired. A duplicate of the account's live
 * subscription is cancelled at the provider (offerkit made it; nobody must be billed twice); any other is reported.
 * Each one is recorded (`GET /apps/:appId/subscriptions/untracked`) and emits `subscription.untracked`. Every
 * checkout is looked at once (`provider_checked_at`), except one still waiting for its buyer.
 */
export async function sweepUntracked(deps: Deps): Promise<{ checked: number; cancelled: number; reported: number }> {
  const em = deps.orm.em.fork();
  const rows = await sql<{
    id: string;
    app_id: string;
    account: string;
    provider_subscription_id: string;
  }>(
    em,
    `select c.id, c.app_id, coalesce(c.account_id, c.email, 'buyer_' || substr(c.id, 5)) as account,
            c.provider_subscription_id
       from checkouts c
      where c.provider_subscription_id is not null and c.provider_checked_at is null and c.status <> 'created'
        and not exists (select 1 from subscriptions s where s.app_id = c.app_id
                          and s.provider_subscription_id = c.provider_subscription_id and s.status in ('active', 'paused'))
      order by c.created_at limit $1`,
    [SWEEP_LIMIT],
  );
  const out = { checked: 0, cancelled: 0, reported: 0 };
  for (const r of rows) {
    const conn = await em.findOne(PaymentConnection, { appId: r.app_id });
    if (!conn) continue;
    const provider = providerFor(deps.config, conn);
    const remote = await provider.getSubscription(r.provider_subscription_id).catch(() => null);
    if (!remote) continue; // unreachable now: the next run looks again
    out.checked++;
    if (remote.status === 'ACTIVE' || remote.status === 'SUSPENDED') {
      const live = await liveSubscription(deps.orm.em.fork(), r.app_id, r.account);
      const duplicate = live !== null && live.providerSubscriptionId !== r.provider_subscription_id;
      if (duplicate)
        await cancelAtProvider(
          provider,
          r.provider_subscription_id,
          `Duplicate of subscription ${live.providerSubscriptionId}`,
        );
      out[duplicate ? 'cancelled' : 'reported']++;
      await inTransaction(deps, deps.orm.em.fork(), async (t) => {
        const [found] = await sql<Record<string, unknown>>(
          t.em,
          `insert into untracked_subscriptions (app_id, provider_subscription_id, account_id, checkout_id, provider_status,
             action, live_subscription_id) values ($1, $2, $3, $4, $5, $6, $7)
           on conflict (app_id, provider_subscription_id) do nothing returning *`,
          [
            r.app_id,
            r.provider_subscription_id,
            r.account,
            r.id,
            duplicate ? 'CANCELLED' : remote.status,
            duplicate ? 'cancelled' : 'reported',
            live?.providerSubscriptionId ?? null,
          ],
        );
        if (found) t.emit(r.app_id, 'subscription.untracked', { object: presentUntracked(found) });
      });
      deps.logger.warn(
        { app: r.app_id, account: r.account, subscription: r.provider_subscription_id, duplicate },
        duplicate
          ? 'reconciler: cancelled a duplicate provider subscription offerkit had made'
          : 'reconciler: a live provider subscription offerkit does not track',
      );
    }
    await sql(deps.orm.em.fork(), 'update checkouts set provider_checked_at = now() where id = $1', [r.id]);
  }
  return out;
}

/** The untracked provider subscriptions the reconciler found for the app, newest first. */
export async function listUntracked(ctx: Ctx) {
  const rows = await sql<Record<string, unknown>>(
    ctx.em,
    'select * from untracked_subscriptions where app_id = $1 order by found_at desc limit 500',
    [ctx.app.id],
  );
  return { data: rows.map(presentUntracked) };
}
