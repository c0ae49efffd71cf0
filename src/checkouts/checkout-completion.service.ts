// What the checkout workflow's activities run: checking the provider until the buyer paid, applying the purchase
// once (a superseded or duplicate payment refunded), and expiry.
import type { EntityManager } from '@mikro-orm/postgresql';
import { accountDetail, changeAccount, createAccount, grantAddon } from '../accounts/accounts.service.js';
import { Account } from '../accounts/accounts.entities.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { type OfferBump } from '../offers/offers.entities.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import { providerFor } from '../payments/payments.service.js';
import { ProviderError, type ProviderSubscription } from '../payments/provider.js';
import {
  LiveSubscriptionExists,
  liveSubscription,
  recordSubscription,
} from '../subscriptions/subscriptions.service.js';
import { cancelAtProvider } from '../subscriptions/lifecycle.service.js';
import { addMonths } from '../apps/clock.js';
import { clockOffsetOf } from '../apps/clock.service.js';
import { type CheckoutWorkflowInput } from '../../workflows/shared.js';
import { Checkout, type CheckoutRefund, type ICheckout } from './checkouts.entities.js';
import { presentCheckout } from './checkouts.present.js';

/** Checks the provider and applies the purchase when the subscription is active. */
export async function checkCheckout(
  deps: Deps,
  input: CheckoutWorkflowInput,
): Promise<{ status: ICheckout['status']; providerStatus: string | null }> {
  const em = deps.orm.em.fork();
  const c = await em.findOne(Checkout, { id: input.checkoutId });
  if (!c) return { status: 'cancelled', providerStatus: null };
  if (c.status !== 'created') return { status: c.status, providerStatus: null };
  const conn = await em.findOne(PaymentConnection, { appId: c.appId });
  if (!conn || !c.providerSubscriptionId) return { status: 'created', providerStatus: 'not connected' };
  const provider = providerFor(deps.config, conn);
  const sub = await provider.getSubscription(c.providerSubscriptionId);
  if (sub.status === 'ACTIVE') {
    // The account got a live subscription since this checkout was created (another tab, a concurrent checkout):
    // this one is a duplicate; it is cancelled at the provider before anything is captured or applied.
    const live = await liveSubscription(em, c.appId, buyerAccountId(c));
    if (live && live.providerSubscriptionId !== c.providerSubscriptionId)
      return supersede(deps, provider, c, live.providerSubscriptionId);
    let bumpsPaid = false;
    let paid = c.bumps;
    if (c.providerOrderId) {
      const order = await provider.getOrder(c.providerOrderId);
      // Another checkout (another tab, an older page) may have granted some of the bumped add-ons since this
      // one was created: only the others are charged. An approved order for add-ons the account now owns
      // entirely is left uncaptured; one it owns in part has its amount lowered to the rest before capture.
      paid = await bumpsStillDue(em, c);
      if (order.status === 'APPROVED' && paid.length > 0) {
        if (paid.length < c.bumps.length)
          await provider.updateOrderAmount(order.id, {
            amount: paid.reduce((sum, b) => sum + b.price, 0),
            currency: paid[0].currency,
            description: paid.map((b) => b.name).join(', '),
          });
        bumpsPaid = (await provider.captureOrder(order.id, `${c.id}:capture`)).status === 'COMPLETED';
      } else bumpsPaid = order.status === 'COMPLETED';
    }
    try {
      await applyCheckout(deps, c.id, bumpsPaid, sub, paid);
    } catch (err) {
      // A concurrent completion for the same account recorded its subscription first (decided in the database).
      if (!(err instanceof LiveSubscriptionExists)) throw err;
      return supersede(deps, provider, c, err.providerSubscriptionId);
    }
    return { status: 'completed', providerStatus: sub.status };
  }
  if (sub.status === 'CANCELLED' || sub.status === 'EXPIRED') {
    await sql(
      em,
      `update checkouts set status = 'cancelled', cancel_reason = coalesce(cancel_reason, $2), updated_at = now()
        where id = $1 and status = 'created'`,
      [c.id, `The provider reports the subscription ${sub.status}`],
    );
    return { status: 'cancelled', providerStatus: sub.status };
  }
  return { status: 'created', providerStatus: sub.status };
}

/**
 * A checkout approved for an account that has another live subscription: its provider subscription is cancelled at
 * the provider first, and only then is the checkout marked cancelled, so a crash in between leaves it `created` and
 * the next check (the workflow's, or the reconciler's restart of it) cancels again (a no-op once cancelled) and marks
 * it. Order bumps already captured for it (a race with the capture) are granted: the buyer paid for them.
 */
