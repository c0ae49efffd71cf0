import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import {
  CHECKOUT_POLL_MS,
  CHECKOUT_TTL_MS,
  checkoutDef,
  SA,
  type CheckoutState,
  type CheckoutWorkflowInput,
  infraRetry,
} from './shared.js';

// Our database or the provider being down never fails a checkout: these retry with capped backoff,
// and a check that still fails (it is bounded by the checkout's deadline) is tried again on the
// next round. Only the deadline ends a checkout that was not approved.
const activities = (maxIntervalMs?: number) =>
  proxyActivities<Activities>({ startToCloseTimeout: '1 minute', retry: infraRetry(maxIntervalMs) });

/**
 * One checkout, from creation to completion: checks the provider with backoff until the buyer's
 * subscription is active, then applies the purchase (exactly once, guarded in the database). A
 * provider notification or a `complete` call (update `checkNow`) makes it check at once.
 */
export async function checkoutWorkflow(input: CheckoutWorkflowInput): Promise<CheckoutState> {
  const state: CheckoutState = {
    checkoutId: input.checkoutId,
    status: 'created',
    checks: 0,
    providerStatus: null,
    nextCheckAt: null,
  };
  let nudges = 0;
  // The deadline is on the app's clock: real time plus its offset, which a test clock moves forward (a signal).
  let offsetMs = input.offsetMs ?? 0;
  const appNow = () => Date.now() + offsetMs;
  setHandler(checkoutDef.signals.providerNotified, () => {
    nudges++;
  });
  setHandler(checkoutDef.signals.clockMoved, (offset) => {
    if (offset <= offsetMs) return;
    offsetMs = offset;
    nudges++;
  });
  setHandler(checkoutDef.updates.checkNow, async () => {
    const seen = state.checks;
    nudges++;
    await condition(() => state.checks > seen || state.status !== 'created');
    return state;
  });
  setHandler(checkoutDef.queries.state, () => state);
  // A `complete` whose update arrived as the checkout was applied gets its answer from this run:
  // the workflow ends only once every update handler has returned (none is left unanswered).
  const finish = async () => {
    await condition(allHandlersFinished);
    return state;
  };
  const deadline = input.expiresAt ? Date.parse(input.expiresAt) : appNow() + CHECKOUT_TTL_MS;
  const { expireCheckoutNow } = activities(input.retryMaxIntervalMs);
  // A check runs at most until the deadline (at least a minute), then the loop decides.
  const { checkCheckoutWithProvider } = proxyActivities<Activities>({
    startToCloseTimeout: '1 minute',
    scheduleToCloseTimeout: Math.max(60_000, deadline - appNow()),
    retry: infraRetry(input.retryMaxIntervalMs),
  });

  for (let round = 0; ; round++) {
    const seen = nudges;
    setCurrentDetails(
      `Checking with the payment provider whether the buyer approved checkout ${input.checkoutId} (check ${state.checks + 1}).`,
    );
    let result: Awaited<ReturnType<typeof checkCheckoutWithProvider>>;
    try {
      result = await checkCheckoutWithProvider(input);
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // Retried until its time ran out (an outage as long as the checkout's life): expire below, or
      // check again on the next round.
      result = { status: 'created', providerStatus: state.providerStatus ?? 'unreachable' };
    }
    state.checks++;
    state.providerStatus = result.providerStatus;
    if (result.status !== 'created') {
      state.status = result.status;
      state.nextCheckAt = null;
      setCurrentDetails(
        result.status === 'completed'
          ? `Completed: the purchase is applied to the account.`
          : `Ended: the provider reports ${result.providerStatus}.`,
      );
      return finish();
    }
    if (appNow() >= deadline) {
      await expireCheckoutNow(input.checkoutId);
      state.status = 'expired';
      setCurrentDetails('Expired: the buyer did not approve within 24 hours.');
      return finish();
    }
    const delay = Math.min(CHECKOUT_POLL_MS[Math.min(round, CHECKOUT_POLL_MS.length - 1)], deadline - appNow());
    state.nextCheckAt = new Date(Date.now() + delay).toISOString();
    upsertSearchAttributes([{ key: SA.BillingStatus, value: `awaiting ${result.providerStatus ?? 'provider'}` }]);
    setCurrentDetails(
      `Waiting for the buyer (provider status ${result.providerStatus}). Next check at ${state.nextCheckAt}, ` +
        'or sooner on a notification or a complete call.',
    );
    await condition(() => nudges !== seen, delay);
  }
}
