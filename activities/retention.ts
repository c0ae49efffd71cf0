import { purgeExpired } from '../src/events/retention.js';
import type { ActivityDeps } from './index.js';

export function retentionActivities(deps: ActivityDeps) {
  return {
    purgeExpiredEventsAndDeliveries: () => purgeExpired(deps),
  };
}
