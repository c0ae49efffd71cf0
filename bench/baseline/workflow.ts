// The benchmark's baseline: the most trivial workflow the same Temporal server can run, one local activity
// that does nothing, so `npm run bench` can put webhook deliveries beside what Temporal itself reaches.
import { proxyLocalActivities } from '@temporalio/workflow';

export interface BaselineActivities {
  touch(i: number): Promise<void>;
}

const { touch } = proxyLocalActivities<BaselineActivities>({ startToCloseTimeout: '10 seconds' });

export async function baselineWorkflow(i: number): Promise<void> {
  await touch(i);
}
