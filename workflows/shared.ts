// The contract between the service and its workflows: task queue, search attributes, and one typed definition per
// workflow (its name, its input and result types, its signals, queries and updates). The services start and signal
// workflows through it, the workflows implement it, and it imports none of them: only Temporal's definitions and
// the other contracts (workflows/contracts/). Deterministic code only: imported into the workflow bundle (no
// Node-only imports).
import {
  defineSearchAttributeKey,
  SearchAttributeType,
  type QueryDefinition,
  type SignalDefinition,
  type UpdateDefinition,
} from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { BillingSnapshot, Intent } from './contracts/billing.js';

export const DEFAULT_TASK_QUEUE = 'offerkit';

/**
 * Custom search attributes every workflow of the service may set. The dev-server bootstrap registers
 * them; on an external cluster they are registered at start-up when the credentials allow it
 * (see docs/operations.md, "Temporal search attributes").
 */
export const SA = {
  AppId: defineSearchAttributeKey('AppId', SearchAttributeType.KEYWORD),
  AccountId: defineSearchAttributeKey('AccountId', SearchAttributeType.KEYWORD),
  EndpointId: defineSearchAttributeKey('EndpointId', SearchAttributeType.KEYWORD),
  EventType: defineSearchAttributeKey('EventType', SearchAttributeType.KEYWORD),
  DeliveryStatus: defineSearchAttributeKey('DeliveryStatus', SearchAttributeType.KEYWORD),
  CheckoutId: defineSearchAttributeKey('CheckoutId', SearchAttributeType.KEYWORD),
  OfferId: defineSearchAttributeKey('OfferId', SearchAttributeType.KEYWORD),
  IncentiveId: defineSearchAttributeKey('IncentiveId', SearchAttributeType.KEYWORD),
  BillingStatus: defineSearchAttributeKey('BillingStatus', SearchAttributeType.KEYWORD),
  ResumeAt: defineSearchAttributeKey('ResumeAt', SearchAttributeType.DATETIME),
  /** The account actor's next renewal (app time). */
  RenewsAt: defineSearchAttributeKey('RenewsAt', SearchAttributeType.DATETIME),
} as const;

export type SearchAttributeName = keyof typeof SA;
/** Search attribute values as they travel through the outbox (JSON): dates as ISO strings. */
export type SearchAttributeValues = Partial<Record<SearchAttributeName, string>>;

// ---- workflow definitions -----------------------------------------------------------------------
// Every start, signal, query and update, from the service or a workflow, goes through one of these:
// no workflow, signal, query or update is named by a bare string anywhere else.

/**
 * Every workflow type the worker runs, with its arguments and result: workflows/index.ts (the bundle's entry) exports
 * exactly these functions, and test/unit/workflow-definitions.test.ts holds the two equal (names and types).
 */
export interface Workflows {
  pingWorkflow: (input: PingInput) => Promise<PingResult>;
  incentiveExpiryWorkflow: (input: IncentiveExpiryInput) => Promise<IncentiveExpiryState>;
  webhookDeliveryWorkflow: (input: WebhookDeliveryInput) => Promise<WebhookDeliveryState>;
  retentionWorkflow: () => Promise<RetentionResult>;
  checkoutWorkflow: (input: CheckoutWorkflowInput) => Promise<CheckoutState>;
  pauseWorkflow: (input: PauseInput) => Promise<PauseState>;
  planChangeWorkflow: (input: PlanChangeInput) => Promise<PlanChangeState>;
  reservationExpiryWorkflow: (input: ReservationExpiryInput) => Promise<ReservationExpiryState>;
  usageRollupWorkflow: () => Promise<UsageRollupResult>;
  usageRollupAppWorkflow: (input: UsageRollupAppInput) => Promise<UsageRollupResult>;
  reconcileWorkflow: () => Promise<ReconcileResult>;
  accountWorkflow: (input: AccountActorInput) => Promise<AccountActorState>;
}

/** Every workflow type the worker runs. */
export type WorkflowName = keyof Workflows;

type SignalMap = Record<string, SignalDefinition<any[]>>; // eslint-disable-line @typescript-eslint/no-explicit-any
type QueryMap = Record<string, QueryDefinition<any, any[]>>; // eslint-disable-line @typescript-eslint/no-explicit-any
type UpdateMap = Record<string, UpdateDefinition<any, any[]>>; // eslint-disable-line @typescript-eslint/no-explicit-any
type None = Record<never, never>;

export interface WorkflowDefinition<
  N extends WorkflowName = WorkflowName,
  S extends SignalMap = SignalMap,
  Q extends QueryMap = QueryMap,
  U extends UpdateMap = UpdateMap,
