// The account actor's vocabulary: what an account's billing looks like to the actor (its snapshot), what may be
// asked of it (intents), why an intent is refused, and the kinds of date it wakes up at. A contract
// (docs/architecture.md): the services, the workflow and the activities speak these types, and
// workflows/billing-rules.ts decides with them. Types only; imports nothing.

export type Interval = 'month' | 'year';
export type SubscriptionStatus = 'active' | 'paused' | 'past_due' | 'cancelled';

/** Who asked for an intent (the timeline's "by"). */
export interface Requester {
  kind: 'secret_key' | 'admin_key' | 'account_token' | 'publishable_key' | 'person' | 'mcp' | 'system';
  /** The person's or connection's id, the account of a token; null for keys. */
  id: string | null;
  /** A person's email, a connection's client name; null otherwise. */
  name: string | null;
}

/** A plan change waiting for the buyer (`awaiting_approval`) or approved for the renewal (`scheduled`). */
export interface ChangeSnapshot {
  id: string;
  /** `withdrawal`: the provider is moved back to the current plan, undoing a scheduled change. */
  kind: 'change' | 'discount' | 'downgrade' | 'withdrawal';
  status: 'awaiting_approval' | 'scheduled';
  plan: string;
  planName: string;
  interval: Interval;
  price: number;
  currency: string;
  direction: 'upgrade' | 'downgrade' | null;
  effective: 'now' | 'renewal';
  requestedAt: string;
  /** Until when the buyer may approve (awaiting only). */
  expiresAt: string | null;
  /** When the provider reported the approval (scheduled only). */
  scheduledAt: string | null;
  /** The cancel session whose save waits on it. */
  sessionId: string | null;
  /** The scheduled change this one replaces once approved. */
  replaces: string | null;
}

export interface SubscriptionSnapshot {
  id: string;
  status: SubscriptionStatus;
  plan: string;
  planName: string;
  interval: Interval;
  price: number;
  currency: string;
  renewsAt: string | null;
  pause: { n: number; resumeAt: string | null; restorePlan: string | null } | null;
  pending: ChangeSnapshot | null;
  scheduled: ChangeSnapshot | null;
  /** A cancellation at the end of the paid period (billing is already stopped at the provider). */
  cancelAt: string | null;
  dunning: {
    since: string;
    failures: number;
    nextRetryAt: string | null;
    graceEndsAt: string;
    after: 'cancel' | 'free_plan';
    /** The account was moved to the free plan (`after: free_plan`); the plan comes back with a payment. */
    onFreePlan: boolean;
    outstanding: number | null;
  } | null;
  discount: { percent: number; cyclesLeft: number } | null;
}

/** What the actor knows of an account's billing: read from PostgreSQL by every activity after its change. */
export interface BillingSnapshot {
  appId: string;
  accountId: string;
  account: { plan: string; incentive: { id: string; expiresAt: string | null } | null } | null;
  subscription: SubscriptionSnapshot | null;
  /** The app's clock: real time plus `offsetMs` (0 on live apps, whose clock cannot move). */
  clock: { offsetMs: number; live: boolean };
  /** When it was read (app time). */
  readAt: string;
  /**
   * Credits over time: when the plan grants its pools' next period (now, when it has not granted the first), and the
   * earliest expiry of a live grant; absent or null when none.
   */
  credits?: { nextGrantAt: string | null; nextExpiryAt: string | null } | null;
}

interface IntentBase {
  by: Requester;
  /**
   * Real time after which the intent must not be accepted: the caller gave up waiting (503) by then, so an update
   * Temporal delivers later is refused rather than applied unseen.
   */
  deadline: string;
  /** The API request that asked (for the timeline and logs). */
  requestId: string;
}
export interface ReturnUrls {
  returnUrl?: string;
  cancelUrl?: string;
  /** The API origin the request came in on (for the provider's return links). */
  origin?: string;
}
export type Intent = IntentBase &
  (
    | ({
        kind: 'change';
        plan: string;
        interval?: Interval;
        /** Replace a scheduled change (once the buyer approves this one). */
        replace?: boolean;
        /** The quote's proration date: the prorated amount is computed as of then (it must be recent). */
        prorationDate?: string;
      } & ReturnUrls)
    | ({ kind: 'withdraw_change' } & ReturnUrls)
    | {
        kind: 'cancel';
        at: 'now' | 'period_end';
        reason?: string;
        /** From a cancel flow's confirm step. */ sessionId?: string;
      }
    | { kind: 'pause'; months: number; reason?: string; sessionId?: string }
    | { kind: 'resume' }
    | ({ kind: 'accept_save'; sessionId: string; offer: 'discount' | 'downgrade' | 'pause' | 'incentive' } & ReturnUrls)
    | { kind: 'retry_payment' }
    | { kind: 'sync' }
  );
export type IntentKind = Intent['kind'];

/** The reasons a 409 from the actor carries (`reason`). */
export type RefusalReason =
  | 'not_subscribed'
  | 'not_active'
  | 'cancelled'
  | 'paused'
  | 'not_paused'
  | 'past_due'
  | 'not_past_due'
  | 'change_pending'
  | 'change_scheduled'
  | 'no_change'
  | 'cancel_scheduled'
  | 'already_discounted'
  | 'expired_request';

/** A step that resolves a refusal: a route to call (relative to the API's origin). */
export interface NextStep {
  method: 'POST';
  path: string;
  body?: Record<string, unknown>;
  description: string;
}

export interface Refusal {
  status: 404 | 409 | 503;
  reason: RefusalReason;
  message: string;
  /** What is pending that the intent meets (its kind, plan and date). */
  pending?: { kind: string; plan?: string; at: string | null };
  next?: NextStep[];
}

export type TimerKind =
  | 'approval_check'
  | 'approval_expiry'
  | 'renewal'
  | 'period_end'
  | 'pause_end'
  | 'incentive_end'
  | 'payment_retry'
  | 'grace_end'
  | 'credits_expiry'
  | 'credits_grant';
