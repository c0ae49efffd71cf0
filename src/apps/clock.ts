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

/** Adds months in UTC, as billing periods count them (the 31st becomes the month's last day's overflow, as Date does). */
export function addMonths(from: Date, months: number): Date {
  const d = new Date(from);
  d.setUTCMonth(d.getUTCMonth() + months);
  return d;
}