> {
  /** The workflow type: the exported function's name, as Temporal and the outbox's `workflow_type` know it. */
  readonly name: N;
  readonly signals: S;
  readonly queries: Q;
  readonly updates: U;
}

/** The definition of a workflow type; `name` must be one of the workflows above. */
function defineWorkflow<
  N extends WorkflowName,
  S extends SignalMap = None,
  Q extends QueryMap = None,
  U extends UpdateMap = None,
>(name: N, handlers: { signals?: S; queries?: Q; updates?: U } = {}): WorkflowDefinition<N, S, Q, U> {
  return {
    name,
    signals: handlers.signals ?? ({} as S),
    queries: handlers.queries ?? ({} as Q),
    updates: handlers.updates ?? ({} as U),
  };
}

/** The workflow function a definition names. */
export type WorkflowOf<D extends WorkflowDefinition> = Workflows[D['name']];
/** Its arguments (`[input]`, or `[]` for the scheduled ones). */
export type WorkflowArgs<D extends WorkflowDefinition> = Parameters<WorkflowOf<D>>;
/** The single input of a workflow that takes one (never for one that takes none). */
export type WorkflowInput<D extends WorkflowDefinition> = WorkflowArgs<D> extends [infer I] ? I : never;
export type WorkflowResult<D extends WorkflowDefinition> = Awaited<ReturnType<WorkflowOf<D>>>;
/** One of the signals a definition declares. */
export type SignalOf<D extends WorkflowDefinition> = D['signals'][keyof D['signals']];
export type SignalArgs<S> = S extends SignalDefinition<infer A> ? A : never;

// ---- diagnostics ------------------------------------------------------------------------------
export interface PingInput {
  message: string;
}
export interface PingResult {
  message: string;
  databaseTime: string;
  workerPid: number;
}
export const pingDef = defineWorkflow('pingWorkflow');

// ---- incentive expiry -------------------------------------------------------------------------
export interface IncentiveTarget {
  incentiveId: string;
  /** ISO 8601 */
  expiresAt: string;
}
export interface IncentiveExpiryInput extends IncentiveTarget {
  appId: string;
  accountId: string;
}
export interface IncentiveExpiryState {
  appId: string;
  accountId: string;
  /** What the workflow will remove and when; null once the incentive was removed some other way. */
  target: IncentiveTarget | null;
  phase: 'waiting' | 'removing' | 'done';
  outcome: 'expired' | 'removed-early' | 'already-changed' | null;
}
/** One workflow per account incentive; a new incentive or expiry re-targets it (signal-with-start). */
export const incentiveExpiryWorkflowId = (appId: string, accountId: string) => `incentive-expiry/${appId}/${accountId}`;
export const incentiveExpiryDef = defineWorkflow('incentiveExpiryWorkflow', {
  /** Re-targets the timer to another incentive or expiry, or (null) ends it: the incentive went early. */
  signals: { retarget: defineSignal<[IncentiveTarget | null], 'retargetIncentiveExpiry'>('retargetIncentiveExpiry') },
  queries: { state: defineQuery<IncentiveExpiryState>('incentiveExpiryState') },
});

// ---- webhook delivery -------------------------------------------------------------------------
/** Delays before attempts 2..7: 1 min, 5 min, 30 min, 2 h, 8 h, 24 h (the spec's schedule). */
export const DEFAULT_RETRY_SCHEDULE_MS = [60_000, 300_000, 1_800_000, 7_200_000, 28_800_000, 86_400_000];
export interface WebhookDeliveryInput {
  deliveryId: string;
  appId: string;
  endpointId: string;
  eventType: string;
  url: string;
  /** Delays before attempts 2..n+1, in ms. */
  scheduleMs: number[];
  /**
   * Where a restarted delivery resumes (the reconciler restarts one whose workflow ended while the row
   * was still pending): the attempt to make next, after `firstDelayMs`. Default: attempt 1 at once.
   */
  startAttempt?: number;
  firstDelayMs?: number;
  /** Cap of the backoff between retries of an attempt our own infrastructure failed (default 1 min). */
  retryMaxIntervalMs?: number;
}
export type AttemptOutcome = 'succeeded' | 'retry' | 'failed' | 'gone';
export interface AttemptReport {
  outcome: AttemptOutcome;
  attempt: number;
  /** `HTTP 500`, a timeout, `Endpoint disabled`...; null on success. */
  error: string | null;
  responseStatus: number | null;
}
export interface WebhookDeliveryState {
  deliveryId: string;
  status: 'pending' | 'succeeded' | 'failed' | 'deleted';
  attempts: number;
  maxAttempts: number;
  nextAttemptAt: string | null;
  lastError: string | null;
}
export const webhookDeliveryDef = defineWorkflow('webhookDeliveryWorkflow', {
  /** Sent when the endpoint is disabled or deleted: a waiting delivery wakes and ends without sending. */
  signals: { stop: defineSignal('stopDelivery') },
  queries: { state: defineQuery<WebhookDeliveryState>('deliveryState') },
});

