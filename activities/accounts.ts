import type { Activities } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

export function accountActivities(_deps: Deps): Pick<Activities, 'expireAccountIncentive'> {
  return {
    /**
     * The previous release's incentive expiry workflow, until the migration terminates it: the account actor owns
     * incentive ends now, so this removes nothing (nothing is applied twice).
     */
    expireAccountIncentive: async () => ({ removed: false }),
  };
}
