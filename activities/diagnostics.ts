import type { Activities } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

export function diagnosticsActivities(deps: Deps): Pick<Activities, 'diagnosticsPing'> {
  return {
    async diagnosticsPing(input) {
      const rows = await deps.orm.em.fork().getConnection().execute<{ now: Date }[]>('select now() as now');
      return { message: input.message, databaseTime: new Date(rows[0].now).toISOString(), workerPid: process.pid };
    },
  };
}
