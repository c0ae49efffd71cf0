// The account actor's rules: what an account's billing looks like to the actor (its snapshot), what may be asked
// of it (intents), when an intent is refused and why, and which dates it wakes up at. Pure and deterministic: the
// workflow's update validators, the activities (again, under the row's lock), the quote and the MCP dry runs all
// decide with these same functions. Its vocabulary (snapshot, intents, refusals, timer kinds) is the contract in
// workflows/contracts/billing.ts, handed on from here so that the rules and their readers import one file.

import type {
  BillingSnapshot,
  ChangeSnapshot,
  Intent,
  Refusal,
  RefusalReason,
  TimerKind,
} from './contracts/billing.js';

export type * from './contracts/billing.js';

const day = (iso: string | null) => (iso ? iso.slice(0, 10) : 'an unknown date');
const subPath = (s: { appId: string; accountId: string }, tail = '') =>
  `/apps/${s.appId}/namespaces/${encodeURIComponent(s.accountId)}/subscription${tail}`;

/** The refusal of a change waiting for the buyer's approval. */
function awaiting(s: BillingSnapshot, c: ChangeSnapshot): Refusal {
  const what =
    c.kind === 'withdrawal' ? `undoing the scheduled change` : `a ${c.direction ?? 'change'} to ${c.planName}`;
  return {
    status: 409,
    reason: 'change_pending',
    message:
      `The subscription of account ${s.accountId} has ${what} waiting for the buyer's approval at the provider ` +
      `until ${c.expiresAt ?? 'it expires'}; it ends when they approve or refuse it, or withdraw it with ` +
      `POST ${subPath(s, '/change/withdraw')}`,
    pending: { kind: c.kind, plan: c.plan, at: c.expiresAt },
    next: [{ method: 'POST', path: subPath(s, '/change/withdraw'), description: 'Withdraw the waiting change' }],
  };
}

/** The refusal of a change scheduled for the renewal (approved by the buyer). */
function scheduled(s: BillingSnapshot, c: ChangeSnapshot, replaceable: boolean): Refusal {
  return {
    status: 409,
    reason: 'change_scheduled',
    message:
      `A ${c.direction ?? 'change'} to ${c.planName} is scheduled for ${day(s.subscription?.renewsAt ?? null)}; ` +
      `withdraw it with POST ${subPath(s, '/change/withdraw')}` +
      (replaceable ? `, or replace it with POST ${subPath(s, '/change')} and "replace": true` : ''),
    pending: { kind: c.kind, plan: c.plan, at: s.subscription?.renewsAt ?? null },
    next: [
      { method: 'POST', path: subPath(s, '/change/withdraw'), description: 'Withdraw the scheduled change' },
      ...(replaceable
        ? [
            {
              method: 'POST' as const,
              path: subPath(s, '/change'),
              body: { replace: true },
              description: 'Replace it with another change',
            },
          ]
        : []),
    ],
  };
}

function cancelScheduled(s: BillingSnapshot): Refusal {
  const at = s.subscription!.cancelAt;
  return {
    status: 409,
    reason: 'cancel_scheduled',
    message:
      `The subscription of account ${s.accountId} is cancelled at the end of its period (${day(at)}); undo that ` +
      `with POST ${subPath(s, '/resume')} first`,
    pending: { kind: 'cancel', at },
    next: [{ method: 'POST', path: subPath(s, '/resume'), description: 'Undo the cancellation' }],
  };
}

function pastDue(s: BillingSnapshot): Refusal {
  const d = s.subscription!.dunning;
  return {
    status: 409,
    reason: 'past_due',
    message:
      `The renewal payment of account ${s.accountId} failed${d ? ` on ${day(d.since)}` : ''}; retry it with ` +
      `POST ${subPath(s, '/retry-payment')} (or wait for the provider's retry${d?.nextRetryAt ? ` on ${day(d.nextRetryAt)}` : ''})`,
    pending: { kind: 'payment', at: d?.nextRetryAt ?? null },
    next: [{ method: 'POST', path: subPath(s, '/retry-payment'), description: 'Retry the failed payment' }],
  };
}

const simple = (status: 404 | 409, reason: RefusalReason, message: string): Refusal => ({ status, reason, message });

/** The refusal of an intent delivered after its caller stopped waiting (null while it is in time). */
export function lateRefusal(intent: Pick<Intent, 'deadline'>, realNowMs: number): Refusal | null {
  if (Date.parse(intent.deadline) >= realNowMs) return null;
  return {
    status: 503,
    reason: 'expired_request',
    message: 'The request was not taken in time (Temporal was slow or unreachable); nothing was changed',
  };
}

