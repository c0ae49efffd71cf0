// What the account actor's activities do: an intent (someone asked), the facts that arrived, or one of its dates.
// Each changes the record (and the provider) through the billing services and answers the account's new snapshot.
import { expireAccountIncentive } from '../accounts/accounts.service.js';
import { App } from '../apps/apps.entities.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import type { Ctx } from '../context.js';
import { expireCredits, grantPlanCredits } from '../credits/credits-time.service.js';
import type { Deps } from '../deps.js';
import { AppError, conflict, notFound } from '../errors.js';
import { getSession } from '../cancel-flows/sessions.service.js';
import { acceptOffer, cancelAtConfirm } from '../cancel-flows/outcomes.service.js';
import { recordTimeline } from '../timeline/timeline.service.js';
import { accountWorkflowId, type AccountFact, type IntentAnswer } from '../../workflows/shared.js';
import type { BillingSnapshot, Intent, TimerKind } from '../../workflows/billing-rules.js';
import { takeIntent } from './intent-claims.js';
import { loadSnapshot } from './snapshot.service.js';
import {
  cancelAtPeriodEnd,
  cancelNow,
  endGrace,
  finishCancelAtPeriodEnd,
  pauseSubscription,
  resumePause,
  undoCancel,
} from './lifecycle.service.js';
import { changeSubscription, dropPendingChange, withdrawChange } from './plan-changes.service.js';
import { hasSubscription, retryPayment, syncSubscription } from './sync.service.js';
import { findSubscription } from './subscriptions.service.js';
import { presentSubscription } from './subscriptions.present.js';

async function appCtx(deps: Deps, appId: string): Promise<Ctx> {
  const em = deps.orm.em.fork();
  const app = await em.findOne(App, { id: appId }, { refresh: true });
  if (!app) throw notFound(`App ${appId}`);
  return { em, deps, app };
}

const snapshot = (deps: Deps, appId: string, accountId: string) => loadSnapshot(deps.orm.em.fork(), appId, accountId);

/** One line saying what an intent asks for (the timeline's). */
export function describeIntent(intent: Intent): string {
  switch (intent.kind) {
    case 'change':
      return (
        `Change to plan ${intent.plan}${intent.interval ? ` (${intent.interval}ly)` : ''}` +
        (intent.replace ? ', replacing the scheduled change' : '')
      );
    case 'withdraw_change':
      return 'Withdraw the waiting or scheduled change';
    case 'cancel':
      return intent.at === 'period_end'
        ? 'Cancel at the end of the period'
        : `Cancel now${intent.sessionId ? ` (cancel session ${intent.sessionId})` : ''}`;
    case 'pause':
      return `Pause for ${intent.months} month(s)`;
    case 'resume':
      return 'Resume';
    case 'accept_save':
      return `Accept the ${intent.offer} save offer of cancel session ${intent.sessionId}`;
    case 'retry_payment':
      return 'Retry the failed payment';
    case 'sync':
      return 'Re-read the subscription at the provider';
  }
}

