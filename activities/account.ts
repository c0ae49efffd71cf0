import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { AppError } from '../src/errors.js';
import { providerRefused } from '../src/payments/payments.service.js';
import { loadSnapshot } from '../src/subscriptions/snapshot.service.js';
import { runFacts, runIntent, runTimer } from '../src/subscriptions/intents.service.js';
import { withBillingScope } from '../src/timeline/scope.js';
import { APP_ERROR_FAILURE, type AppErrorDetails } from '../workflows/shared.js';
import type { Intent } from '../workflows/contracts/billing.js';
import type { Activities, ActorTarget } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

/**
 * Runs one of the actor's steps in its billing scope (the timeline names the actor's run) and turns an answered
 * error into a failure the workflow passes on as it is: a refusal or a missing record (4xx) always, and for an
 * intent also a provider's error (502), which its caller hears instead of a retry.
 */
async function step<T>(
  target: ActorTarget,
  by: Intent['by'] | null,
  answerProvider: boolean,
  fn: () => Promise<T>,
  requestId: string | null = null,
) {
  const ctx = Context.current();
  const info = ctx.info;
  // A heartbeat every 2 s while the step runs: a worker that is killed is noticed by Temporal within the actor's
  // heartbeat timeout, and the step is retried on another worker then, not after its whole start-to-close timeout.
  const beat = setInterval(() => ctx.heartbeat(), 2_000);
  try {
    return await withBillingScope(
      {
        by,
        workflowId: info.workflowExecution?.workflowId ?? null,
        runId: info.workflowExecution?.runId ?? null,
        // An intent's outcomes name the request that asked for them (its timeline lines, its retry's check).
        requestId,
      },
      fn,
    );
  } catch (err) {
    // A provider that refuses for good (a 4xx) is answered too: retrying a fact or a date for ever would stall the
    // actor; its outages and 5xx are retried.
    if (
      err instanceof AppError &&
      (err.status < 500 || (err.status === 502 && (answerProvider || providerRefused(err))))
    ) {
      const details: AppErrorDetails = {
        status: err.status,
        message: err.message,
        ...(err.extra ? { extra: err.extra } : {}),
        ...(err.headers ? { headers: err.headers } : {}),
      };
      throw ApplicationFailure.create({
        type: APP_ERROR_FAILURE,
        message: err.message,
        nonRetryable: true,
        details: [details],
      });
    }
    throw err;
  } finally {
    clearInterval(beat);
  }
}

/** The account actor's activities (workflows/account.ts): each reads or changes the record and answers its snapshot. */
export function accountActorActivities(
  deps: Deps,
): Pick<Activities, 'loadBillingSnapshot' | 'applyBillingIntent' | 'applyBillingFacts' | 'applyBillingTimer'> {
  return {
    loadBillingSnapshot: (t) => loadSnapshot(deps.orm.em.fork(), t.appId, t.accountId),
    applyBillingIntent: (input) =>
      step(
        input,
        input.intent.by,
        true,
        () => runIntent(deps, input.appId, input.accountId, input.intent, Context.current().info.attempt === 1),
        input.intent.requestId,
      ),
    applyBillingFacts: (input) =>
      step(input, { kind: 'system', id: null, name: 'provider' }, false, () =>
        runFacts(deps, input.appId, input.accountId, input.facts),
      ),
    applyBillingTimer: (input) =>
      step(input, { kind: 'system', id: null, name: 'account actor' }, false, () =>
        runTimer(deps, input.appId, input.accountId, input.timer),
      ),
  };
}