async function supersede(
  deps: Deps,
  provider: ReturnType<typeof providerFor>,
  c: ICheckout,
  liveId: string,
): Promise<{ status: ICheckout['status']; providerStatus: string | null }> {
  const account = buyerAccountId(c);
  const reason = `Account ${account} already has the live subscription ${liveId}: this duplicate was cancelled at the provider`;
  await cancelAtProvider(provider, c.providerSubscriptionId!, `Duplicate of subscription ${liveId}`);
  // Then the first cycle PayPal charged at activation goes back to the buyer, before the checkout is marked: a crash
  // anywhere here leaves it `created`, and the next check repeats both (idempotent at PayPal).
  const refund =
    c.refund ?? (await refundDuplicate(provider, c, liveId, await clockOffsetOf(deps.orm.em.fork(), c.appId)));
  deps.logger.warn(
    {
      checkout: c.id,
      account,
      duplicate: c.providerSubscriptionId,
      live: liveId,
      refunded: refund.amount,
      currency: refund.currency,
    },
    'an approved checkout duplicated a live subscription; cancelled it at the provider and refunded what it charged',
  );
  const order = c.providerOrderId ? await provider.getOrder(c.providerOrderId) : null;
  await inTransaction(deps, deps.orm.em.fork(), async (t) => {
    const marked = await sql<{ id: string }>(
      t.em,
      `update checkouts set status = 'cancelled', cancel_reason = $2, bumps_paid = $3, refund = $4::jsonb,
         updated_at = now()
        where id = $1 and status = 'created' returning id`,
      [c.id, reason, order?.status === 'COMPLETED', JSON.stringify(refund)],
    );
    if (!marked.length || order?.status !== 'COMPLETED') return;
    for (const b of c.bumps)
      await grantAddon({ em: t.em, deps, app: { id: c.appId } as never }, account, b.addon, 'order_bump').catch(
        (err: { status?: number }) => {
          if (err.status !== 409) throw err; // already owned
        },
      );
  });
  return { status: 'cancelled', providerStatus: 'CANCELLED' };
}

/**
 * Refunds every payment PayPal charged for a duplicate's subscription (the first cycle, charged at activation; a
 * renewal too if one slipped in): the subscription's transactions since the checkout was made, each completed one
 * refunded in full with the request id `<checkout>:refund:<payment>`, so a retried activity gets the same refund
 * back instead of a second one. A payment already refunded in full (by an earlier attempt whose answer was lost)
 * counts as refunded.
 */
async function refundDuplicate(
  provider: ReturnType<typeof providerFor>,
  c: ICheckout,
  liveId: string,
  /** The app's clock offset (a test clock): the provider charged on the app's time. */
  offsetMs: number,
): Promise<CheckoutRefund> {
  const from = new Date((c.createdAt ?? new Date()).getTime() - 60_000);
  const to = new Date(Date.now() + offsetMs + 60_000);
  const payments = await provider.listSubscriptionPayments(c.providerSubscriptionId!, { from, to });
  const done: CheckoutRefund['payments'] = [];
  let currency: string | null = null;
  for (const p of payments) {
    if (p.status !== 'COMPLETED' && p.status !== 'REFUNDED' && p.status !== 'PARTIALLY_REFUNDED') continue;
    const refundId = await provider
      .refundPayment(
        p.id,
        { note: `A duplicate of your subscription ${liveId}: refunded`, invoiceId: `${c.id}-refund-${p.id}` },
        `${c.id}:refund:${p.id}`,
      )
      .then((r) => r.id)
      .catch((err: unknown) => {
        // Refunded in full already (the earlier attempt's answer was lost): nothing is left to give back.
        if (err instanceof ProviderError && /CAPTURE_FULLY_REFUNDED/.test(err.message)) return 'already_refunded';
        throw err;
      });
    done.push({ payment_id: p.id, refund_id: refundId, amount: p.amount });
    currency = p.currency;
  }
  const amount = Math.round(done.reduce((sum, p) => sum + p.amount, 0) * 100) / 100;
  return {
    status: done.length ? 'refunded' : 'none',
    amount,
    currency,
    payments: done,
    refunded_at: new Date().toISOString(),
  };
}

/** The checkout's bumps whose add-ons the account it applies to does not own yet. */
async function bumpsStillDue(em: EntityManager, c: ICheckout): Promise<OfferBump[]> {
  if (!c.bumps.length) return [];
  const rows = await sql<{ addon_id: string }>(
    em,
    'select addon_id from account_addons where app_id = $1 and account_id = $2 and addon_id = any($3::text[])',
    [c.appId, buyerAccountId(c), c.bumps.map((b) => b.addon)],
  );
  const owned = new Set(rows.map((r) => r.addon_id));
  return c.bumps.filter((b) => !owned.has(b.addon));
}

