import { reconcile } from '../src/housekeeping/reconciler.js';
import type { Activities } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

export function reconcilerActivities(deps: Deps): Pick<Activities, 'reconcileWaitingRows'> {
  return {
    /** Idempotent: restarts only workflows that are not running, for rows that still wait. */
    reconcileWaitingRows: () => reconcile(deps),
  };
}
