// A pack order's money as PayPal confirms it: the capture grants the pack's credits once; a refund takes back what
// is left of them (issue 42, item 4). Called by the order's `complete` route, the hosted return page and the provider
// notifications (CHECKOUT.ORDER.APPROVED, PAYMENT.CAPTURE.COMPLETED, PAYMENT.CAPTURE.REFUNDED).
import type { Deps } from '../deps.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import { publishPending } from '../events/publish.js';
import { newId } from '../ids.js';
import { connectedProvider } from '../payments/payments.service.js';
import { ProviderError } from '../payments/provider.js';
import { actorFact } from '../subscriptions/actor-facts.js';
import { SETTLE_SQL } from './credits-time.service.js';
import { GRANT_SQL } from './credits.sql.js';
import { ORDER_COLUMNS, type OrderRow } from './packs.service.js';

const cents = (v: string | number) => Math.round(Number(v) * 100);

/**
 * Asks PayPal about the order and finishes what it confirms: an approved order is captured (the `PayPal-Request-Id`
 * `<order>:capture` makes a retried capture the same capture), and a completed capture grants the credits. A buyer's
 * return alone proves nothing: only the capture PayPal reports COMPLETED grants. A voided order ends `cancelled`.
 * Answers the order as it is afterwards.
 */
export async function settlePackOrder(deps: Deps, appId: string, orderId: string): Promise<OrderRow | null> {
  const em = deps.orm.em.fork();
  const [o] = await sql<OrderRow>(em, `select ${ORDER_COLUMNS} from credit_pack_orders where app_id = $1 and id = $2`, [
    appId,
    orderId,
  ]);
  if (!o || o.status !== 'created' || !o.provider_order_id) return o ?? null;
  const provider = await connectedProvider({ em, deps, app: { id: appId } as never });
  if (!provider) return o;
  let order = await provider.getOrder(o.provider_order_id);
  if (order.status === 'APPROVED') {
    try {
      order = await provider.captureOrder(order.id, `${o.id}:capture`);
    } catch (err) {
      // Captured meanwhile by another caller (a notification, a second `complete`): read what it captured.
      if (!(err instanceof ProviderError && /ORDER_ALREADY_CAPTURED/.test(err.message))) throw err;
      order = await provider.getOrder(order.id);
    }
  }
  if (order.status === 'COMPLETED' && order.capture?.status === 'COMPLETED')
    await grantPackOrder(deps, appId, o.id, order.capture.id);
  else if (order.status === 'VOIDED')
    await sql(
      em,
      `update credit_pack_orders set status = 'cancelled', updated_at = now() where id = $1 and status = 'created'`,
      [o.id],
    );
  const [now] = await sql<OrderRow>(
    deps.orm.em.fork(),
    `select ${ORDER_COLUMNS} from credit_pack_orders where id = $1`,
    [o.id],
  );
  return now;
}

/**
 * Grants a paid order's credits once: the order moves from `created` to `completed` with its capture id (unique) in
 * the same transaction as the grant (its period key `capture:<id>` unique per account and pool), its `topup` ledger
 * row and `credits.granted`; a second caller with the same capture (the notification racing the capture's answer)
 * finds the order completed and grants nothing. The account's actor hears of it (a fact in the outbox).
 */
export async function grantPackOrder(deps: Deps, appId: string, orderId: string, captureId: string) {
  const events = await inTransaction(deps, deps.orm.em.fork(), async (t) => {
    const claimed = await sql<OrderRow>(
      t.em,
      `update credit_pack_orders set status = 'completed', capture_id = $3, completed_at = now(), updated_at = now()
        where app_id = $1 and id = $2 and status = 'created' returning ${ORDER_COLUMNS}`,
      [appId, orderId, captureId],
    );
    const o = claimed[0];
    if (!o) return [];
    const grantId = newId('creditGrant');
    const [row] = await sql<{ grant: { id: string } | null; events: string[] }>(t.em, GRANT_SQL, [
      appId,
      o.account_id,
      o.pool_id,
      Number(o.amount),
      null,
      'pack',
      `pack ${o.pack_id} (order ${o.id})`,
      grantId,
      null,
      null,
      null,
      newId('event'),
      captureId,
      `capture:${captureId}`,
      null,
      '',
    ]);
    // The pool was deleted since the order was made: nothing to grant into (the order is still marked paid).
    if (row?.grant) await sql(t.em, 'update credit_pack_orders set grant_id = $2 where id = $1', [o.id, row.grant.id]);
    t.temporal(actorFact(appId, o.account_id, { kind: 'account_changed' }));
    return row?.events ?? [];
  });
  if (events.length)
    await publishPending(deps, events).catch((err) =>
      deps.logger.warn({ err, events }, 'credits event publishing deferred to the relay'),
    );
}

/**
 * A refund of a pack's capture at PayPal (in full or in part): the credits it paid for, in proportion to the money
 * refunded so far (rounded up, at most the pack), less what earlier refunds already took, are taken back from what is
 * left of the pack's grant. Credits already spent are not taken (the balance never goes below zero): the `reversal`
 * ledger row says what was taken, the order's `taken_back` the total. Once per refund id (its primary key), under
 * the order's and the balance's locks.
 */
