// The activities' contract: every activity the workflows call, with its input and its answer. The workflows proxy
// it (`proxyActivities<Activities>()`); activities/ implements it (each file a part of it, `createActivities` the
// whole, checked by the compiler); neither side imports the other. Types only; it imports only the other contracts.
import type {
  AccountFact,
  AttemptReport,
  CheckoutOutcome,
  CheckoutWorkflowInput,
  IncentiveExpiryInput,
  IntentAnswer,
  PingInput,
  PingResult,
  PlanChangeInput,
  PlanChangeOutcome,
  ReconcileResult,
  ReservationExpiryInput,
  RetentionResult,
  UsageRollupResult,
} from '../shared.js';
import type { BillingSnapshot, Intent, TimerKind } from './billing.js';

/** The account an actor's step is for. */
export interface ActorTarget {
  appId: string;
  accountId: string;
}

/** One date of the actor's that came due: its kind, the key it backs off under, when (app time, ms). */
export interface DueTimer {
  kind: TimerKind;
  key: string;
  at: number;
  /** The app time it ran at (ISO 8601). */
  asOf: string;
}

/** One signed attempt of a webhook delivery. */
export interface DeliveryAttempt {
  deliveryId: string;
  attempt: number;
  /** The last attempt the schedule allows: a failure fails the delivery. */
  final: boolean;
  /** The delay before the next attempt (ms), null on the last one. */
  nextDelayMs: number | null;
}

/** Every activity the worker registers. */
export interface Activities {
  // ---- diagnostics
  /** Reads the database clock on a worker. */
  diagnosticsPing: (input: PingInput) => Promise<PingResult>;

  // ---- the account actor (workflows/account.ts): each reads or changes the record and answers its snapshot
  loadBillingSnapshot: (target: ActorTarget) => Promise<BillingSnapshot>;
  /** An intent (a route's request); its answer is what the route answers. */
  applyBillingIntent: (
    input: ActorTarget & { intent: Intent },
  ) => Promise<{ answer: IntentAnswer; snapshot: BillingSnapshot }>;
  applyBillingFacts: (input: ActorTarget & { facts: AccountFact[] }) => Promise<BillingSnapshot>;
  applyBillingTimer: (input: ActorTarget & { timer: DueTimer }) => Promise<BillingSnapshot>;

  // ---- webhooks
  /** Idempotent per (delivery, attempt): it sets, not adds, the attempt number. */
  attemptWebhookDelivery: (input: DeliveryAttempt) => Promise<AttemptReport>;

  // ---- checkouts
  /** Reads the provider; applies the purchase once when active (guarded by the checkout's status). */
  checkCheckoutWithProvider: (
    input: CheckoutWorkflowInput,
  ) => Promise<{ status: CheckoutOutcome; providerStatus: string | null }>;
  expireCheckoutNow: (checkoutId: string) => Promise<void>;

  // ---- usage
  /** Releases the hold only while the reservation is still held. */
  expireReservation: (input: ReservationExpiryInput) => Promise<{ expired: boolean }>;
  /** Every app, or one (`appId`); idempotent: each day is computed from the history as a whole. */
  rollUpUsage: (opts?: { appId?: string }) => Promise<UsageRollupResult>;

  // ---- housekeeping
  purgeExpiredEventsAndDeliveries: () => Promise<RetentionResult>;
  /** Restarts only workflows that are not running, for rows that still wait. */
  reconcileWaitingRows: () => Promise<ReconcileResult>;

  // ---- the previous release's one-shot workflows, until the migration ends them (the actor owns their dates)
  expireAccountIncentive: (input: IncentiveExpiryInput) => Promise<{ removed: boolean }>;
  resumePausedSubscription: (input: ActorTarget & { pause: number }) => Promise<boolean>;
  checkPlanChange: (input: PlanChangeInput) => Promise<PlanChangeOutcome | 'pending'>;
  expirePlanChange: (input: PlanChangeInput) => Promise<PlanChangeOutcome | 'pending'>;
}
