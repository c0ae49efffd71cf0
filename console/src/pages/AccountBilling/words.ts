// What the account page's billing section decides and says without React (test/unit/account-billing-words.test.ts):
// which intents a subscription's state takes (the account actor's rules, docs/billing.md "When intents meet"), a
// refusal in words with the steps that resolve it, who asked for a line of the timeline, and a quote in words.
import type { AccountsTimelineResponse, Subscription, SubscriptionsQuoteResponse } from '@offerkit/sdk';
import { day, dayTime } from '../Billing/text.js';

export type TimelineLine = AccountsTimelineResponse['data'][number];
export type Quote = SubscriptionsQuoteResponse;

/** The intents the console asks for, each an SDK method of `subscriptions`. */
export type Intent = 'change' | 'withdraw' | 'cancel_now' | 'cancel_period_end' | 'pause' | 'resume' | 'retry';

export interface Offered {
  intents: Set<Intent>;
  /** A change replaces the change scheduled for the renewal (sent with `replace: true`). */
  replaces: boolean;
  /** `resume` undoes a cancellation at the period end (rather than ending a pause). */
  undoesCancel: boolean;
}

/**
 * The intents the account's actor accepts in the subscription's state: the console offers only those (another tab or
 * the customer may still change the state first; the 409 then says what happened and what to do). The unit test
 * checks this against the rules' table in docs/billing.md, which is the actor's own test.
 */
export function offeredIntents(
  sub: Pick<Subscription, 'status' | 'cancel_at' | 'pending_change' | 'scheduled_change'> | null,
): Offered {
  const intents = new Set<Intent>();
  const none = { intents, replaces: false, undoesCancel: false };
  if (!sub || sub.status === 'cancelled') return none;
  intents.add('cancel_now');
  // A change waiting for approval, or one scheduled (also while paused or past due: it waits for the renewal). Undoing
  // a scheduled change waits for the buyer too: that one is not withdrawn again.
  const awaiting = sub.pending_change?.status === 'awaiting_approval' ? sub.pending_change : null;
  if (awaiting ? awaiting.kind !== 'withdrawal' : !!sub.scheduled_change) intents.add('withdraw');
  if (sub.status === 'paused') return { ...none, intents: intents.add('resume') };
  if (sub.status === 'past_due') return { ...none, intents: intents.add('retry') };
  if (sub.cancel_at) return { ...none, intents: intents.add('resume'), undoesCancel: true };
  if (awaiting) return none;
  for (const i of ['change', 'cancel_period_end', 'pause'] as const) intents.add(i);
  return { intents, replaces: !!sub.scheduled_change, undoesCancel: false };
}

// ---- refusals -----------------------------------------------------------------------------------------------

/** A step the API names to resolve a refusal (`next`), as the console can take it. */
export type Step = 'withdraw' | 'replace' | 'resume' | 'undo_cancel' | 'retry' | 'cancel';
export const STEP_LABELS: Record<Step, string> = {
  withdraw: 'Withdraw it',
  replace: 'Replace it',
  resume: 'Resume it',
  undo_cancel: 'Undo the cancellation',
  retry: 'Retry the payment',
  cancel: 'Cancel now',
};

export interface Refused {
  /** The refusal in words: the API's message without the API calls it names. */
  words: string;
  /** The steps it names that the console can take, in the API's order. */
  steps: Step[];
  status: number;
}

interface NextStep {
  path: string;
  body?: Record<string, unknown>;
}

