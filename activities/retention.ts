import { purgeExpired } from '../src/housekeeping/retention.js';
import type { Activities } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

export function retentionActivities(deps: Deps): Pick<Activities, 'purgeExpiredEventsAndDeliveries'> {
  return {
    purgeExpiredEventsAndDeliveries: () => purgeExpired(deps),
  };
}
