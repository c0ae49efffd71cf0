import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { UsageRollupResult } from './shared.js';

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
  const total: UsageRollupResult = { apps: 0, days: 0, lateRows: 0, through: '', done: false };
  for (let call = 1; call <= 50 && !total.done; call++) {
    const r = await rollUpUsage();
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
