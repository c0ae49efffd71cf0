// How the billing page words what the API answers: days, how long until a time, a pending plan change, when a
// pause ends. Plain functions, no React (test/unit/billing-text.test.ts).
import type { SubscriptionsListResponse } from '@offerkit/sdk';

export type Sub = SubscriptionsListResponse['data'][number];

export const day = (iso: string | null) => (iso ? new Date(iso).toLocaleDateString('en-CA') : '—');

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

/** A plan change waiting for the buyer's approval at the provider (a downgrade, or a cancel-flow discount). */
export function pendingText(sub: Sub): string | null {
  const c = sub.pending_change;
  if (!c) return null;
  const terms = `${c.price} ${c.currency}${c.discount ? ` (−${c.discount.percent}% for ${c.discount.cycles} renewals)` : ''}`;
  return `→ ${c.plan} / ${c.interval} at ${terms}, awaiting approval`;
}

/** When a paused subscription resumes, and on which plan. */
export function resumesText(sub: Sub, now = Date.now()): string | null {
  if (!sub.pause?.resume_at) return null;
  return `resumes ${fromNow(sub.pause.resume_at, now)}${sub.pause.restore_plan ? ` on ${sub.pause.restore_plan}` : ''}`;
}
