// A cancel session's outcomes: accepting the save offer or cancelling, applied for real through the billing
// services (provider first, then one transaction for the local change, the session and its events), claimed so two
// never both reach the provider. The walk through the flow's steps is in sessions.service.ts.
import { LockMode } from '@mikro-orm/core';
import type { z } from 'zod';
import { accountDetail, changeAccount, findAccount } from '../accounts/accounts.service.js';
import { addMonths } from '../apps/clock.js';
import { freshAppNow } from '../apps/clock.service.js';
import { findIncentive, findPlan } from '../catalog/catalog.service.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import { conflict } from '../errors.js';
import type { Caller } from '../http/route.js';
import { requireProvider } from '../payments/payments.service.js';
import { Subscription } from '../subscriptions/subscriptions.entities.js';
import { findSubscription } from '../subscriptions/subscriptions.service.js';
import { cancelAtProvider, cancelLocally, pauseLocally, suspendForPause } from '../subscriptions/lifecycle.service.js';
import { holdChangeTarget, notePendingChange, requestPlanChange } from '../subscriptions/plan-changes.service.js';
import { askActor } from '../subscriptions/actor-client.js';
import { CancelSession, type ICancelSession } from './cancel-flows.entities.js';
import type * as S from './cancel-flows.schemas.js';
import { discountedPrice, regularPriceOf, round2, type SessionOffer } from './save-offers.js';
import { markLastOffer, presentSession } from './pending-saves.service.js';
import { mustBeAt, visibleSession, type SessionView } from './sessions.service.js';

/**
 * Marks the session as being applied, atomically, so two accepts (or an accept and a cancel) never
 * both reach the provider; a crash leaves a claim that lapses after two minutes.
 *
 * `owner` is the request id of the account actor's intent that applies the session. A claim already held by that
 * same request belongs to an attempt of it that died between the provider call and its commit (a worker killed
 * mid-step): the retried step takes it over at once, rather than meeting its own claim as another call's (a 409 the
 * actor does not retry, which would leave the provider changed and the record not). Any other call still gets the
 * 409. The token (the claim's new `claimed_until`) tells the attempts apart: only the newest one may commit.
 */
async function claim(
  ctx: Ctx,
  s: ICancelSession,
  owner: string | null,
): Promise<{ offer: SessionOffer | null; token: string }> {
  const rows = await sql<{ offer: SessionOffer | null; token: string }>(
    ctx.deps.orm.em.fork(),
    `update cancel_sessions
        set claimed_until = now() + interval '2 minutes', claimed_by = $3, updated_at = now()
      where id = $1 and status = 'open' and step_id = $2
        and (claimed_until is null or claimed_until < now() or ($3::varchar is not null and claimed_by = $3))
      returning offer, claimed_until::text as token`,
    [s.id, s.stepId, owner],
  );
  if (rows.length === 0) throw conflict(`Cancel session ${s.id} is being changed by another call; read it again`);
  return rows[0];
}

/** Frees the claim `token` (only that one: a retry of the same intent may have taken it over meanwhile). */
async function release(ctx: Ctx, s: ICancelSession, token: string) {
  await sql(
    ctx.deps.orm.em.fork(),
    `update cancel_sessions set claimed_until = null, claimed_by = null
      where id = $1 and claimed_until::text = $2`,
    [s.id, token],
  );
}

interface Outcome {
  result: Record<string, unknown>;
  approveUrl?: string | null;
  /** Monthly revenue still billed after the save, and its currency. */
  revenue?: { amount: number; currency: string } | null;
  /** The save needs the buyer's approval at the provider: the session waits in `pending`. */
  awaitsProvider?: boolean;
}

const monthly = (price: number, interval: string) => round2(interval === 'year' ? price / 12 : price);

/**
 * Ends the session with an outcome: the provider half runs first (outside any transaction), then
 * the local change, the session's new state and its event commit together.
 */
