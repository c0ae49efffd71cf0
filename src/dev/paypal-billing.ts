// How the PayPal stand-in bills a subscription's cycles, as PayPal documents it
// (https://developer.paypal.com/platforms/subscriptions/customize/payment-failure-retry and the subscriptions API
// reference): each cycle is charged at `next_billing_time`; a payment that fails is retried every 5 days, twice per
// cycle; the unpaid amount is the subscription's `outstanding_balance`, billed again with the next cycle
// (`auto_bill_outstanding`); once every retry of a cycle failed it counts as a payment failure
// (`failed_payments_count`), and a subscription whose failures reach the plan's `payment_failure_threshold` is
// suspended. Each subscription has a clock of its own (real time plus an offset that only moves forward: the test
// clock), and every time it shows (activation, payments, failures, suspension) is on that clock.

import { addMonths } from '../apps/clock.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

export const DAY_MS = 86_400_000;
/** PayPal retries a failed payment every 5 days ... */
export const RETRY_EVERY_MS = 5 * DAY_MS;
/** ... up to twice per billing cycle. */
export const RETRIES_PER_CYCLE = 2;
/** When a plan does not say (PayPal's own default is 0: never suspend; ours set 3). */
const DEFAULT_FAILURE_THRESHOLD = 0;

/** What billing needs from the stand-in around it. */
export interface BillingHost {
  plan(planId: string): Json;
  /** Records a payment attempt (a transaction: COMPLETED or DECLINED) and answers it. */
  record(s: Json, attempt: { status: 'COMPLETED' | 'DECLINED'; amount: Money; time: string }): Json;
  /** Sends a notification to the subscription's merchant (awaited: it arrives before the call that billed answers). */
  notify(s: Json, eventType: string, resource: Json, summary: string): Promise<unknown>;
  /** The resource a `BILLING.SUBSCRIPTION.*` notification carries. */
  present(s: Json): Json;
}

export interface Money {
  currency_code: string;
  value: string;
}

const money = (value: number, currency: string): Money => ({ currency_code: currency, value: value.toFixed(2) });
const amountOf = (m: Money | null | undefined) => (m ? Number(m.value) : 0);

// ---- the subscription's clock ---------------------------------------------------------------------------------

/** The subscription's current time (real time plus its clock's offset). */
export const clockOf = (s: Json): Date => new Date(Date.now() + Number(s.clock_offset_ms ?? 0));

/** Moves the subscription's clock to `to`; never backwards (a `to` behind it leaves it where it is). */
export function moveClock(s: Json, to: Date) {
  const offset = to.getTime() - Date.now();
  if (offset > Number(s.clock_offset_ms ?? 0)) s.clock_offset_ms = offset;
}

export function addInterval(from: Date, unit: string, count = 1): Date {
  const d = new Date(from);
  if (unit === 'YEAR') d.setUTCFullYear(d.getUTCFullYear() + count);
  else if (unit === 'WEEK') d.setUTCDate(d.getUTCDate() + 7 * count);
  else if (unit === 'DAY') d.setUTCDate(d.getUTCDate() + count);
  else return addMonths(d, count);
  return d;
}

// ---- cycles -------------------------------------------------------------------------------------------------

/**
 * `billing_info.cycle_executions` as PayPal shows it: one entry per billing cycle of the plan (by `sequence`), with
 * the cycles completed. Rebuilt for a new plan (a revision starts the new plan's cycles, trial ones first: that is
 * how a cancel flow's discount of n cycles is billed).
 */
export function executionsOf(s: Json, plan: Json): Json[] {
  const cycles = [...(plan.billing_cycles as Json[])].sort((a, b) => a.sequence - b.sequence);
  if (s.cycles_plan_id !== plan.id || !Array.isArray(s.billing_info.cycle_executions)) {
    s.cycles_plan_id = plan.id;
    s.billing_info.cycle_executions = cycles.map((c) => ({
      tenure_type: c.tenure_type,
      sequence: c.sequence,
      cycles_completed: 0,
      cycles_remaining: c.total_cycles ?? 0,
      current_pricing_scheme_version: 1,
      total_cycles: c.total_cycles ?? 0,
    }));
  }
  return s.billing_info.cycle_executions as Json[];
}

/** The billing cycle the next payment is for: the first one of the plan not completed (a total of 0 never is). */
function currentCycle(s: Json, plan: Json): { cycle: Json; execution: Json } {
  const executions = executionsOf(s, plan);
  const cycles = [...(plan.billing_cycles as Json[])].sort((a, b) => a.sequence - b.sequence);
  for (const cycle of cycles) {
    const execution = executions.find((e) => e.sequence === cycle.sequence)!;
    if (!cycle.total_cycles || execution.cycles_completed < cycle.total_cycles) return { cycle, execution };
  }
  const cycle = cycles.at(-1)!;
  return { cycle, execution: executions.find((e) => e.sequence === cycle.sequence)! };
}

function completeCycle(execution: Json) {
  execution.cycles_completed += 1;
  if (execution.total_cycles)
    execution.cycles_remaining = Math.max(0, execution.total_cycles - execution.cycles_completed);
}