// ---- retention ----------------------------------------------------------------------------------
export const RETENTION_SCHEDULE_ID = 'retention/events-and-deliveries';
export const RETENTION_DAYS = 30;
export interface RetentionResult {
  events: number;
  deliveries: number;
  /** MCP tool calls removed (kept 30 days as well). */
  mcpCalls?: number;
  /** Idempotency keys older than 24 hours removed. */
  idempotencyKeys?: number;
  cutoff: string;
}
export const retentionDef = defineWorkflow('retentionWorkflow');

// ---- daily usage roll-up ------------------------------------------------------------------------
export const USAGE_ROLLUP_SCHEDULE_ID = 'analytics/usage-daily-rollup';
export const USAGE_ROLLUP_WORKFLOW_ID = 'usage-rollup/daily';
export interface UsageRollupResult {
  /** Apps whose roll-up changed. */
  apps: number;
  /** Days added (summed over apps). */
  days: number;
  /** Usage rows recorded late for rolled-up days, folded in. */
  lateRows: number;
  /** The first day not rolled up whole (every earlier closed day is). */
  through: string;
  /** The instant (an hour's start, ISO 8601) before which every usage row is rolled up; optional in older runs. */
  rolledTo?: string;
  /** False when the run stopped at its time budget with more to do. */
  done: boolean;
}
export const usageRollupDef = defineWorkflow('usageRollupWorkflow');
/** One app's roll-up, at once: after an import, or when analytics found a window the roll-up had not reached. */
export interface UsageRollupAppInput {
  appId: string;
}
export const usageRollupAppWorkflowId = (appId: string) => `usage-rollup/app/${appId}`;
export const usageRollupAppDef = defineWorkflow('usageRollupAppWorkflow');

// ---- checkout completion -----------------------------------------------------------------------
export const checkoutWorkflowId = (checkoutId: string) => `checkout/${checkoutId}`;
export interface CheckoutWorkflowInput {
  appId: string;
  checkoutId: string;
  /** When the checkout expires (ISO 8601, app time); default 24 h after the workflow started. */
  expiresAt?: string;
  /**
   * The app's clock when the workflow started (its offset from real time: a test clock moved forward); the
   * `clockMoved` signal brings a later one. The deadline is on that clock.
   */
  offsetMs?: number;
  /** Cap of the backoff between retries of a check our infrastructure or the provider failed (default 1 min). */
  retryMaxIntervalMs?: number;
}
export type CheckoutOutcome = 'created' | 'completed' | 'cancelled' | 'expired';
export interface CheckoutState {
  checkoutId: string;
  status: CheckoutOutcome;
  checks: number;
  providerStatus: string | null;
  nextCheckAt: string | null;
}
export const checkoutDef = defineWorkflow('checkoutWorkflow', {
  signals: {
    /** The provider sent a notification about this checkout, or the buyer came back: check now. */
    providerNotified: defineSignal('providerNotified'),
    /** The app's test clock moved: its new offset from real time (the deadline is on the app's clock). */
    clockMoved: defineSignal<[number], 'checkoutClockMoved'>('checkoutClockMoved'),
  },
  queries: { state: defineQuery<CheckoutState>('checkoutState') },
  /** Check with the provider now and answer the checkout's status (POST .../complete). */
  updates: { checkNow: defineUpdate<CheckoutState>('checkNow') },
});
/**
 * Delays between provider checks while the buyer has not approved (a notification or a complete call wakes it
 * sooner).
 */
export const CHECKOUT_POLL_MS = [2_000, 5_000, 15_000, 60_000, 300_000, 900_000];
/** How long a checkout waits for the buyer before it expires (PayPal approval links last about 3 hours). */
export const CHECKOUT_TTL_MS = 24 * 3_600_000;

// ---- subscription pause -------------------------------------------------------------------------
export const pauseWorkflowId = (appId: string, accountId: string, n: number) => `pause/${appId}/${accountId}/${n}`;
export interface PauseInput {
  appId: string;
  accountId: string;
  /** Which pause of this subscription (1, 2, ...): a resume applies only to its own pause. */
  pause: number;
  resumeAt: string;
  restorePlan: string;
  pausedAt: string;
}
export interface PauseState extends PauseInput {
  phase: 'paused' | 'resuming' | 'resumed';
  resumedBy: 'timer' | 'request' | null;
}
export const pauseDef = defineWorkflow('pauseWorkflow', {
  /** The pause ended early (the API or /pauses/resume already resumed it); stop waiting. */
  signals: { ended: defineSignal('pauseEnded') },
  queries: { state: defineQuery<PauseState>('pauseState') },
});

