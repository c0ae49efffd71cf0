import { rollUpUsage } from '../src/housekeeping/rollup.js';
import type { Activities } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

export function analyticsActivities(deps: Deps): Pick<Activities, 'rollUpUsage'> {
  return {
    /** Idempotent: each day is computed from the history as a whole, in one transaction per app and chunk. */
    rollUpUsage: (opts = {}) => rollUpUsage(deps, { appId: opts.appId }),
  };
}
