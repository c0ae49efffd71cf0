import {
  condition,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import {
  SA,
  type AttemptReport,
  type WebhookDeliveryInput,
  type WebhookDeliveryState,
  webhookDeliveryDef,
  infraRetry,
} from './shared.js';

// A local activity: the attempt runs in the worker that runs the workflow task and its result is
// recorded in that task, halving the Temporal round trips and history events of each delivery.
// Retries of the *schedule* are durable timers below; this retry policy only covers our own
// infrastructure errors (database down), not HTTP failures, which the activity reports as results.
// It never gives up: an outage of any length is waited out with capped backoff, and the 7 attempts
// of the schedule count sends to the receiver, not our database errors.
const attemptActivity = (maxIntervalMs?: number) =>
  proxyLocalActivities<Activities>({
    // The HTTP attempt itself times out after 10 s; this bounds the activity around it.
    startToCloseTimeout: '45 seconds',
    retry: infraRetry(maxIntervalMs),
  }).attemptWebhookDelivery;

/**
 * One webhook delivery: attempt 1 at once, then one attempt after each delay of the schedule (durable
 * timers), until a 2xx, a 410, a disabled endpoint or the last attempt. The workflow id is the
 * delivery id; the receiver sees the same `webhook-id` (the event id) on every attempt.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryState> {
  const maxAttempts = input.scheduleMs.length + 1;
  const attemptWebhookDelivery = attemptActivity(input.retryMaxIntervalMs);
  const first = Math.max(1, Math.min(input.startAttempt ?? 1, maxAttempts));
  const state: WebhookDeliveryState = {
    deliveryId: input.deliveryId,
    status: 'pending',
    attempts: first - 1,
    maxAttempts,
    nextAttemptAt: null,
    lastError: null,
  };
  let stopRequested = false;
  setHandler(webhookDeliveryDef.signals.stop, () => {
    stopRequested = true;
  });
  setHandler(webhookDeliveryDef.queries.state, () => state);
  const target = `\`${input.eventType}\` to ${input.url}`;

  for (let attempt = first; attempt <= maxAttempts; attempt++) {
    if (attempt === first && first > 1) {
      // Restarted by the reconciler: wait what is left of the delay the row recorded.
      const delay = Math.max(0, input.firstDelayMs ?? 0);
      state.nextAttemptAt = new Date(Date.now() + delay).toISOString();
      setCurrentDetails(
        `Resumed after an interruption: attempt ${attempt} of ${maxAttempts} of ${target} at ${state.nextAttemptAt}.`,
      );
      if (delay > 0) await condition(() => stopRequested, delay);
    } else if (attempt > 1) {
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
