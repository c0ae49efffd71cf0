import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import { RETENTION_DAYS, type RetentionResult } from './shared.js';

const { purgeExpiredEventsAndDeliveries } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { maximumAttempts: 5 },
});

/** Run by the retention Schedule: removes events and webhook deliveries older than 30 days. */
export async function retentionWorkflow(): Promise<RetentionResult> {
  setCurrentDetails(`Removing events and webhook deliveries older than ${RETENTION_DAYS} days.`);
  const result = await purgeExpiredEventsAndDeliveries();
  setCurrentDetails(
    `Removed ${result.events} events and ${result.deliveries} deliveries created before ${result.cutoff}.`,
  );
  return result;
}