/** Runs an intent the actor accepted; answers the route's answer and the new snapshot. */
export async function runIntent(
  deps: Deps,
  appId: string,
  accountId: string,
  intent: Intent,
  firstAttempt: boolean,
): Promise<{ answer: IntentAnswer; snapshot: BillingSnapshot }> {
  const ctx = await appCtx(deps, appId);
  const urls = {
    ...('returnUrl' in intent && intent.returnUrl ? { return_url: intent.returnUrl } : {}),
    ...('cancelUrl' in intent && intent.cancelUrl ? { cancel_url: intent.cancelUrl } : {}),
    ...('origin' in intent && intent.origin ? { origin: intent.origin } : {}),
  };
  // The intent line, once, unless the API already told its caller that nothing was changed (it gave up waiting).
  const take = () =>
    takeIntent(deps.orm.em.fork(), {
      appId,
      accountId,
      requestId: intent.requestId,
      type: intent.kind,
      summary: describeIntent(intent),
      by: intent.by,
      workflowId: accountWorkflowId(appId, accountId),
    });
  const { claim, applied } = await take();
  if (claim === 'abandoned')
    throw conflict('The caller was answered 503 (not taken within 5 s) before the actor took it; nothing was changed', {
      reason: 'expired_request',
    });
  // A retry whose first attempt committed (and died before it could report): answer what it did, not a refusal.
  if (applied && !firstAttempt)
    return { answer: await answerApplied(ctx, accountId, intent), snapshot: await snapshot(deps, appId, accountId) };
  let answer: unknown;
  try {
    switch (intent.kind) {
      case 'change':
        answer = await changeSubscription(ctx, accountId, {
          plan: intent.plan,
          ...(intent.interval ? { interval: intent.interval } : {}),
          ...(intent.replace ? { replace: true } : {}),
          ...(intent.prorationDate ? { prorationDate: intent.prorationDate } : {}),
          ...urls,
        });
        break;
      case 'withdraw_change':
        answer = await withdrawChange(ctx, accountId, urls);
        break;
      case 'cancel':
        answer = intent.sessionId
          ? await cancelAtConfirm(ctx, { kind: 'secret' }, intent.sessionId, { requestId: intent.requestId })
          : intent.at === 'period_end'
            ? await cancelAtPeriodEnd(ctx, accountId, intent.reason)
            : await cancelNow(ctx, accountId, intent.reason);
        break;
      case 'pause':
        answer = await pauseSubscription(ctx, accountId, intent.months, intent.reason);
        break;
      case 'resume': {
        const s = await findSubscription(ctx.em, appId, accountId);
        if (s.status === 'paused') await resumePause(deps, appId, accountId, { by: 'request' });
        else await undoCancel(ctx, accountId);
        answer = presentSubscription(await findSubscription(deps.orm.em.fork(), appId, accountId));
        break;
      }
      case 'accept_save':
        answer = await acceptOffer(ctx, { kind: 'secret' }, intent.sessionId, urls, { requestId: intent.requestId });
        break;
      case 'retry_payment':
        answer = await retryPayment(deps, appId, accountId);
        break;
      case 'sync':
        answer = await syncSubscription(deps, appId, accountId);
        break;
    }
  } catch (err) {
    // A retry that met its own earlier attempt finishing meanwhile (one that had lost its heartbeat but still ran, and
    // committed while this one took its cancel session's claim over): that attempt's outcome is the answer.
    if (!firstAttempt && err instanceof AppError && err.status === 409 && (await take()).applied)
      return { answer: await answerApplied(ctx, accountId, intent), snapshot: await snapshot(deps, appId, accountId) };
    // An answered error (a refusal, the provider's 502) is the intent's outcome: on the timeline with its request.
    if (err instanceof AppError && (err.status < 500 || err.status === 502) && err.extra?.reason !== 'expired_request')
      await recordTimeline(deps.orm.em.fork(), {
        appId,
        accountId,
        kind: 'refusal',
        type: intent.kind,
        summary: `${err.status < 500 ? 'Refused' : 'Failed'} (${err.status}): ${err.message}`,
        by: intent.by,
        data: {
          status: err.status,
          ...(err.extra?.reason ? { reason: err.extra.reason } : {}),
          request_id: intent.requestId,
        },
      }).catch(() => undefined);
    throw err;
  }
  return { answer: answer as IntentAnswer, snapshot: await snapshot(deps, appId, accountId) };
}

/**
 * The answer of an intent that already applied (a retried activity whose first attempt committed): the account as it
 * is now, with the approval links of the change it asked for, or its cancel session.
 */
async function answerApplied(ctx: Ctx, accountId: string, intent: Intent): Promise<IntentAnswer> {
  if (intent.kind === 'accept_save' || (intent.kind === 'cancel' && intent.sessionId))
    return (await getSession(ctx, { kind: 'secret' }, intent.sessionId!)) as unknown as IntentAnswer;
  const s = await findSubscription(ctx.deps.orm.em.fork(), ctx.app.id, accountId);
  const view = presentSubscription(s);
  const mine = s.pendingChange?.requestId === intent.requestId ? s.pendingChange : null;
  if (intent.kind === 'withdraw_change') return { ...view, approve_url: mine?.approveUrl ?? null } as IntentAnswer;
  if (intent.kind !== 'change') return view as IntentAnswer;
  if (!mine)
    // A change to the free plan: a cancellation at the end of the period.
    return {
      ...view,
      approve_url: null,
      revision_approve_url: null,
      direction: 'downgrade',
      policy: 'at_renewal',
      effective: 'renewal',
      proration: null,
      effective_at: view.cancel_at,
    } as IntentAnswer;
  const renews = s.renewsAt ? new Date(s.renewsAt).getTime() : 0;
  const monthsLeft = Math.max(0, renews - Date.parse(mine.requestedAt)) / ((365.25 / 12) * 86_400_000);
  return {
    ...view,
    approve_url: mine.proration?.approveUrl ?? mine.approveUrl ?? null,
    revision_approve_url: mine.approveUrl ?? null,
    direction: mine.direction ?? 'upgrade',
    policy: mine.policy ?? 'prorate_now',
    effective: mine.effective ?? 'now',
    proration: mine.proration
      ? {
          amount: mine.proration.amount,
          currency: mine.proration.currency,
          months_left: Math.round(monthsLeft * 1000) / 1000,
        }
      : null,
    effective_at: mine.effective === 'renewal' ? view.renews_at : null,
  } as IntentAnswer;
}

