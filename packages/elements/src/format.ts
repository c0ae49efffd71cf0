// Words and numbers the components write: dates, amounts, a quote's and a pending change's sentence, an id made
// readable. Each in the given language (default: the browser's).
import { isLive, type AccountState, type PlanQuote } from './client.js';

/** "December 26, 2026" in the given language (default: the browser's). */
export function day(iso: string, locale?: string): string {
  return new Date(iso).toLocaleDateString(locale, { year: 'numeric', month: 'long', day: 'numeric' });
}

/**
 * A plan change's quote in the buyer's words: what is charged now and from when, before anything is asked of the
 * provider (the confirm step of the pricing table and the paywall).
 */
export function quoteText(
  q: PlanQuote,
  planName: string,
  fmt: { money(amount: number, currency: string): string; date(iso: string): string },
): { summary: string; confirm: string } {
  const price = `${fmt.money(q.price, q.currency)}/${q.interval}`;
  const when = q.effective_at ? fmt.date(q.effective_at) : null;
  if (q.cancels_at_renewal)
    return {
      summary:
        `Your subscription ends${when ? ` on ${when}` : ' at the end of this period'}; ` +
        `then you are on ${planName} and nothing more is charged.`,
      confirm: `Switch to ${planName}`,
    };
  if (q.amount_due_now > 0)
    return {
      summary: `${fmt.money(q.amount_due_now, q.currency)} today for the rest of this period, then ${price}.`,
      confirm: `Pay ${fmt.money(q.amount_due_now, q.currency)} and switch`,
    };
  if (q.effective === 'renewal')
    return {
      summary: `Nothing today. ${planName} and ${price} from ${when ?? 'your next renewal'}; your current plan stays until then.`,
      confirm: `Switch on ${when ?? 'renewal'}`,
    };
  return {
    summary: `Nothing today. ${planName} now, ${price} from your next renewal.`,
    confirm: `Switch to ${planName}`,
  };
}

/**
 * The account's plan change still to come, in the buyer's words: "Changes to Basic on December 26, 2026" once
 * approved for the renewal, else "A change to Basic is waiting for approval"; null when there is none.
 */
export function pendingChangeText(
  state: AccountState | null,
  nameOf: (plan: string) => string,
  locale?: string,
): string | null {
  const s = state?.subscription;
  const change = isLive(s) ? s.pending_change : null;
  if (!s || !change) return null;
  return change.effective === 'renewal' && change.scheduled_at && s.renews_at
    ? `Changes to ${nameOf(change.plan)} on ${day(s.renews_at, locale)}`
    : `A change to ${nameOf(change.plan)} is waiting for approval`;
}

/** "$14.25" in the given language (default: the browser's). */
export function money(amount: number, currency: string, locale?: string): string {
  try {
    return new Intl.NumberFormat(locale, { style: 'currency', currency }).format(amount);
  } catch {
    return `${amount} ${currency}`;
  }
}

/** "api_calls" → "Api calls" (public offer views carry entitlement ids, not names). */
export function humanize(id: string): string {
  const [first, ...rest] = id.split('_');
  // Short first words are most often acronyms: api_calls → API calls, sso → SSO.
  const head = first.length <= 3 ? first.toUpperCase() : first.charAt(0).toUpperCase() + first.slice(1);
  return [head, ...rest].join(' ');
}

const CHANGED = 'This offer has changed since the page was loaded. Please check the prices and choose again.';
/** What a buyer is told when the checkout is refused (409) for a reason; the page gets the service's message. */
export const CHECKOUT_REFUSALS: Record<string, string> = {
  offer_changed: CHANGED,
  bump_not_offered: CHANGED,
  plan_not_offered: CHANGED,
  interval_not_offered: CHANGED,
  not_published: CHANGED,
  expired: 'This offer has ended. The prices shown now are the current ones.',
  archived: 'This offer has ended. The prices shown now are the current ones.',
  not_started: 'This offer has not started yet.',
  targeted: 'This offer is for another account.',
  bump_owned: 'You already have one of the extras you chose, so it was taken off your order. Please choose again.',
  already_subscribed: 'You already have a subscription. Change your plan instead of buying a second one.',
  change_pending: 'A change of plan is already waiting for approval. Approve it or let it lapse before another one.',
  change_scheduled: 'A change of plan is already scheduled for your renewal.',
  cancel_scheduled: 'Your subscription ends at the end of this period. Resume it before changing plans.',
  past_due: 'Your last payment did not go through. Update your payment before changing plans.',
  paused: 'Your subscription is paused. Resume it before changing plans.',
  same_plan: 'You are already on this plan.',
};
