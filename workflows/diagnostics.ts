import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import type { PingInput, PingResult } from './shared.js';

const { diagnosticsPing } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** Round trip through the worker and the database: proves the wiring from API to Temporal to worker to PostgreSQL. */
export async function pingWorkflow(input: PingInput): Promise<PingResult> {
  setCurrentDetails(`Asking a worker to read the database clock for "${input.message}"`);
  const result = await diagnosticsPing(input);
  setCurrentDetails(`Done: the worker (pid ${result.workerPid}) read ${result.databaseTime}`);
  return result;
}
