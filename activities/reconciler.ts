import { reconcile } from '../src/housekeeping/reconciler.js';
import type { ActivityDeps } from './index.js';

export function reconcilerActivities(deps: ActivityDeps) {
  return {
    /** Idempotent: restarts only workflows that are not running, for rows that still wait. */
    reconcileWaitingRows: () => reconcile(deps),
  };
}
