import { expireAccountIncentive } from '../src/accounts/accounts.service.js';
import type { IncentiveExpiryInput } from '../workflows/shared.js';
import type { ActivityDeps } from './index.js';

export function accountActivities(deps: ActivityDeps) {
  return {
    /** Idempotent: removes the incentive only while the account still has exactly this one and expiry. */
    expireAccountIncentive: (input: IncentiveExpiryInput) => expireAccountIncentive(deps, input),
  };
}