/**
 * Whether the actor refuses `intent` in state `s` (null: accepted). Catalog checks (the plan exists, has a price,
 * is not the current one) need the database and are the activity's; these are the state's.
 */
export function refusalOf(s: BillingSnapshot, intent: Intent): Refusal | null {
  const sub = s.subscription;
  const live = sub !== null && sub.status !== 'cancelled';
  const noSub = () =>
    simple(404, 'not_subscribed', `Subscription of account ${s.accountId} not found`) as Refusal | null;
  switch (intent.kind) {
    case 'sync':
      return sub ? null : noSub();
    case 'change': {
      if (!sub) return noSub();
      if (sub.status === 'cancelled')
        return simple(409, 'cancelled', `The subscription of account ${s.accountId} is cancelled, not active`);
      if (sub.status === 'paused')
        return simple(
          409,
          'paused',
          `The subscription of account ${s.accountId} is paused until ${day(sub.pause?.resumeAt ?? null)}; resume it ` +
            `with POST ${subPath(s, '/resume')} first`,
        );
      if (sub.status === 'past_due') return pastDue(s);
      if (sub.cancelAt) return cancelScheduled(s);
      if (sub.pending) return awaiting(s, sub.pending);
      if (sub.scheduled && !intent.replace) return scheduled(s, sub.scheduled, true);
      return null;
    }
    case 'withdraw_change': {
      if (!sub) return noSub();
      if (sub.pending?.kind === 'withdrawal') return awaiting(s, sub.pending);
      if (!sub.pending && !sub.scheduled)
        return simple(409, 'no_change', `The subscription of account ${s.accountId} has no change to withdraw`);
      return null;
    }
    case 'cancel': {
      // A cancel flow's confirm step also ends for an account billed elsewhere (it is only marked).
      if (intent.sessionId && (!sub || !live)) return null;
      if (!sub) return noSub();
      if (!live) return simple(409, 'cancelled', `The subscription of account ${s.accountId} is already cancelled`);
      if (intent.at === 'period_end') {
        if (sub.cancelAt) return cancelScheduled(s);
        if (sub.status === 'paused')
          return simple(
            409,
            'paused',
            `The subscription of account ${s.accountId} is paused: nothing is billed until ${day(sub.pause?.resumeAt ?? null)}; ` +
              `cancel it now instead (POST ${subPath(s, '/cancel')} with "at": "now")`,
          );
        if (sub.status === 'past_due') return pastDue(s);
        if (sub.pending) return awaiting(s, sub.pending);
      }
      return null;
    }
    case 'pause': {
      if (!sub) return noSub();
      if (sub.status === 'cancelled')
        return simple(409, 'cancelled', `The subscription of account ${s.accountId} is cancelled, not active`);
      if (sub.status === 'paused')
        return simple(
          409,
          'paused',
          `The subscription of account ${s.accountId} is already paused until ${day(sub.pause?.resumeAt ?? null)}`,
        );
      if (sub.status === 'past_due') return pastDue(s);
      if (sub.cancelAt) return cancelScheduled(s);
      if (sub.pending) return awaiting(s, sub.pending);
      return null; // a scheduled change is kept: it applies at the first renewal after the pause
    }
    case 'resume': {
      if (!sub) return noSub();
      if (sub.status === 'paused' || (sub.status === 'active' && sub.cancelAt)) return null;
      return simple(
        409,
        'not_paused',
        `The subscription of account ${s.accountId} is ${sub.status}: neither paused nor cancelled at the end of its period`,
      );
    }
    case 'retry_payment': {
      if (!sub) return noSub();
      if (sub.status !== 'past_due')
        return simple(
          409,
          'not_past_due',
          `The subscription of account ${s.accountId} has no failed payment to retry (it is ${sub.status})`,
        );
      return null;
    }
    case 'accept_save': {
      if (intent.offer === 'incentive') return null;
      if (!sub) return noSub();
      if (!live) return simple(409, 'cancelled', `The subscription of account ${s.accountId} is cancelled`);
      if (sub.status === 'paused')
        return simple(409, 'paused', `The subscription of account ${s.accountId} is already paused`);
      if (sub.status === 'past_due') return pastDue(s);
      if (sub.cancelAt) return cancelScheduled(s);
      if (sub.pending) return awaiting(s, sub.pending);
      if (intent.offer === 'pause') return null;
      if (sub.scheduled) return scheduled(s, sub.scheduled, false);
      if (intent.offer === 'discount' && sub.discount)
        return simple(409, 'already_discounted', `The subscription of account ${s.accountId} already has a discount`);
      return null;
    }
  }
}

export interface Timer {
  kind: TimerKind;
  /** App time (ms). */
  at: number;
  /** The date it is for: a timer that ran without changing its date backs off under this key. */
  key: string;
}