/** The account a checkout applies to: the one it names, else the buyer's email, else one made for it. */
export const buyerAccountId = (c: Pick<ICheckout, 'id' | 'accountId' | 'email'>) =>
  c.accountId ?? c.email ?? `buyer_${c.id.slice(4)}`;

export async function expireCheckout(deps: Deps, checkoutId: string) {
  await sql(
    deps.orm.em.fork(),
    `update checkouts set status = 'expired', updated_at = now() where id = $1 and status = 'created'`,
    [checkoutId],
  );
}

const addCycles = (from: Date, interval: 'month' | 'year', cycles: number) => {
  const d = new Date(from);
  if (interval === 'year') d.setUTCFullYear(d.getUTCFullYear() + cycles);
  else return addMonths(d, cycles);
  return d;
};

/**
 * Applies a paid checkout once: the status moves from `created` to `completed` in the same
 * transaction as everything else, so a second caller finds nothing to do. Creates the account if
 * the buyer had none, moves it to the plan, records the offer and its extras (layer 2 of effective
 * access), grants the bumped add-ons, and emits the events.
 */
export async function applyCheckout(
  deps: Deps,
  checkoutId: string,
  bumpsPaid: boolean,
  providerSub: ProviderSubscription | null = null,
  paidBumps: OfferBump[] | null = null,
): Promise<boolean> {
  return inTransaction(deps, deps.orm.em.fork(), async (t) => {
    // A bump left out of the capture (its add-on came to be owned meanwhile) is not part of what was bought:
    // the checkout keeps the bumps that were charged, so its view and the offer's stats count what was paid.
    const claimed = await sql<{ id: string }>(
      t.em,
      `update checkouts set status = 'completed', completed_at = now(), bumps_paid = $2,
        bumps = coalesce($3::jsonb, bumps), updated_at = now() where id = $1 and status = 'created' returning id`,
      [checkoutId, bumpsPaid, bumpsPaid && paidBumps ? JSON.stringify(paidBumps) : null],
    );
    if (!claimed.length) return false;
    const c = (await t.em.findOne(Checkout, { id: checkoutId }, { refresh: true }))!;
    const ctx = { em: t.em, deps, app: { id: c.appId } };
    const accountId = buyerAccountId(c);
    const existing = await t.em.findOne(Account, { appId: c.appId, id: accountId });
    if (!existing) await createAccount({ ...ctx, app: { id: c.appId } as never }, { id: accountId, plan: c.planId });
    await changeAccount(ctx, accountId, async (_t, account) => {
      account.planId = c.planId;
      account.offerId = c.offerId ?? null;
    });
    if (!c.accountId) c.accountId = accountId;
    await recordSubscription(
      t,
      {
        appId: c.appId,
        accountId,
        providerSubscriptionId: c.providerSubscriptionId!,
        checkoutId: c.id,
        offerId: c.offerId ?? null,
        planId: c.planId,
        interval: c.interval,
        currency: c.currency,
        price: Number(c.price),
      },
      providerSub,
    );
    const endsAt = c.extras.cycles ? addCycles(new Date(), c.interval, c.extras.cycles) : null;
    for (const e of c.extras.entitlements) {
      await sql(
        t.em,
        `insert into account_extras (app_id, account_id, offer_id, kind, ref_id, max, ends_at) values ($1, $2, $3,
          'entitlement', $4, $5, $6)`,
        [c.appId, accountId, c.offerId ?? c.planId, e.id, e.max, endsAt],
      );
    }
    for (const a of c.extras.addons) {
      await sql(
        t.em,
        `insert into account_extras (app_id, account_id, offer_id, kind, ref_id, max, ends_at) values ($1, $2, $3,
          'addon', $4, null, $5)`,
        [c.appId, accountId, c.offerId ?? c.planId, a, endsAt],
      );
    }
    if (bumpsPaid) {
      for (const b of c.bumps) {
        await grantAddon({ ...ctx, app: { id: c.appId } as never }, accountId, b.addon, 'order_bump').catch(
          (err: { status?: number }) => {
            if (err.status !== 409) throw err; // already owned
          },
        );
      }
    }
    await t.em.flush();
    const account = (await t.em.findOne(Account, { appId: c.appId, id: accountId }))!;
    t.emit(c.appId, 'checkout.completed', { object: presentCheckout(c), account: await accountDetail(t.em, account) });
    return true;
  });
}

/** The buyer came back from the provider: make the checkout check now (nothing is revealed either way). */
/**
 * What the hosted return page says: the app's name, and the checkout the buyer comes back from (completed now, still
 * activating, or cancelled at the provider). Asks a waiting checkout to complete first.
 */
