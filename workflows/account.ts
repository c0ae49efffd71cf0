import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import {
  APPROVAL_CHECK_MS,
  billingStatusOf,
  describe,
  hasAnythingOverTime,
  lateRefusal,
  PROVIDER_RECHECK_MS,
  refusalOf,
  timersOf,
  type BillingSnapshot,
  type Intent,
  type Refusal,
  type RefusalReason,
  type Timer,
} from './billing-rules.js';
import {
  accountDef,
  APP_ERROR_FAILURE,
  infraRetry,
  REFUSAL_FAILURE,
  SA,
  type AccountActorInput,
  type AccountActorState,
  type AccountFact,
  type AppErrorDetails,
} from './shared.js';

// Facts and timers must happen, whatever the outage: retried with capped backoff for as long as it takes. The
// activities heartbeat every 2 s (activities/account.ts): a killed worker's step is retried within 10 s.
const durable = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: infraRetry(),
});
// An intent the actor accepted is carried out: its step is retried until it runs (workers killed, our database away;
// its caller stops waiting after 90 s, hears "outcome unknown" and finds the outcome on the timeline). A refusal or
// answered error is not retried; a retry whose first attempt committed answers what it did
// (src/subscriptions/intents.service.ts).
const asked = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '10 seconds',
  retry: { ...infraRetry(), nonRetryableErrorTypes: [APP_ERROR_FAILURE] },
});

/** The history length past which a run hands over to a new one (when nothing is in flight). */
const HISTORY_LIMIT = 2_000;

/**
 * Refusals on a state the provider ends outside the actor: a buyer's approval or refusal of a change, a payment that
 * failed or recovered, a checkout's first subscription. Those are recorded in PostgreSQL by the notification or return
 * that reports them and reach the actor through the outbox a moment later, so for that moment the snapshot is behind
 * the record (GET shows the change scheduled; the actor still sees it waiting). The actor reads the record again
 * before it refuses one of these; the others are states only the actor changes, decided on its snapshot at once.
 */
const PROVIDER_ENDS = new Set<RefusalReason>(['change_pending', 'past_due', 'not_past_due', 'not_subscribed']);

const refusalFailure = (r: Refusal) =>
  ApplicationFailure.create({ type: REFUSAL_FAILURE, message: r.message, nonRetryable: true, details: [r] });

/** An activity's answered error (a 4xx, a provider's 502) as the update's failure, for the caller. */
function answeredError(err: unknown): ApplicationFailure | null {
  if (!(err instanceof ActivityFailure)) return null;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === APP_ERROR_FAILURE) {
    const d = cause.details?.[0] as AppErrorDetails | undefined;
    return ApplicationFailure.create({
      type: APP_ERROR_FAILURE,
      message: cause.message,
      nonRetryable: true,
      details: [d],
    });
  }
  return null;
}

/**
 * The account actor: the one owner of an account's billing over time. Intents (updates, validated against its
 * snapshot at once), facts (signals the outbox delivers) and its dates (timers on the app's clock) run one at a
 * time, each as one activity that changes the record in PostgreSQL and the provider and answers the new snapshot.
 * Ends when the account has nothing over time left; continues as new to keep its history short.
 */