// ---- subscription plan change awaiting the buyer's approval ----------------------------------------
/** One workflow per plan change that the buyer approves at the provider (a change, or a cancel flow's save). */
export const planChangeWorkflowId = (appId: string, accountId: string, changeId: string) =>
  `plan-change/${appId}/${accountId}/${changeId}`;
export interface PlanChangeInput {
  appId: string;
  accountId: string;
  /** The pending change's id (`chg_...`): the workflow acts only while the subscription still waits on it. */
  changeId: string;
  /** The cancel session whose save waits on this approval, if any. */
  sessionId: string | null;
  plan: string;
  /** When the approval is given up (ISO 8601): the change is dropped and a save goes back to open. */
  expiresAt: string;
}
/** `scheduled`: approved, applies at the renewal (the subscription's sync applies it then). */
export type PlanChangeOutcome = 'applied' | 'scheduled' | 'refused' | 'expired' | 'replaced';
export interface PlanChangeState {
  changeId: string;
  phase: 'awaiting_approval' | 'done';
  outcome: PlanChangeOutcome | null;
  checks: number;
}
export const planChangeDef = defineWorkflow('planChangeWorkflow', {
  signals: {
    /** The provider sent a notification or the buyer came back: check now. */
    providerNotified: defineSignal('planChangeProviderNotified'),
  },
  queries: { state: defineQuery<PlanChangeState>('planChangeState') },
});
/** How often a plan change awaiting approval is checked with the provider (the last repeats). */
export const PLAN_CHANGE_POLL_MS = [30_000, 120_000, 600_000, 1_800_000];
/** How long a buyer has to approve a plan change at the provider (PayPal's approval links last about 3 hours). */
export const PLAN_CHANGE_TTL_MS = 3 * 3_600_000;

// ---- the account actor -----------------------------------------------------------------------------
/**
 * One long-lived workflow per account with anything over time (a subscription, a change, a pause, a timed
 * incentive): it takes the intents (updates), hears the facts (signals through the outbox) and wakes up at the
 * account's dates on the app's clock. workflows/billing-rules.ts holds its rules.
 */
export const accountWorkflowId = (appId: string, accountId: string) => `account/${appId}/${accountId}`;
/** A fact recorded in PostgreSQL first that the actor hears through the outbox: it re-reads the record and provider. */
export type AccountFact =
  | { kind: 'adopted' }
  | { kind: 'subscription_started'; checkoutId: string }
  | { kind: 'provider_notified'; eventType: string; notificationId: string | null }
  | { kind: 'buyer_returned'; changeId: string; outcome: 'approved' | 'refused' }
  | { kind: 'account_changed' }
  | { kind: 'refunded'; checkoutId: string };
export interface AccountActorCarry {
  snapshot: BillingSnapshot;
  offsetMs: number;
  facts: AccountFact[];
  backoff: Record<string, { tries: number; notBefore: number }>;
}
export interface AccountActorInput {
  appId: string;
  accountId: string;
  /** What a run hands to the next when it continues as new. */
  carried?: AccountActorCarry;
  /** The history length past which a run continues as new (default 2,000; tests lower it). */
  historyLimit?: number;
}
export interface AccountActorState {
  snapshot: BillingSnapshot | null;
  /** App time up to which every due timer has run. */
  processedThrough: string | null;
  queuedFacts: number;
  busy: boolean;
  nextTimer: { kind: string; at: string } | null;
}
export interface AdvanceClockInput {
  offsetMs: number;
  /** App time (ISO) every timer due by which must have run before the update answers. */
  to: string;
}
/** The outcome of an intent: the route's answer (JSON), as the activity made it. */
export type IntentAnswer = Record<string, unknown>;
export const accountDef = defineWorkflow('accountWorkflow', {
  signals: { fact: defineSignal<[AccountFact], 'accountFact'>('accountFact') },
  queries: { state: defineQuery<AccountActorState>('accountState') },
  updates: {
    intent: defineUpdate<IntentAnswer, [Intent], 'accountIntent'>('accountIntent'),
    advanceClock: defineUpdate<AccountActorState, [AdvanceClockInput], 'advanceClock'>('advanceClock'),
  },
});
/** The ApplicationFailure type of a refused intent (details: [Refusal]) and of an error the activity answered. */
export const REFUSAL_FAILURE = 'Refusal';
export const APP_ERROR_FAILURE = 'AppError';
/** The details of an APP_ERROR_FAILURE: what the route answers (status, message, extra fields). */
export interface AppErrorDetails {
  status: number;
  message: string;
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
}