export async function takeBackForRefund(
  deps: Deps,
  appId: string,
  captureId: string,
  refund: { id: string; amount: string },
) {
  await inTransaction(deps, deps.orm.em.fork(), async (t) => {
    const [o] = await sql<OrderRow>(
      t.em,
      `select ${ORDER_COLUMNS} from credit_pack_orders where app_id = $1 and capture_id = $2 for update`,
      [appId, captureId],
    );
    if (!o) return;
    const seen = await sql(t.em, 'select 1 from credit_pack_refunds where refund_id = $1', [refund.id]);
    if (seen.length) return;
    const [prior] = await sql<{ due: string | null }>(
      t.em,
      'select sum(credits_due) as due from credit_pack_refunds where order_id = $1',
      [o.id],
    );
    const refundedCents = cents(o.refunded) + cents(refund.amount);
    const amount = Number(o.amount);
    const owedTotal = Math.min(amount, Math.ceil((amount * refundedCents) / Math.max(1, cents(o.price))));
    const due = Math.max(0, owedTotal - Number(prior?.due ?? 0));
    const key = [appId, o.account_id, o.pool_id, ''];
    let taken = 0;
    if (due > 0 && o.grant_id) {
      // The balance row's lock first (as every writer of the pool's grants takes it), then the debits not yet
      // taken from particular grants are settled, so the grant's `remaining` is what is really left of it.
      const locked = await sql(
        t.em,
        `select 1 from credit_balances where app_id = $1 and account_id = $2 and pool_id = $3 and entity_id = $4
         for update`,
        key,
      );
      if (locked.length) {
        await sql(t.em, SETTLE_SQL, key);
        const [g] = await sql<{ taken: string }>(
          t.em,
          `with d as (select id, least(remaining, $2::bigint) as t from credit_grants where id = $1 for update)
           update credit_grants g set remaining = g.remaining - d.t from d where g.id = d.id returning d.t as taken`,
          [o.grant_id, due],
        );
        taken = Number(g?.taken ?? 0);
        if (taken > 0) {
          await sql(
            t.em,
            `update credit_balances set balance = balance - $5, updated_at = now()
              where app_id = $1 and account_id = $2 and pool_id = $3 and entity_id = $4`,
            [...key, taken],
          );
          await sql(
            t.em,
            `insert into credit_ledger (app_id, account_id, pool_id, entity_id, grant_id, amount, kind, ref)
             values ($1, $2, $3, $4, $5, $6, 'reversal', $7)`,
            [...key, o.grant_id, -taken, refund.id],
          );
        }
      }
    }
    await sql(
      t.em,
      `insert into credit_pack_refunds (refund_id, order_id, amount, credits_due, credits_taken)
       values ($1, $2, $3, $4, $5)`,
      [refund.id, o.id, (cents(refund.amount) / 100).toFixed(2), due, taken],
    );
    await sql(
      t.em,
      `update credit_pack_orders set refunded = refunded + $2::numeric, taken_back = taken_back + $3, updated_at = now()
        where id = $1`,
      [o.id, (cents(refund.amount) / 100).toFixed(2), taken],
    );
  });
}

/** The buyer came back from PayPal with the order's `token`: settle that pack order now (null: not a pack's). */
export async function settleReturnedPackOrder(deps: Deps, appId: string, providerOrderId: string) {
  const [o] = await sql<{ id: string }>(
    deps.orm.em.fork(),
    'select id from credit_pack_orders where app_id = $1 and provider_order_id = $2',
    [appId, providerOrderId],
  );
  if (!o) return null;
  // PayPal away: the page still answers; the notification or a `complete` call settles the order later.
  return settlePackOrder(deps, appId, o.id).catch((err: unknown) => {
    deps.logger.warn({ err, order: o.id }, 'credit pack order: settling on return failed');
    return { status: 'created' as const };
  });
}

/**
 * What a verified provider notification means for pack orders, if anything: an approved order is captured, a
 * completed capture of one of ours grants (its `custom_id` is our order's id, its order PayPal's), a refund of one of
 * our captures takes back. Anything else (a subscription's events, an order bump's) is not a pack's.
 */
export async function packNotification(
  deps: Deps,
  appId: string,
  eventType: string,
  resource: Record<string, unknown>,
) {
  if (eventType === 'CHECKOUT.ORDER.APPROVED' && typeof resource.id === 'string') {
    const [o] = await sql<{ id: string }>(
      deps.orm.em.fork(),
      'select id from credit_pack_orders where app_id = $1 and provider_order_id = $2',
      [appId, resource.id],
    );
    if (o) await settlePackOrder(deps, appId, o.id);
    return;
  }
  if (eventType === 'PAYMENT.CAPTURE.COMPLETED' && typeof resource.id === 'string') {
    const r = resource as { id: string; status?: string; custom_id?: string; supplementary_data?: unknown };
    const providerOrder = (r.supplementary_data as { related_ids?: { order_id?: string } } | undefined)?.related_ids
      ?.order_id;
    if (!r.custom_id || !providerOrder || (r.status && r.status !== 'COMPLETED')) return;
    // Ours only when both ids agree: the capture's order is the one our order made.
    const [o] = await sql<{ id: string }>(
      deps.orm.em.fork(),
      'select id from credit_pack_orders where app_id = $1 and id = $2 and provider_order_id = $3',
      [appId, r.custom_id, providerOrder],
    );
    if (o) await grantPackOrder(deps, appId, o.id, r.id);
    return;
  }
  if (eventType === 'PAYMENT.CAPTURE.REFUNDED' && typeof resource.id === 'string') {
    const r = resource as { id: string; status?: string; amount?: { value?: string }; links?: unknown };
    const links = Array.isArray(r.links) ? (r.links as { rel?: string; href?: string }[]) : [];
    const up = links.find((l) => l.rel === 'up')?.href ?? '';
    const captureId = /\/v2\/payments\/captures\/([^/?#]+)/.exec(up)?.[1];
    if (!captureId || !r.amount?.value || (r.status && r.status !== 'COMPLETED')) return;
    await takeBackForRefund(deps, appId, decodeURIComponent(captureId), { id: r.id, amount: r.amount.value });
  }
}