export async function accountWorkflow(input: AccountActorInput): Promise<AccountActorState> {
  const { appId, accountId } = input;
  let snap: BillingSnapshot | null = input.carried?.snapshot ?? null;
  let offsetMs = input.carried?.offsetMs ?? 0;
  const facts: AccountFact[] = [...(input.carried?.facts ?? [])];
  const backoff: Record<string, { tries: number; notBefore: number }> = { ...(input.carried?.backoff ?? {}) };
  let processedThrough = 0;
  let wake = 0;

  // One thing at a time: intents, facts and timers queue for the same turn.
  let busy = false;
  const waiting: (() => void)[] = [];
  async function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (busy) await new Promise<void>((resolve) => waiting.push(resolve));
    else busy = true;
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else busy = false;
    }
  }

  const appNow = () => Date.now() + offsetMs;
  const nextTimer = (): Timer | null => {
    if (!snap) return null;
    let best: Timer | null = null;
    for (const t of timersOf(snap)) {
      const at = Math.max(t.at, backoff[t.key]?.notBefore ?? 0);
      if (!best || at < best.at) best = { ...t, at };
    }
    return best;
  };
  const state = (): AccountActorState => {
    const t = nextTimer();
    return {
      snapshot: snap,
      processedThrough: processedThrough ? new Date(processedThrough).toISOString() : null,
      queuedFacts: facts.length,
      busy,
      nextTimer: t ? { kind: t.kind, at: new Date(t.at).toISOString() } : null,
    };
  };

  /** A new snapshot: the clock it carries, the search attributes and the details the Temporal UI shows. */
  let shown = '';
  function take(next: BillingSnapshot) {
    snap = next;
    offsetMs = Math.max(offsetMs, next.clock.offsetMs);
    const sub = next.subscription;
    const attributes = {
      status: billingStatusOf(next),
      renewsAt: sub?.renewsAt && sub.status !== 'cancelled' ? sub.renewsAt : null,
      resumeAt: sub?.pause?.resumeAt ?? null,
      incentive: next.account?.incentive?.id ?? null,
    };
    // Only a change is written (each upsert is an event of the history).
    if (JSON.stringify(attributes) !== shown) {
      shown = JSON.stringify(attributes);
      upsertSearchAttributes([
        { key: SA.BillingStatus, value: attributes.status },
        { key: SA.RenewsAt, value: attributes.renewsAt ? new Date(attributes.renewsAt) : null },
        { key: SA.ResumeAt, value: attributes.resumeAt ? new Date(attributes.resumeAt) : null },
        { key: SA.IncentiveId, value: attributes.incentive },
      ]);
    }
    const t = nextTimer();
    setCurrentDetails(describe(next) + (t ? `\n\nNext: ${t.kind} at ${new Date(t.at).toISOString()} (app time).` : ''));
    wake++;
  }

  async function load() {
    take(await durable.loadBillingSnapshot({ appId, accountId }));
  }

  setHandler(accountDef.signals.fact, (fact) => {
    facts.push(fact);
    wake++;
  });
  setHandler(accountDef.queries.state, state);
  setHandler(
    accountDef.updates.intent,
    (intent: Intent) =>
      exclusive(async () => {
        if (!snap) await load();
        // The state may have moved since the validator accepted it (an intent before this one): decide again, on
        // the record read again when the snapshot refuses on a state the provider ends (PROVIDER_ENDS).
        let refused = refusalOf(snap!, intent);
        if (refused && PROVIDER_ENDS.has(refused.reason) && patched('reread-before-provider-refusal')) {
          await load();
          refused = refusalOf(snap!, intent);
        }
        if (refused) throw refusalFailure(refused);
        try {
          const out = await asked.applyBillingIntent({ appId, accountId, intent });
          take(out.snapshot);
          return out.answer;
        } catch (err) {
          // The activity may have changed part of the record before it failed: read it again.
          await load();
          throw answeredError(err) ?? err;
        }
      }),
    {
      validator: (intent: Intent) => {
        // Before the first snapshot (a run just started by this update), the handler decides on the state; so it
        // does on a state the provider ends (PROVIDER_ENDS: the snapshot may be behind the record).
        const refused = lateRefusal(intent, Date.now()) ?? (snap ? refusalOf(snap, intent) : null);
        if (refused && !PROVIDER_ENDS.has(refused.reason)) throw refusalFailure(refused);
      },
    },
  );
  setHandler(accountDef.updates.advanceClock, async ({ offsetMs: to, to: until }) => {
    offsetMs = Math.max(offsetMs, to);
    wake++;
    const target = Date.parse(until);
    await condition(() => processedThrough >= target && facts.length === 0 && !busy);
    return state();
  });

  await exclusive(async () => {
    if (!snap) await load();
  });

  for (;;) {
    if (facts.length > 0) {
      await exclusive(async () => {
        const batch = facts.splice(0);
        try {
          take(await durable.applyBillingFacts({ appId, accountId, facts: batch }));
        } catch (err) {
          if (!answeredError(err)) throw err;
          log.warn('account actor: facts were answered with an error', { error: String(err) });
          await load();
        }
      });
      continue;
    }
    const timer = nextTimer();
    if (timer && timer.at <= appNow()) {
      await exclusive(async () => {
        // A fact or intent that came first may have moved the date: run it only if it is still due.
        const still = snap && timersOf(snap).some((t) => t.key === timer.key);
        if (!still) return;
        try {
          take(
            await durable.applyBillingTimer({
              appId,
              accountId,
              timer: { ...timer, asOf: new Date(timer.at).toISOString() },
            }),
          );
        } catch (err) {
          // An answered error (the account went meanwhile): read again, the timer decides on the new record.
          if (!answeredError(err)) throw err;
          log.warn('account actor: a timer was answered with an error', { timer: timer.kind, error: String(err) });
          await load();
        }
        // Ran without moving its date (the provider has not billed yet, the buyer has not approved): back off.
        if (snap && timersOf(snap).some((t) => t.key === timer.key)) {
          const tries = (backoff[timer.key]?.tries ?? 0) + 1;
          const schedule = timer.kind === 'approval_check' ? APPROVAL_CHECK_MS : PROVIDER_RECHECK_MS;
          backoff[timer.key] = { tries, notBefore: appNow() + schedule[Math.min(tries, schedule.length - 1)] };
        } else delete backoff[timer.key];
      });
      continue;
    }
    processedThrough = appNow();
    for (const key of Object.keys(backoff))
      if (!snap || !timersOf(snap).some((t) => t.key === key)) delete backoff[key];
    if (snap && !hasAnythingOverTime(snap) && facts.length === 0 && !busy && allHandlersFinished()) {
      setCurrentDetails(
        describe(snap) + '\n\nNothing over time is left: this actor ends (the next intent or fact starts it again).',
      );
      return state();
    }
    const limit = input.historyLimit ?? HISTORY_LIMIT;
    if ((workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > limit) && !busy) {
      // Hand over once no handler is running; a fact or a clock move first is taken first (an advanceClock update
      // waits for this loop, so waiting only for the handlers could wait for ever).
      const before = wake;
      await condition(() => allHandlersFinished() || wake !== before || facts.length > 0);
      if (allHandlersFinished() && facts.length === 0 && !busy)
        await continueAsNew<typeof accountWorkflow>({
          appId,
          accountId,
          carried: { snapshot: snap!, offsetMs, facts, backoff },
          ...(input.historyLimit ? { historyLimit: input.historyLimit } : {}),
        });
      continue;
    }
    const seen = wake;
    // Also wake to end once the last handler (an advanceClock answering) has finished, when nothing is left.
    const ending = snap !== null && !hasAnythingOverTime(snap);
    const woken = () => wake !== seen || facts.length > 0 || (ending && !busy && allHandlersFinished());
    if (timer) await condition(woken, Math.max(1, timer.at - appNow()));
    else await condition(woken);
  }
}
