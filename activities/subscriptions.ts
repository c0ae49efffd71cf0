import type { Activities } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

/**
 * The previous release's one-shot billing workflows (pause, plan change) may still run after an upgrade until the
 * migration's outbox terminates them: their dates belong to the account actor now, so their activities do nothing
 * (nothing is applied twice) and answer that someone else owns it.
 */
export function subscriptionActivities(
  _deps: Deps,
): Pick<Activities, 'resumePausedSubscription' | 'checkPlanChange' | 'expirePlanChange'> {
  return {
    resumePausedSubscription: async () => false,
    checkPlanChange: async () => 'replaced',
    expirePlanChange: async () => 'replaced',
  };
}
