// An app's clock and its billing settings over time. Live apps (live payments, the read-only demo) keep real
// time; a test app's clock can be moved forward (the test clock, src/apps/test-clock.service.ts): its time is real
// time plus `clock_offset_ms`, and everything that waits for one of its dates (the account actors' timers,
// reservation and checkout expiry, the provider stand-in's billing cycles) follows it.
import type { IApp } from './apps.entities.js';

export interface AppClock {
  offsetMs: number;
  /** Live apps' clocks cannot move (live payments, or the read-only demo). */
  live: boolean;
}

/** The app's current time. */
export const appNow = (app: Pick<IApp, 'clockOffsetMs'> | AppClock | { offsetMs: number }): Date =>
  new Date(Date.now() + Number('offsetMs' in app ? app.offsetMs : (app.clockOffsetMs ?? 0)));

/** Dunning when the app says nothing: 14 days of grace (PayPal retries twice, 5 days apart), then cancel. */
export const DUNNING_DEFAULTS = { grace_days: 14, after: 'cancel' as 'cancel' | 'free_plan' };

export const dunningOf = (app: Pick<IApp, 'dunning'>) => ({ ...DUNNING_DEFAULTS, ...(app.dunning ?? {}) });

/**
 * Adds billing months in UTC as PayPal counts them ("How subscription billing cycles work"): each date is the same
 * day of the next month, or, when that month lacks the day (the 29th..31st), the first of the month after; n months
 * are n such steps. Jul 31 → Aug 31 → Oct 1 → Nov 1, and Dec 30 → Jan 30 → Mar 1 in a common year. So a credit
 * period, a pause or an offer's cycles end on the day the renewal is billed. The time of day is kept.
 */
export function addMonths(from: Date, months: number): Date {
  let d = new Date(from);
  for (let i = 0; i < months; i++) d = nextMonth(d);
  return d;
}

function nextMonth(from: Date): Date {
  const d = new Date(from);
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + 1);
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  if (day <= lastDay) d.setUTCDate(day);
  else d.setUTCMonth(d.getUTCMonth() + 1, 1);
  return d;
}
