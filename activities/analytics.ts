import { rollUpUsage } from '../src/housekeeping/rollup.js';
import type { ActivityDeps } from './index.js';

export function analyticsActivities(deps: ActivityDeps) {
  return {
    /** Idempotent: each day is computed from the history as a whole, in one transaction per app and chunk. */
    /** Every app, or one (`appId`). */
    rollUpUsage: (opts: { appId?: string } = {}) => rollUpUsage(deps, { appId: opts.appId }),
  };
}