/** The outstanding balance, as `billing_info` always shows it (zero included). */
export function outstandingOf(s: Json): number {
  return amountOf(s.billing_info.outstanding_balance);
}

function setOutstanding(s: Json, value: number, currency: string) {
  s.billing_info.outstanding_balance = money(Math.max(0, Math.round(value * 100) / 100), currency);
}

// ---- what is due --------------------------------------------------------------------------------------------

export type Due = { at: number; kind: 'retry' | 'cycle' };

/** The next billing event of a subscription (a failed payment's retry, or the next cycle), or null: nothing bills. */
export function nextDue(s: Json): Due | null {
  if (s.status !== 'ACTIVE') return null;
  const retry = s.retry?.next_retry_at ? Date.parse(s.retry.next_retry_at) : null;
  const cycle = s.billing_info?.next_billing_time ? Date.parse(s.billing_info.next_billing_time) : null;
  // A retry and a cycle at the same time: the retry first (it is for the older amount).
  if (retry !== null && (cycle === null || retry <= cycle)) return { at: retry, kind: 'retry' };
  return cycle !== null ? { at: cycle, kind: 'cycle' } : null;
}

/** Whether this payment attempt fails: the merchant asked that the next `fail_next` attempts do (a sandbox's way). */
function attemptFails(s: Json): boolean {
  if (!s.fail_next) return false;
  s.fail_next -= 1;
  return true;
}

// ---- billing ------------------------------------------------------------------------------------------------

const saleOf = (s: Json, tx: Json) => ({
  id: tx.id,
  billing_agreement_id: s.id,
  custom: s.custom_id,
  amount: { total: tx.amount.value, currency: tx.amount.currency_code },
  state: 'completed',
  create_time: tx.time,
});

/** A payment that succeeded: the subscription is paid up (nothing outstanding, no retry, no failures counted). */
async function succeeded(host: BillingHost, s: Json, amount: Money, at: Date) {
  const tx = host.record(s, { status: 'COMPLETED', amount, time: at.toISOString() });
  s.billing_info.last_payment = { amount, time: at.toISOString() };
  s.billing_info.failed_payments_count = 0;
  setOutstanding(s, 0, amount.currency_code);
  if (s.billing_info.last_failed_payment) delete s.billing_info.last_failed_payment.next_payment_retry_time;
  delete s.retry;
  await host.notify(
    s,
    'PAYMENT.SALE.COMPLETED',
    saleOf(s, tx),
    `Payment completed for ${amount.value} ${amount.currency_code}`,
  );
  return tx;
}

/**
 * A payment that failed: declined in the transactions, `last_failed_payment` set, a retry planned while the cycle
 * has retries left; past them the cycle counts as failed and a subscription at the plan's threshold is suspended.
 */
async function declined(host: BillingHost, s: Json, amount: Money, at: Date, retriesLeft: number) {
  const tx = host.record(s, { status: 'DECLINED', amount, time: at.toISOString() });
  const nextRetry = retriesLeft > 0 ? new Date(at.getTime() + RETRY_EVERY_MS) : null;
  s.billing_info.last_failed_payment = {
    amount,
    time: at.toISOString(),
    reason_code: 'PAYMENT_DENIED',
    ...(nextRetry ? { next_payment_retry_time: nextRetry.toISOString() } : {}),
  };
  if (nextRetry) s.retry = { retries_left: retriesLeft, next_retry_at: nextRetry.toISOString() };
  else {
    delete s.retry;
    s.billing_info.failed_payments_count = (s.billing_info.failed_payments_count ?? 0) + 1;
  }
  await host.notify(
    s,
    'BILLING.SUBSCRIPTION.PAYMENT.FAILED',
    host.present(s),
    `Payment failed for subscription ${s.id}`,
  );
  const threshold = Number(
    host.plan(s.plan_id).payment_preferences?.payment_failure_threshold ?? DEFAULT_FAILURE_THRESHOLD,
  );
  if (!nextRetry && threshold > 0 && s.billing_info.failed_payments_count >= threshold) {
    s.status = 'SUSPENDED';
    s.status_update_time = at.toISOString();
    await host.notify(s, 'BILLING.SUBSCRIPTION.SUSPENDED', host.present(s), `Subscription ${s.id} suspended`);
  }
  return tx;
}

/**
 * Bills one event of the subscription at its time `due.at`: a cycle (its price plus what is outstanding) or a retry
 * (what is outstanding). The clock stands at that time meanwhile.
 */
