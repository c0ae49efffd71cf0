import {
  condition,
  defineQuery,
  defineSignal,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import {
  DELIVERY_STATE_QUERY,
  DELIVERY_STOP_SIGNAL,
  SA,
  type AttemptReport,
  type WebhookDeliveryInput,
  type WebhookDeliveryState,
} from './shared.js';

export const stopDeliverySignal = defineSignal(DELIVERY_STOP_SIGNAL);
export const deliveryStateQuery = defineQuery<WebhookDeliveryState>(DELIVERY_STATE_QUERY);

// A local activity: the attempt runs in the worker that runs the workflow task and its result is
// recorded in that task, halving the Temporal round trips and history events of each delivery.
// Retries of the *schedule* are durable timers below; this retry policy only covers infrastructure
// errors (database down), not HTTP failures, which the activity reports as results.
const { attemptWebhookDelivery } = proxyLocalActivities<Activities>({
  // The HTTP attempt itself times out after 10 s; this bounds the activity around it.
  startToCloseTimeout: '45 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/**
 * One webhook delivery: attempt 1 at once, then one attempt after each delay of the schedule (durable
 * timers), until a 2xx, a 410, a disabled endpoint or the last attempt. The workflow id is the
 * delivery id; the receiver sees the same `webhook-id` (the event id) on every attempt.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryState> {
  const maxAttempts = input.scheduleMs.length + 1;
  const state: WebhookDeliveryState = {
    deliveryId: input.deliveryId,
    status: 'pending',
    attempts: 0,
    maxAttempts,
    nextAttemptAt: null,
    lastError: null,
  };
  let stopRequested = false;
  setHandler(stopDeliverySignal, () => {
    stopRequested = true;
  });
  setHandler(deliveryStateQuery, () => state);
  const target = `\`${input.eventType}\` to ${input.url}`;

  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (attempt > 1) {
      const delay = input.scheduleMs[attempt - 2];
      state.nextAttemptAt = new Date(Date.now() + delay).toISOString();
      setCurrentDetails(
        `Attempt ${attempt - 1} of ${maxAttempts} failed (${state.lastError}). Attempt ${attempt} of ${target} at ${state.nextAttemptAt}.`,
      );
      await condition(() => stopRequested, delay); // a disabled or deleted endpoint wakes it early
    } else {
      setCurrentDetails(`Sending ${target} (attempt 1 of ${maxAttempts}).`);
    }
    const nextDelayMs = attempt < maxAttempts ? input.scheduleMs[attempt - 1] : null;
    const report: AttemptReport = await attemptWebhookDelivery({
      deliveryId: input.deliveryId,
      attempt,
      final: attempt === maxAttempts,
      nextDelayMs,
    });
    state.attempts = attempt;
    state.lastError = report.error;
    state.nextAttemptAt = null;
    if (report.outcome === 'retry') continue;
    state.status = report.outcome === 'gone' ? 'deleted' : report.outcome;
    upsertSearchAttributes([{ key: SA.DeliveryStatus, value: state.status }]);
    setCurrentDetails(
      report.outcome === 'succeeded'
        ? `Delivered ${target} on attempt ${attempt}${report.responseStatus ? ` (HTTP ${report.responseStatus})` : ''}.`
        : report.outcome === 'gone'
          ? 'The delivery was deleted with its endpoint; nothing more to do.'
          : `Failed after attempt ${attempt} of ${maxAttempts}: ${report.error}.`,
    );
    return state;
  }
  // Unreachable: the last attempt is final.
  throw new Error(`delivery ${workflowInfo().workflowId} ran out of attempts`);
}