/** The step a `next` entry names, by its route (null for one the console has no button for). */
export function stepOf(next: NextStep, reason: string | undefined): Step | null {
  const path = next.path.replace(/[?#].*$/, '');
  if (path.endsWith('/subscription/change/withdraw')) return 'withdraw';
  if (path.endsWith('/subscription/change')) return next.body?.replace ? 'replace' : null;
  if (path.endsWith('/subscription/resume')) return reason === 'cancel_scheduled' ? 'undo_cancel' : 'resume';
  if (path.endsWith('/subscription/retry-payment')) return 'retry';
  if (path.endsWith('/subscription/cancel')) return 'cancel';
  return null;
}

/**
 * A message without the calls it names: the API words a refusal for a developer ("...; withdraw it with POST
 * /apps/…/change/withdraw, or replace it ..."); a person gets the first part and buttons for the steps.
 */
export function wordsOf(message: string): string {
  const parts = message.split('; ').filter((p) => !/\bPOST \//.test(p));
  const kept = (parts.length ? parts.join('; ') : message).replace(/\s*\([^)]*\bPOST \/[^)]*\)/g, '').trim();
  return /[.!?]$/.test(kept) ? kept : `${kept}.`;
}

/** An error the API answered (the SDK's APIError: `status`, `message`, `body`), as the billing section shows it. */
export function refusedOf(err: unknown): Refused {
  const e = err as { status?: number; message?: string; body?: { reason?: string; next?: NextStep[] } };
  const message = e?.message ?? String(err);
  const reason = e?.body?.reason;
  const steps = (e?.body?.next ?? []).map((n) => stepOf(n, reason)).filter((s): s is Step => s !== null);
  return { words: wordsOf(message), steps: [...new Set(steps)], status: e?.status ?? 0 };
}

// ---- the timeline -------------------------------------------------------------------------------------------

/** Who asked, in words: a person's email, a key, an account token, an MCP connection, the provider, the actor. */
export function requesterText(by: TimelineLine['by']): string | null {
  if (!by) return null;
  switch (by.kind) {
    case 'person':
      return by.name ?? 'a person of the console';
    case 'secret_key':
      return 'the secret key';
    case 'admin_key':
      return 'the admin key';
    case 'publishable_key':
      return 'the publishable key';
    case 'account_token':
      return `an account token${by.id ? ` (${by.id})` : ''}`;
    case 'mcp':
      return `MCP${by.name ? ` (${by.name})` : by.id ? ` connection ${by.id}` : ''}`;
    case 'system':
      if (by.name === 'provider') return 'the payment provider';
      if (by.name === 'buyer') return 'the buyer, back from the provider';
      if (by.name === 'account actor') return "the account's actor";
      return by.name ?? 'the service';
  }
}

/** The app's time of a line when it differs from the real time by more than a minute (a test clock was moved). */
export function appTimeText(line: Pick<TimelineLine, 'at' | 'app_time'>): string | null {
  return Math.abs(Date.parse(line.app_time) - Date.parse(line.at)) > 60_000 ? dayTime(line.app_time) : null;
}

export const KIND_COLORS: Record<TimelineLine['kind'], string> = {
  intent: 'indigo',
  refusal: 'red',
  fact: 'grape',
  timer: 'orange',
  outcome: 'teal',
};

// ---- the quote ----------------------------------------------------------------------------------------------

const money = (value: number, currency: string) =>
  `${value.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })} ${currency}`;

/** A quote as the confirm step shows it: label and value, in the order a person reads them. */
export function quoteRows(q: Quote): [string, string][] {
  const rows: [string, string][] = [];
  if (q.cancels_at_renewal) {
    rows.push(['Due now', money(0, q.currency)]);
    rows.push(['What happens', `Cancelled at the end of the period (${day(q.effective_at)}), then ${q.plan.name}`]);
  } else {
    rows.push([
      'Due now',
      money(q.amount_due_now, q.currency) +
        (q.proration ? ` (the difference for ${q.proration.months_left.toFixed(1)} months left)` : ''),
    ]);
    rows.push(['New price', `${money(q.price, q.currency)} / ${q.interval}`]);
    rows.push([
      'From',
      q.effective === 'now' ? 'When the customer approves it' : `The renewal, ${day(q.effective_at)}`,
    ]);
  }
  rows.push(['Direction', `${q.direction} (policy ${q.policy.replace(/_/g, ' ')})`]);
  rows.push(['Now', `${q.current.plan} / ${q.current.interval} at ${money(q.current.price, q.current.currency)}`]);
  if (q.replaces) rows.push(['Replaces', `The change to ${q.replaces.plan} scheduled for the renewal`]);
  return rows;
}
