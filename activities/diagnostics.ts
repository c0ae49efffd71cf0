import type { PingInput, PingResult } from '../workflows/shared.js';
import type { ActivityDeps } from './index.js';

export function diagnosticsActivities(deps: ActivityDeps) {
  return {
    async diagnosticsPing(input: PingInput): Promise<PingResult> {
      const rows = await deps.orm.em.fork().getConnection().execute<{ now: Date }[]>('select now() as now');
      return { message: input.message, databaseTime: new Date(rows[0].now).toISOString(), workerPid: process.pid };
    },
  };
}
