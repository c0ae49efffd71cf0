import {
  condition,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import { incentiveExpiryDef, SA, type IncentiveExpiryInput, type IncentiveExpiryState, infraRetry } from './shared.js';

const { expireAccountIncentive } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  // Never gives up on PostgreSQL: capped backoff for as long as it is down (the removal is idempotent).
  retry: infraRetry(),
});

/**
 * Waits (durable timer) until the account's incentive expires, then removes it. A signal re-targets
 * it to another incentive or expiry, or (null) ends it because the incentive was removed early.
 */
export async function incentiveExpiryWorkflow(input: IncentiveExpiryInput): Promise<IncentiveExpiryState> {
  const state: IncentiveExpiryState = {
    appId: input.appId,
    accountId: input.accountId,
    target: { incentiveId: input.incentiveId, expiresAt: input.expiresAt },
    phase: 'waiting',
    outcome: null,
  };
  let version = 0;
  setHandler(incentiveExpiryDef.signals.retarget, (target) => {
    state.target = target;
    version++;
  });
  setHandler(incentiveExpiryDef.queries.state, () => state);

  for (;;) {
    const target = state.target;
    if (!target) {
      state.phase = 'done';
      state.outcome = 'removed-early';
      setCurrentDetails(
        `The incentive of account **${input.accountId}** was removed before it expired. Nothing left to do.`,
      );
      return state;
    }
    upsertSearchAttributes([{ key: SA.IncentiveId, value: target.incentiveId }]);
    const seen = version;
    const waitMs = Date.parse(target.expiresAt) - Date.now();
    if (waitMs > 0) {
      state.phase = 'waiting';
      setCurrentDetails(
        `Account **${input.accountId}** (app ${input.appId}) has incentive **${target.incentiveId}** until ${target.expiresAt}. ` +
          'At that time this workflow removes it from the account. A change of incentive or expiry re-targets it.',
      );
      if (await condition(() => version !== seen, waitMs)) continue; // re-targeted: wait again
    }
    state.phase = 'removing';
    setCurrentDetails(
      `Removing incentive **${target.incentiveId}** from account **${input.accountId}** (expired ${target.expiresAt}).`,
    );
    const result = await expireAccountIncentive({ appId: input.appId, accountId: input.accountId, ...target });
    if (version !== seen) continue; // re-targeted while removing: follow the new target
    state.phase = 'done';
    state.outcome = result.removed ? 'expired' : 'already-changed';
    setCurrentDetails(
      result.removed
        ? `Removed incentive **${target.incentiveId}** from account **${input.accountId}** at its expiry (${target.expiresAt}).`
        : `Incentive **${target.incentiveId}** of account **${input.accountId}** had already been changed; nothing removed.`,
    );
    return state;
  }
}
