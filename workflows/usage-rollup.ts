import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import type { UsageRollupAppInput, UsageRollupResult } from './shared.js';

const { rollUpUsage } = proxyActivities<Activities>({
  startToCloseTimeout: '15 minutes',
  retry: { maximumAttempts: 5 },
});

/**
 * Run by the roll-up Schedule: adds every closed UTC day since the last run to the daily usage totals
 * analytics read, and folds in usage recorded late for days already rolled up. The activity works within a
 * time budget; a long catch-up (a first run over years of history, or after downtime) takes several calls.
 */
export async function usageRollupWorkflow(): Promise<UsageRollupResult> {
  setCurrentDetails('Rolling usage history up into daily totals (and the closed hours of the current day).');
  return rollUp();
}

/**
 * One app's roll-up, started at once instead of at the next hourly run: after an import (a year of history can land
 * at once), or when a request for its analytics found more history than the roll-up had reached. Runs beside the
 * Schedule's: each app's roll-up row is taken FOR UPDATE per step, so two runs over one app take turns.
 */
export async function usageRollupAppWorkflow(input: UsageRollupAppInput): Promise<UsageRollupResult> {
  setCurrentDetails(`Rolling up the usage history of app ${input.appId} into daily totals now.`);
  return rollUp(input.appId);
}

async function rollUp(appId?: string): Promise<UsageRollupResult> {
  const total: UsageRollupResult = { apps: 0, days: 0, lateRows: 0, through: '', done: false };
  for (let call = 1; call <= 50 && !total.done; call++) {
    const r = await rollUpUsage(appId ? { appId } : {});
    total.apps += r.apps;
    total.days += r.days;
    total.lateRows += r.lateRows;
    total.through = r.through;
    total.rolledTo = r.rolledTo;
    total.done = r.done;
    setCurrentDetails(
      `${r.done ? 'Done' : 'Catching up'}: ${total.days} app-days added for ${total.apps} apps, ` +
        `${total.lateRows} late usage rows folded in; everything before ${r.rolledTo ?? r.through} is rolled up` +
        `${r.done ? '.' : ' where finished so far; continuing.'}`,
    );
  }
  return total;
}