// ---- usage reservation expiry ---------------------------------------------------------------------
/** One workflow per reservation: it releases the held amount at the deadline unless committed or released first. */
export const reservationExpiryWorkflowId = (appId: string, reservationId: string) =>
  `reservation-expiry/${appId}/${reservationId}`;
export interface ReservationExpiryInput {
  appId: string;
  accountId: string;
  entitlementId: string;
  reservationId: string;
  amount: number;
  /** ISO 8601, app time. */
  expiresAt: string;
  /** The app's clock offset when it started (a test clock); the `clockMoved` signal brings a later one. */
  offsetMs?: number;
}
export interface ReservationExpiryState {
  reservationId: string;
  phase: 'waiting' | 'expiring' | 'done';
  outcome: 'expired' | 'settled' | null;
}
export const reservationExpiryDef = defineWorkflow('reservationExpiryWorkflow', {
  signals: {
    /** The reservation was committed or released; stop waiting. */
    settled: defineSignal<['committed' | 'released'], 'reservationSettled'>('reservationSettled'),
    /** The app's test clock moved: its new offset from real time (the deadline is on the app's clock). */
    clockMoved: defineSignal<[number], 'reservationClockMoved'>('reservationClockMoved'),
  },
  queries: { state: defineQuery<ReservationExpiryState>('reservationExpiryState') },
});

// ---- infrastructure retries ---------------------------------------------------------------------
/** Default cap of the backoff between retries of an activity that could not reach PostgreSQL or the provider. */
export const INFRA_RETRY_MAX_INTERVAL_MS = 60_000;
/**
 * Retry policy of every activity that reaches our own infrastructure (PostgreSQL) or the provider:
 * no maximum number of attempts (an outage of any length is waited out), backoff capped at
 * `maxIntervalMs`. Business rules (a delivery's 7 sends, a checkout's 24 hours) are counted by the
 * workflows themselves, never by these retries.
 */
export function infraRetry(maxIntervalMs: number = INFRA_RETRY_MAX_INTERVAL_MS) {
  return {
    initialInterval: Math.min(1000, maxIntervalMs),
    backoffCoefficient: 2,
    maximumInterval: maxIntervalMs,
  };
}

// ---- reconciler ---------------------------------------------------------------------------------
/**
 * The Schedule that proves every waiting row has its workflow (every 10 minutes: the spec's due-pause
 * check) and restarts or finishes the ones whose workflow is missing, failed or ended.
 */
export const RECONCILE_SCHEDULE_ID = 'reconciler/waiting-rows';
export type ReconcileKind = 'deliveries' | 'checkouts' | 'actors' | 'billing' | 'reservations' | 'outbox';
export interface ReconcileResult {
  /** Waiting rows looked at, per kind. */
  checked: Record<ReconcileKind, number>;
  /** Rows whose workflow was restarted (or outbox commands carried out), per kind. */
  repaired: Record<ReconcileKind, number>;
  /** Workflow ids restarted, at most 50 (for the Temporal UI). */
  restarted: string[];
  /**
   * Credit balances compared with their ledgers' sums (the most recently changed first), and those that differ, at
   * most 50: reported, never rewritten (docs/decisions, "Credits": the reconciler reports a ledger drift).
   */
  credits?: { checked: number; drifts: CreditDrift[] };
}
export interface CreditDrift {
  app_id: string;
  account_id: string;
  pool_id: string;
  entity_id: string;
  balance: number;
  ledger: number;
}
export const reconcileDef = defineWorkflow('reconcileWorkflow');

// ---- every definition ---------------------------------------------------------------------------

/** Every workflow definition, one per export of workflows/index.ts (a unit test holds the two equal). */
export const WORKFLOW_DEFINITIONS: readonly WorkflowDefinition[] = [
  pingDef,
  incentiveExpiryDef,
  webhookDeliveryDef,
  retentionDef,
  checkoutDef,
  pauseDef,
  planChangeDef,
  reservationExpiryDef,
  usageRollupDef,
  usageRollupAppDef,
  reconcileDef,
  accountDef,
];

/** The definition of a workflow type named by text (an outbox row), or undefined when this build has none. */
export function workflowDefinition(name: string): WorkflowDefinition | undefined {
  return WORKFLOW_DEFINITIONS.find((d) => d.name === name);
}
