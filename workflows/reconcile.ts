import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import { infraRetry, type ReconcileResult } from './shared.js';

const { reconcileWaitingRows } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  // A run that cannot reach PostgreSQL keeps trying until the next run would start anyway.
  scheduleToCloseTimeout: '9 minutes',
  retry: infraRetry(),
});

/** Run by the reconciler Schedule: restarts or finishes waiting rows whose workflow is gone. */
export async function reconcileWorkflow(): Promise<ReconcileResult> {
  setCurrentDetails(
    'Looking for pending deliveries, open checkouts, due pauses, expired incentives, reservations held past ' +
      'their deadline and overdue outbox commands whose workflow is missing, failed or ended.',
  );
  const r = await reconcileWaitingRows();
  const repaired = Object.entries(r.repaired).filter(([, n]) => n > 0);
  setCurrentDetails(
    repaired.length
      ? `Repaired ${repaired.map(([k, n]) => `${n} ${k}`).join(', ')}: ${r.restarted.join(', ')}.`
      : `Every waiting row has its workflow (checked ${Object.entries(r.checked)
          .map(([k, n]) => `${n} ${k}`)
          .join(', ')}).`,
  );
  return r;
}