/** How often a change waiting for the buyer is checked with the provider (the last repeats). */
export const APPROVAL_CHECK_MS = [30_000, 120_000, 600_000, 1_800_000];
/** How often a renewal or a payment retry the provider has not reported yet is checked again (the last repeats). */
export const PROVIDER_RECHECK_MS = [60_000, 600_000, 3_600_000, 6 * 3_600_000, 24 * 3_600_000];

/** The dates the account's billing has (app time), earliest first. */
export function timersOf(s: BillingSnapshot): Timer[] {
  const out: Timer[] = [];
  const add = (kind: TimerKind, iso: string | null | undefined, key = `${kind}:${iso}`) => {
    if (!iso) return;
    const at = Date.parse(iso);
    if (Number.isFinite(at)) out.push({ kind, at, key });
  };
  const sub = s.subscription;
  if (sub && sub.status !== 'cancelled') {
    if (sub.pending) {
      add('approval_check', sub.pending.requestedAt, `approval_check:${sub.pending.id}`);
      add('approval_expiry', sub.pending.expiresAt);
    }
    if (sub.status === 'paused') add('pause_end', sub.pause?.resumeAt);
    else if (sub.cancelAt) add('period_end', sub.cancelAt);
    else add('renewal', sub.renewsAt);
    if (sub.status === 'past_due' && sub.dunning) {
      add('payment_retry', sub.dunning.nextRetryAt);
      // Once the grace period moved the account to the free plan, its end has run: only a payment changes things.
      if (!sub.dunning.onFreePlan) add('grace_end', sub.dunning.graceEndsAt);
    }
  }
  add('incentive_end', s.account?.incentive?.expiresAt);
  // Expiry before the grant of the same instant: a period's unused credits roll over before the next period's come.
  add('credits_expiry', s.credits?.nextExpiryAt);
  // A first grant is due at the snapshot's own time: one key for it, so a run that changed nothing backs off.
  const first = s.credits?.nextGrantAt === s.readAt;
  add('credits_grant', s.credits?.nextGrantAt, first ? 'credits_grant:first' : undefined);
  return out.sort((a, b) => a.at - b.at);
}

/** Whether the account still has anything over time (else its actor may end). */
export function hasAnythingOverTime(s: BillingSnapshot): boolean {
  if (s.account === null) return false;
  const sub = s.subscription;
  if (sub && sub.status !== 'cancelled') return true;
  if (s.credits?.nextGrantAt || s.credits?.nextExpiryAt) return true;
  return !!s.account.incentive?.expiresAt;
}

/** The actor's billing status (the `BillingStatus` search attribute). */
export function billingStatusOf(s: BillingSnapshot): string {
  const sub = s.subscription;
  if (!sub) return 'none';
  if (sub.status === 'active' && sub.cancelAt) return 'cancelling';
  return sub.status;
}

/** One line for the Temporal UI about what the actor waits for next. */
export function describe(s: BillingSnapshot): string {
  const sub = s.subscription;
  const lines: string[] = [`Account **${s.accountId}** (app ${s.appId}).`];
  if (!sub) lines.push('No subscription.');
  else {
    lines.push(
      `Subscription ${sub.id}: **${sub.status}** on ${sub.planName} at ${sub.price} ${sub.currency}/${sub.interval}` +
        (sub.renewsAt && sub.status !== 'paused' ? `, renews ${day(sub.renewsAt)}` : '') +
        '.',
    );
    if (sub.pause) lines.push(`Paused until ${day(sub.pause.resumeAt)}, then back to ${sub.pause.restorePlan}.`);
    if (sub.cancelAt) lines.push(`Cancelled at the end of its period: ${day(sub.cancelAt)}.`);
    if (sub.pending)
      lines.push(
        `Waiting for the buyer to approve ${sub.pending.kind} to ${sub.pending.planName} until ${sub.pending.expiresAt}.`,
      );
    if (sub.scheduled)
      lines.push(`Scheduled at the renewal: ${sub.scheduled.direction ?? 'change'} to ${sub.scheduled.planName}.`);
    if (sub.dunning)
      lines.push(
        `Payment failed ${sub.dunning.failures} time(s) since ${day(sub.dunning.since)}; grace ends ${day(sub.dunning.graceEndsAt)}, ` +
          `then ${sub.dunning.after === 'cancel' ? 'cancelled' : 'free plan'}.`,
      );
  }
  if (s.account?.incentive?.expiresAt)
    lines.push(`Incentive ${s.account.incentive.id} ends ${day(s.account.incentive.expiresAt)}.`);
  if (s.clock.offsetMs) lines.push(`Test clock: ${Math.round(s.clock.offsetMs / 60_000)} minutes ahead of real time.`);
  return lines.join('\n');
}