async function finish(
  ctx: Ctx,
  s: ICancelSession,
  providerHalf: (claimed: { offer: SessionOffer | null }) => Promise<(t: Tx) => Promise<Outcome>>,
  end: { status: 'saved' | 'cancelled'; event: 'cancel_flow.saved' | 'cancel_flow.cancelled' },
  owner: string | null,
) {
  // The claimed row's offer is the one applied (not an earlier read of it).
  const claimed = await claim(ctx, s, owner);
  try {
    const localHalf = await providerHalf(claimed);
    const em = ctx.deps.orm.em.fork();
    return await inTransaction(ctx.deps, em, async (t) => {
      const row = await t.em.findOneOrFail(
        CancelSession,
        { id: s.id },
        { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
      );
      const [still] = await sql<{ mine: boolean }>(
        t.em,
        'select claimed_until::text = $2 as mine from cancel_sessions where id = $1',
        [s.id, claimed.token],
      );
      if (!still?.mine || row.status !== 'open')
        throw conflict(`Cancel session ${s.id} changed while it was being applied; read it again`);
      const outcome = await localHalf(t);
      // A save the provider must approve first waits in `pending`: not saved, no event, nothing counted, until
      // the provider confirms it (settlePendingSave).
      const pending = end.status === 'saved' && outcome.awaitsProvider === true;
      if (end.status === 'saved' && !pending) {
        row.offers = markLastOffer(row, 'accepted');
        row.offer = row.offer ? { ...row.offer, status: 'accepted' as SessionOffer['status'] } : null;
      }
      row.status = pending ? 'pending' : end.status;
      row.result = outcome.result;
      row.approveUrl = outcome.approveUrl ?? null;
      row.revenueKept = outcome.revenue?.amount ?? null;
      row.currency = outcome.revenue?.currency ?? null;
      row.endedAt = pending ? null : new Date();
      row.claimedUntil = null;
      row.claimedBy = null;
      await t.em.flush();
      const view = await presentSession(t.em, row);
      if (pending) return view;
      const account = await accountDetail(t.em, await findAccount(t.em, row.appId, row.accountId));
      t.emit(row.appId, end.event, { object: view, account });
      return view;
    });
  } catch (err) {
    await release(ctx, s, claimed.token);
    throw err;
  }
}

/**
 * Accepting an offer is an intent of the account's actor (it meets the account's other intents there): the session
 * is checked here (visible to the caller, at its offer step), then the actor applies it (`acceptOffer`).
 */
export async function acceptThroughActor(
  ctx: Ctx,
  caller: Caller,
  requestId: string,
  id: string,
  urls: z.output<typeof S.acceptBody> & { origin?: string },
) {
  const s = await visibleSession(ctx, caller, id);
  mustBeAt(s, 'offer', 'only an offer can be accepted');
  const kind = (s.offer as SessionOffer | null)?.terms.kind;
  if (!kind)
    throw conflict(
      `Cancel session ${s.id} has no offer for this account at step ${s.stepId} any more; decline to go on`,
    );
  return askActor(
    ctx,
    s.accountId,
    {
      kind: 'accept_save',
      sessionId: s.id,
      offer: kind,
      ...(urls.return_url ? { returnUrl: urls.return_url } : {}),
      ...(urls.cancel_url ? { cancelUrl: urls.cancel_url } : {}),
      ...(urls.origin ? { origin: urls.origin } : {}),
    },
    { caller, requestId },
  ) as Promise<SessionView>;
}

/** The confirm step's cancellation, as an intent of the account's actor (`cancelAtConfirm` runs there). */
export async function cancelThroughActor(ctx: Ctx, caller: Caller, requestId: string, id: string) {
  const s = await visibleSession(ctx, caller, id);
  mustBeAt(s, 'confirm', 'a session is cancelled from its confirm step');
  return askActor(
    ctx,
    s.accountId,
    { kind: 'cancel', at: 'now', sessionId: s.id, reason: `Cancel flow ${s.flowId}, session ${s.id}` },
    { caller, requestId },
  ) as Promise<SessionView>;
}

/** Who applies a session: the account actor's intent (its request id owns the claim), or a call of its own. */
interface Applier {
  /** The intent's request id: a retried step of it takes over the claim its killed attempt left. */
  requestId?: string;
}

export async function acceptOffer(
  ctx: Ctx,
  caller: Caller,
  id: string,
  urls: z.output<typeof S.acceptBody> & { origin?: string },
  by: Applier = {},
) {
  const s = await visibleSession(ctx, caller, id);
  mustBeAt(s, 'offer', 'only an offer can be accepted');
  const accountId = s.accountId;
  const reason = `Cancel flow ${s.flowId}, session ${s.id}`;
  return finish(
    ctx,
    s,
    async ({ offer }) => {
      if (!offer)
        throw conflict(
          `Cancel session ${s.id} has no offer for this account at step ${s.stepId} any more; decline to go on`,
        );
      const t = offer.terms;
      switch (t.kind) {
        case 'discount':
        case 'downgrade': {
          const sub = await findSubscription(ctx.em, ctx.app.id, accountId);
          let target: Parameters<typeof requestPlanChange>[2];
          if (t.kind === 'discount') {
            if (sub.discount || sub.pendingChange?.discount)
              throw conflict(`The subscription of account ${accountId} already has a discount`);
            const regular = regularPriceOf(sub);
            const price = discountedPrice(regular, t.percent);
            const plan = await findPlan(ctx.em, ctx.app.id, sub.planId);
            target = {
              plan,
              interval: sub.interval,
              currency: sub.currency,
              price: regular,
              discount: { percent: t.percent, cycles: t.cycles, price },
            };
          } else {
            const price = offer.details.price as number | null;
            if (price === null) throw conflict(`The downgrade to ${t.plan} no longer applies to account ${accountId}`);
            target = {
              plan: await findPlan(ctx.em, ctx.app.id, t.plan),
              interval: sub.interval,
              currency: sub.currency,
              price,
            };
          }
          const { approveUrl, pending } = await requestPlanChange(
            ctx,
            sub,
            target,
            { ...urls, sessionId: s.id },
            // The spec's outcomes: a discount applies once the provider reports it, a downgrade at the renewal.
            t.kind === 'downgrade'
              ? { kind: 'downgrade', direction: 'downgrade', policy: 'at_renewal', effective: 'renewal' }
              : { kind: 'discount', effective: 'now' },
          );
          return async (tx) => {
            await holdChangeTarget(tx.em, ctx.app.id, pending.plan);
            const row = await findSubscription(tx.em, ctx.app.id, accountId, true);
            if (row.pendingChange)
              throw conflict(`The subscription of account ${accountId} already has a change waiting`);
            row.pendingChange = pending;
            await tx.em.flush();
            await notePendingChange(tx, ctx.app.id, accountId, pending);
            return {
              awaitsProvider: true,
              result: {
                outcome: t.kind,
                status: 'pending_approval',
                plan: pending.plan,
                price: pending.price,
                currency: pending.currency,
                interval: pending.interval,
                ...(t.kind === 'discount' ? { percent: t.percent, cycles: t.cycles } : {}),
              },
              approveUrl,
              revenue: { amount: monthly(pending.price, pending.interval), currency: pending.currency },
            };
          };
        }
        case 'pause': {
          await suspendForPause(ctx, accountId, t.months, reason);
          return async (tx) => {
            const sub = await pauseLocally(tx, ctx.deps, ctx.app.id, accountId, t.months, reason);
            return {
              result: {
                outcome: 'pause',
                months: t.months,
                resume_at: sub.pause?.resume_at ?? null,
                restore_plan: sub.pause?.restore_plan ?? null,
              },
              revenue: { amount: monthly(sub.price, sub.interval), currency: sub.currency },
            };
          };
        }
        case 'incentive': {
          await findIncentive(ctx.em, ctx.app.id, t.incentive);
          return async (tx) => {
            // Months on the app's clock (a test clock moved forward counts): the actor ends it then.
            const expires = addMonths(await freshAppNow(tx.em, ctx.app.id), t.months);
            const after = await changeAccount(
              { em: tx.em, deps: ctx.deps, app: ctx.app },
              accountId,
              async (_t, account) => {
                account.incentiveId = t.incentive;
                account.incentiveExpiresAt = expires;
              },
            );
            const sub = await tx.em.findOne(Subscription, { appId: ctx.app.id, accountId });
            const billed =
              sub && sub.status === 'active'
                ? { amount: monthly(Number(sub.price), sub.interval), currency: sub.currency }
                : null;
            return {
              result: {
                outcome: 'incentive',
                incentive: t.incentive,
                months: t.months,
                incentive_expires_at: after.incentive_expires_at,
              },
              revenue: billed,
            };
          };
        }
      }
    },
    { status: 'saved', event: 'cancel_flow.saved' },
    by.requestId ?? null,
  );
}

/**
 * The confirm step: a subscription billed here is cancelled at the provider and the account moves to
 * the free plan (if the app has one); an account billed elsewhere is only marked (`billing: external`
 * in the result and the `cancel_flow.cancelled` event), for the app's own billing to act on.
 */
export async function cancelAtConfirm(ctx: Ctx, caller: Caller, id: string, by: Applier = {}) {
  const s = await visibleSession(ctx, caller, id);
  mustBeAt(s, 'confirm', 'a session is cancelled from its confirm step');
  const accountId = s.accountId;
  return finish(
    ctx,
    s,
    async () => {
      const sub = await ctx.em.findOne(Subscription, { appId: ctx.app.id, accountId });
      const billedHere = !!sub && sub.status !== 'cancelled';
      if (billedHere) {
        const { provider } = await requireProvider(ctx);
        await cancelAtProvider(provider, sub.providerSubscriptionId, `Cancel flow ${s.flowId}, session ${s.id}`);
      }
      return async (tx) => {
        if (billedHere) await cancelLocally(tx, ctx.deps, ctx.app.id, accountId, { providerStatus: 'CANCELLED' });
        const account = await findAccount(tx.em, ctx.app.id, accountId);
        return {
          result: { outcome: 'cancelled', billing: billedHere ? 'provider' : 'external', plan: account.planId },
        };
      };
    },
    { status: 'cancelled', event: 'cancel_flow.cancelled' },
    by.requestId ?? null,
  );
}