/** The facts that arrived: the provider is read again (a refused approval drops its change). */
export async function runFacts(
  deps: Deps,
  appId: string,
  accountId: string,
  facts: AccountFact[],
): Promise<BillingSnapshot> {
  // A subscription just recorded from the provider's own answer (a checkout applied) needs no second read.
  const needsProvider = facts.some((f) => f.kind !== 'account_changed' && f.kind !== 'subscription_started');
  if (needsProvider && (await hasSubscription(deps, appId, accountId))) {
    const conn = await deps.orm.em.fork().findOne(PaymentConnection, { appId }, { fields: ['appId'] });
    if (conn) {
      await syncSubscription(deps, appId, accountId);
      for (const f of facts)
        if (f.kind === 'buyer_returned' && f.outcome === 'refused')
          await dropPendingChange(deps, appId, accountId, f.changeId, 'refused');
    }
  }
  return snapshot(deps, appId, accountId);
}

const TIMER_SUMMARY: Record<TimerKind, string> = {
  approval_check: 'Checked with the provider whether the buyer approved the waiting change',
  approval_expiry: 'The waiting change was not approved in time',
  renewal: 'Renewal date: read the provider',
  period_end: 'End of the paid period: the cancellation applies',
  pause_end: 'The pause ends',
  incentive_end: 'The incentive ends',
  payment_retry: "The provider's payment retry: read the provider",
  grace_end: 'The grace period of a failed payment ends',
  credits_expiry: 'Credits expire',
  credits_grant: "The plan's credits for the period",
};

/** One of the account's dates (app time `asOf`). */
export async function runTimer(
  deps: Deps,
  appId: string,
  accountId: string,
  timer: { kind: TimerKind; key: string; asOf: string },
): Promise<BillingSnapshot> {
  const ctx = await appCtx(deps, appId);
  const before = await snapshot(deps, appId, accountId);
  // Quiet dates (a check that usually finds nothing) are not lines of their own; the outcome, if any, is.
  if (timer.kind !== 'approval_check' && timer.kind !== 'payment_retry')
    await recordTimeline(deps.orm.em.fork(), {
      appId,
      accountId,
      kind: 'timer',
      type: timer.kind,
      summary: `${TIMER_SUMMARY[timer.kind]} (${timer.asOf.slice(0, 16).replace('T', ' ')} app time)`,
      by: { kind: 'system', id: null, name: 'account actor' },
    });
  const sub = before.subscription;
  switch (timer.kind) {
    case 'approval_check':
    case 'renewal':
    case 'payment_retry':
      if (sub) await syncSubscription(deps, appId, accountId);
      break;
    case 'approval_expiry':
      if (sub?.pending) {
        await syncSubscription(deps, appId, accountId);
        await dropPendingChange(deps, appId, accountId, sub.pending.id, 'expired');
      }
      break;
    case 'period_end':
      await finishCancelAtPeriodEnd(ctx, accountId);
      break;
    case 'pause_end':
      if (sub?.pause) await resumePause(deps, appId, accountId, { pause: sub.pause.n, by: 'timer' });
      break;
    case 'incentive_end': {
      const inc = before.account?.incentive;
      if (inc?.expiresAt)
        await expireAccountIncentive(deps, { appId, accountId, incentiveId: inc.id, expiresAt: inc.expiresAt });
      break;
    }
    case 'grace_end':
      if (sub) {
        await syncSubscription(deps, appId, accountId);
        await endGrace(ctx, accountId);
      }
      break;
    case 'credits_expiry':
      await expireCredits(deps, appId, accountId, timer.asOf, accountWorkflowId(appId, accountId));
      break;
    case 'credits_grant':
      await grantPlanCredits(deps, appId, accountId, timer.asOf, accountWorkflowId(appId, accountId));
      break;
  }
  return snapshot(deps, appId, accountId);
}
