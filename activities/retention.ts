import { purgeExpired } from '../src/housekeeping/retention.js';
import type { ActivityDeps } from './index.js';

export function retentionActivities(deps: ActivityDeps) {
  return {
    purgeExpiredEventsAndDeliveries: () => purgeExpired(deps),
  };
}