export async function billEvent(host: BillingHost, s: Json, due: Due) {
  const at = new Date(due.at);
  moveClock(s, at);
  const plan = host.plan(s.plan_id);
  if (due.kind === 'retry') {
    const owed = outstandingOf(s);
    const currency = s.billing_info.outstanding_balance?.currency_code ?? 'USD';
    const left = Number(s.retry?.retries_left ?? 0) - 1;
    delete s.retry;
    if (owed <= 0) return;
    if (attemptFails(s)) await declined(host, s, money(owed, currency), at, left);
    else await succeeded(host, s, money(owed, currency), at);
    return;
  }
  const { cycle, execution } = currentCycle(s, plan);
  const price = cycle.pricing_scheme.fixed_price as Money;
  // The cycle is executed either way: the schedule moves on, and an unpaid amount is owed with the next one.
  completeCycle(execution);
  s.billing_info.next_billing_time = addInterval(
    at,
    cycle.frequency.interval_unit,
    cycle.frequency.interval_count ?? 1,
  ).toISOString();
  const autoBill = plan.payment_preferences?.auto_bill_outstanding !== false;
  const owed = amountOf(price) + (autoBill ? outstandingOf(s) : 0);
  const amount = money(owed, price.currency_code);
  // A retry still planned for an older amount gives way: that amount is part of this payment now.
  delete s.retry;
  if (attemptFails(s)) {
    setOutstanding(s, autoBill ? owed : outstandingOf(s) + amountOf(price), price.currency_code);
    await declined(host, s, amount, at, RETRIES_PER_CYCLE);
  } else if (autoBill || outstandingOf(s) <= 0) await succeeded(host, s, amount, at);
  else {
    // Without auto_bill_outstanding the cycle is paid and the older amount stays owed (for a capture).
    const tx = host.record(s, { status: 'COMPLETED', amount, time: at.toISOString() });
    s.billing_info.last_payment = { amount, time: at.toISOString() };
    await host.notify(
      s,
      'PAYMENT.SALE.COMPLETED',
      saleOf(s, tx),
      `Payment completed for ${amount.value} ${amount.currency_code}`,
    );
  }
}

/**
 * The first payment, at activation (PayPal charges the first cycle then): its cycle completes and the next one is
 * due one interval later, on the subscription's clock.
 */
export function activate(host: BillingHost, s: Json) {
  const at = clockOf(s);
  const plan = host.plan(s.plan_id);
  const { cycle, execution } = currentCycle(s, plan);
  const price = cycle.pricing_scheme.fixed_price as Money;
  s.status = 'ACTIVE';
  s.status_update_time = at.toISOString();
  s.start_time = s.start_time ?? at.toISOString();
  host.record(s, { status: 'COMPLETED', amount: price, time: at.toISOString() });
  s.billing_info.last_payment = { amount: price, time: at.toISOString() };
  completeCycle(execution);
  s.billing_info.next_billing_time = addInterval(
    at,
    cycle.frequency.interval_unit,
    cycle.frequency.interval_count ?? 1,
  ).toISOString();
}

/**
 * Bills every event of these subscriptions due by `until` (each subscription's own time when not given), oldest
 * first across them, moving each clock to the event's time; then every clock stands at `until`. Answers how many
 * events each subscription billed.
 */
export async function billDue(host: BillingHost, subs: Json[], until?: Date): Promise<Map<string, number>> {
  const billed = new Map<string, number>(subs.map((s) => [s.id, 0]));
  const limitOf = (s: Json) => (until ?? clockOf(s)).getTime();
  // A guard against a schedule that never ends (a zero-length interval): ten years of monthly cycles and retries.
  for (let i = 0; i < 10_000; i++) {
    let next: { s: Json; due: Due } | null = null;
    for (const s of subs) {
      const due = nextDue(s);
      if (due && due.at <= limitOf(s) && (!next || due.at < next.due.at)) next = { s, due };
    }
    if (!next) break;
    await billEvent(host, next.s, next.due);
    billed.set(next.s.id, (billed.get(next.s.id) ?? 0) + 1);
  }
  if (until) for (const s of subs) moveClock(s, until);
  return billed;
}

/**
 * Captures (part of) the outstanding balance now (`POST /v1/billing/subscriptions/{id}/capture`): a payment attempt
 * like any other (it can be declined). Paid in full, the retries stop and the failures count starts again.
 */
export async function captureOutstanding(host: BillingHost, s: Json, amount: Money): Promise<Json> {
  const at = clockOf(s);
  if (attemptFails(s)) {
    const tx = host.record(s, { status: 'DECLINED', amount, time: at.toISOString() });
    s.billing_info.last_failed_payment = {
      ...(s.billing_info.last_failed_payment ?? {}),
      amount,
      time: at.toISOString(),
      reason_code: 'PAYMENT_DENIED',
    };
    await host.notify(
      s,
      'BILLING.SUBSCRIPTION.PAYMENT.FAILED',
      host.present(s),
      `Payment failed for subscription ${s.id}`,
    );
    return tx;
  }
  const rest = outstandingOf(s) - amountOf(amount);
  if (rest > 0.004) {
    const tx = host.record(s, { status: 'COMPLETED', amount, time: at.toISOString() });
    s.billing_info.last_payment = { amount, time: at.toISOString() };
    setOutstanding(s, rest, amount.currency_code);
    await host.notify(
      s,
      'PAYMENT.SALE.COMPLETED',
      saleOf(s, tx),
      `Payment completed for ${amount.value} ${amount.currency_code}`,
    );
    return tx;
  }
  return succeeded(host, s, amount, at);
}
