import type { PlanChangeInput, PlanChangeOutcome } from '../workflows/shared.js';
import type { ActivityDeps } from './index.js';

/**
 * The previous release's one-shot billing workflows (pause, plan change) may still run after an upgrade until the
 * migration's outbox terminates them: their dates belong to the account actor now, so their activities do nothing
 * (nothing is applied twice) and answer that someone else owns it.
 */
export function subscriptionActivities(_deps: ActivityDeps) {
  return {
    resumePausedSubscription: async (_input: { appId: string; accountId: string; pause: number }) => false,
    checkPlanChange: async (_input: PlanChangeInput): Promise<PlanChangeOutcome | 'pending'> => 'replaced',
    expirePlanChange: async (_input: PlanChangeInput): Promise<PlanChangeOutcome | 'pending'> => 'replaced',
  };
}
