// A cancel session's view, and the settling of a save that waited on the provider (a plan change the buyer
// approved, refused or let expire). Apart from sessions.service.ts so that subscriptions, which settle saves, do
// not import the session service that imports them.
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { accountDetail, findAccount } from '../accounts/accounts.service.js';
import { prepared } from '../db/sql.js';
import { type Tx } from '../db/transaction.js';
import { iso } from '../time.js';
import { CancelSession, type ICancelSession, type OfferLogEntry } from './cancel-flows.entities.js';
import { type SessionOffer } from './save-offers.js';
import { sessionView, type SessionAccount } from './cancel-flows.present.js';

/** `account` of the session view, in one statement: id, plan name, and a live subscription's terms. */
async function accountSummary(em: EntityManager, appId: string, accountId: string): Promise<SessionAccount> {
  const [r] = await prepared<{
    plan_name: string;
    price: number | null;
    currency: string | null;
    interval: 'month' | 'year' | null;
    renews_at: Date | null;
    status: string | null;
  }>(
    em,
    'cancel_session_account',
    `select coalesce(p.name, a.plan_id) as plan_name, s.price, s.currency, s.interval, s.renews_at, s.status
       from accounts a
       left join plans p on p.app_id = a.app_id and p.id = a.plan_id
       left join subscriptions s on s.app_id = a.app_id and s.account_id = a.id
      where a.app_id = $1 and a.id = $2`,
    [appId, accountId],
  );
  const live = r && r.status !== null && r.status !== 'cancelled';
  return {
    id: accountId,
    plan_name: r?.plan_name ?? '',
    subscription: live
      ? { price: Number(r.price), currency: r.currency!, interval: r.interval!, renews_at: iso(r.renews_at) }
      : null,
  };
}

/** The session view the spec describes (every session call returns it). */
export async function presentSession(em: EntityManager, s: ICancelSession) {
  return sessionView(s, await accountSummary(em, s.appId, s.accountId));
}

export function markLastOffer(s: ICancelSession, status: OfferLogEntry['status']) {
  const offers = [...s.offers];
  const i = offers.map((o) => o.step).lastIndexOf(s.stepId);
  if (i >= 0) offers[i] = { ...offers[i], status };
  return offers;
}

/**
 * The provider settled a save that waited in `pending`: approved (`applied`: the session is saved, its offer
 * accepted, `cancel_flow.saved` emitted, and from now on it counts in the flow's stats), or refused or never
 * approved (`refused`, `expired`: back to `open` at its offer step, where the customer can accept again, decline,
 * or go on to cancel; the offer's result says what happened). Runs in the caller's transaction; once only.
 */
export async function settlePendingSave(t: Tx, sessionId: string, outcome: 'applied' | 'refused' | 'expired') {
  const row = await t.em.findOne(
    CancelSession,
    { id: sessionId },
    { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
  );
  if (!row || row.status !== 'pending') return;
  if (outcome === 'applied') {
    row.status = 'saved';
    row.offers = markLastOffer(row, 'accepted');
    row.offer = row.offer ? { ...row.offer, status: 'accepted' as SessionOffer['status'] } : null;
    row.result = { ...(row.result ?? {}), status: 'approved' };
    row.endedAt = new Date();
  } else {
    row.status = 'open';
    row.offers = markLastOffer(row, outcome);
    row.result = null;
    row.approveUrl = null;
    row.revenueKept = null;
    row.currency = null;
  }
  await t.em.flush();
  if (outcome !== 'applied') return;
  const view = await presentSession(t.em, row);
  const account = await accountDetail(t.em, await findAccount(t.em, row.appId, row.accountId));
  t.emit(row.appId, 'cancel_flow.saved', { object: view, account });
}
