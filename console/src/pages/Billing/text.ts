// How the billing pages word what the API answers: days, how long until a time, a plan change waiting for approval or
// scheduled for the renewal, a pause, a cancellation at the period end, a failed payment. Plain functions, no React
// (test/unit/billing-text.test.ts); the subscriptions list and the account page say the same things the same way.
import type { SubscriptionsListResponse } from '@offerkit/sdk';

export type Sub = SubscriptionsListResponse['data'][number];
type Change = NonNullable<Sub['pending_change']>;

export const day = (iso: string | null) => (iso ? new Date(iso).toLocaleDateString('en-CA') : '—');

/** A day and a time of day in the browser's zone: "2026-11-28 15:04". */
export const dayTime = (iso: string | null) =>
  iso
    ? `${day(iso)} ${new Date(iso).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', hour12: false })}`
    : '—';

/** "in 3 months", "in 5 days", "in 2 hours" (or "now" once it has passed). */
export function fromNow(iso: string, now = Date.now()): string {
  const ms = Date.parse(iso) - now;
  if (ms <= 0) return 'now';
  const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
  const units: [Intl.RelativeTimeFormatUnit, number][] = [
    ['month', 30 * 86_400_000],
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
  ];
  for (const [unit, size] of units) if (ms >= size) return rtf.format(Math.round(ms / size), unit);
  return rtf.format(Math.max(1, Math.round(ms / 1000)), 'second');
}

/** The terms of a change: "lite / month at 9 USD (−25% for 3 renewals)". */
const terms = (c: Change) =>
  `${c.plan} / ${c.interval} at ${c.price} ${c.currency}` +
  (c.discount ? ` (−${c.discount.percent}% for ${c.discount.cycles} renewals)` : '');

/**
 * One change in words: waiting for the buyer's approval (until when), or approved and scheduled for the renewal (the
 * renewal date: an approved change is not "awaiting" anything but its date).
 */
export function changeText(sub: Pick<Sub, 'renews_at'>, c: Change): string {
  if (c.status === 'scheduled') return `→ ${terms(c)}, scheduled for ${day(sub.renews_at)}`;
  const what = c.kind === 'withdrawal' ? `back to ${terms(c)} (withdrawing the scheduled change)` : terms(c);
  return `→ ${what}, awaiting approval${c.expires_at ? ` until ${dayTime(c.expires_at)}` : ''}`;
}

/**
 * The subscription's changes in words, the one waiting for approval first: a change waiting to replace (or undo) a
 * scheduled one is listed with it.
 */
export function changeTexts(sub: Pick<Sub, 'renews_at' | 'pending_change' | 'scheduled_change'>): string[] {
  return changesOf(sub).map((c) => changeText(sub, c));
}

/**
 * The subscription's changes, each once: `pending_change` is the one waiting for approval, else the scheduled one
 * (which `scheduled_change` then repeats).
 */
export function changesOf(sub: Pick<Sub, 'pending_change' | 'scheduled_change'>): Change[] {
  const changes: Change[] = sub.pending_change ? [sub.pending_change] : [];
  if (sub.scheduled_change && sub.pending_change?.status !== 'scheduled') changes.push(sub.scheduled_change);
  return changes;
}

/** When a paused subscription resumes, and on which plan. */
export function resumesText(sub: Pick<Sub, 'pause'>, now = Date.now()): string | null {
  if (!sub.pause?.resume_at) return null;
  return `resumes ${fromNow(sub.pause.resume_at, now)}${sub.pause.restore_plan ? ` on ${sub.pause.restore_plan}` : ''}`;
}

/** The status a person reads: a cancellation at the period end and a failed payment are said, not hidden in dates. */
export type ShownStatus = 'active' | 'cancelling' | 'paused' | 'past due' | 'cancelled';
export function shownStatus(sub: Pick<Sub, 'status' | 'cancel_at'>): ShownStatus {
  if (sub.status === 'active' && sub.cancel_at) return 'cancelling';
  if (sub.status === 'past_due') return 'past due';
  return sub.status;
}
export const STATUS_COLORS: Record<ShownStatus, string> = {
  active: 'teal',
  cancelling: 'orange',
  paused: 'blue',
  'past due': 'red',
  cancelled: 'gray',
};

/** What happens at the end of a failed payment's grace period. */
const afterGrace = (after: 'cancel' | 'free_plan') =>
  after === 'cancel' ? 'then it is cancelled' : 'then the account moves to the free plan';

/**
 * The subscription's dates in one line: when it renews, resumes, is cancelled, or how its failed payment stands
 * (since when, the provider's next retry, the end of the grace period and what follows).
 */
export function datesText(
  sub: Pick<Sub, 'status' | 'renews_at' | 'cancel_at' | 'cancelled_at' | 'pause' | 'dunning' | 'created_at'>,
  now = Date.now(),
): string {
  if (sub.status === 'paused')
    return sub.pause?.resume_at ? `Paused until ${day(sub.pause.resume_at)}: ${resumesText(sub, now)}` : 'Paused';
  if (sub.status === 'cancelled') return `Cancelled ${day(sub.cancelled_at)}`;
  if (sub.status === 'past_due') {
    const d = sub.dunning;
    if (!d) return 'Past due: a renewal payment failed';
    return (
      `Past due since ${day(d.since)}` +
      (d.next_retry_at ? `, next retry ${day(d.next_retry_at)}` : '') +
      `, grace ends ${day(d.grace_ends_at)} (${afterGrace(d.after)})`
    );
  }
  if (sub.cancel_at) return `Cancelling at ${day(sub.cancel_at)}: billing has stopped, the plan stays until then`;
  return sub.renews_at ? `Renews ${day(sub.renews_at)}` : `Since ${day(sub.created_at)}`;
}
