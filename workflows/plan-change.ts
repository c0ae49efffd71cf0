import { condition, proxyActivities, setCurrentDetails, setHandler } from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import {
  infraRetry,
  PLAN_CHANGE_POLL_MS,
  planChangeDef,
  type PlanChangeInput,
  type PlanChangeState,
} from './shared.js';

const { checkPlanChange, expirePlanChange } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  // PostgreSQL or the provider being down never decides the outcome: retried with capped backoff.
  retry: infraRetry(),
});

/**
 * A plan change the buyer approves at the provider (a requested change, or a cancel flow's discount or downgrade
 * save): checks the provider on a notification, when the buyer comes back, and on a backoff schedule; the change
 * applies (and a save counts) only when the provider reports it. At `expiresAt` an unapproved change is dropped
 * and a save goes back to where the customer can cancel.
 */
export async function planChangeWorkflow(input: PlanChangeInput): Promise<PlanChangeState> {
  const state: PlanChangeState = { changeId: input.changeId, phase: 'awaiting_approval', outcome: null, checks: 0 };
  let nudges = 0;
  setHandler(planChangeDef.signals.providerNotified, () => {
    nudges++;
  });
  setHandler(planChangeDef.queries.state, () => state);
  const what = input.sessionId
    ? `the save offer of cancel session ${input.sessionId}`
    : `the change to plan **${input.plan}**`;
  const deadline = Date.parse(input.expiresAt);
  for (let round = 0; ; round++) {
    const seen = nudges;
    const wait = Math.min(PLAN_CHANGE_POLL_MS[Math.min(round, PLAN_CHANGE_POLL_MS.length - 1)], deadline - Date.now());
    setCurrentDetails(
      `Waiting for account **${input.accountId}** to approve ${what} at the provider, until ${input.expiresAt}; ` +
        'checks on a provider notification, when the buyer comes back, and on a schedule.',
    );
    if (wait > 0) await condition(() => nudges !== seen, wait);
    const outcome = Date.now() >= deadline ? await expirePlanChange(input) : await checkPlanChange(input);
    state.checks++;
    if (outcome !== 'pending') {
      state.phase = 'done';
      state.outcome = outcome;
      setCurrentDetails(
        outcome === 'applied'
          ? `Approved at the provider: ${what} is applied.`
          : outcome === 'scheduled'
            ? `Approved at the provider: ${what} applies at the next renewal.`
            : outcome === 'replaced'
              ? `Superseded: the subscription no longer waits on this change.`
              : `${outcome === 'refused' ? 'Refused by the buyer' : 'Not approved in time'}: ${what} was dropped.`,
      );
      return state;
    }
  }
}
