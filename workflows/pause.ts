import {
  condition,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import { infraRetry, pauseDef, SA, type PauseInput, type PauseState } from './shared.js';

const { resumePausedSubscription } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  // PostgreSQL or the provider may be down when the pause ends: keep trying with capped backoff (the
  // resume is once-only anyway).
  retry: infraRetry(),
});

/**
 * A subscription pause: a durable timer until `resumeAt`, then billing restarts and the plan comes
 * back. Resumed early through the API or /pauses/resume, it is told so and ends without resuming again.
 */
export async function pauseWorkflow(input: PauseInput): Promise<PauseState> {
  const state: PauseState = { ...input, phase: 'paused', resumedBy: null };
  let ended = false;
  setHandler(pauseDef.signals.ended, () => {
    ended = true;
  });
  setHandler(pauseDef.queries.state, () => state);
  setCurrentDetails(
    `Account **${input.accountId}** (app ${input.appId}) is paused since ${input.pausedAt}. ` +
      `At ${input.resumeAt} billing restarts at the provider and the account gets plan **${input.restorePlan}** back.`,
  );
  const waitMs = Date.parse(input.resumeAt) - Date.now();
  if (waitMs > 0) await condition(() => ended, waitMs);
  if (ended) {
    state.phase = 'resumed';
    state.resumedBy = 'request';
    upsertSearchAttributes([{ key: SA.BillingStatus, value: 'resumed' }]);
    setCurrentDetails(`Resumed early on request; account **${input.accountId}** is back on its plan.`);
    return state;
  }
  state.phase = 'resuming';
  setCurrentDetails(
    `Resuming: reactivating billing and restoring plan **${input.restorePlan}** for **${input.accountId}**.`,
  );
  await resumePausedSubscription({ appId: input.appId, accountId: input.accountId, pause: input.pause });
  state.phase = 'resumed';
  state.resumedBy = 'timer';
  upsertSearchAttributes([{ key: SA.BillingStatus, value: 'resumed' }]);
  setCurrentDetails(`Resumed at ${input.resumeAt}: billing active again, plan **${input.restorePlan}** restored.`);
  return state;
}
