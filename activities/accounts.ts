import type { IncentiveExpiryInput } from '../workflows/shared.js';
import type { ActivityDeps } from './index.js';

export function accountActivities(_deps: ActivityDeps) {
  return {
    /**
     * The previous release's incentive expiry workflow, until the migration terminates it: the account actor owns
     * incentive ends now, so this removes nothing (nothing is applied twice).
     */
    expireAccountIncentive: async (_input: IncentiveExpiryInput) => ({ removed: false }),
  };
}
