import { deleteInBatches, sql } from '../db/sql.js';
import { purgeIdempotencyKeys } from '../http/idempotency.js';
import { purgeIdleKeySessions, purgeOldCalls } from '../mcp/calls.js';
import { purgeOldElicitations } from '../mcp/elicitation.js';
import { purgeExpiredOAuth } from '../oauth/oauth.service.js';
import type { Deps } from '../deps.js';
import { scheduledStart } from '../temporal/client.js';
import { RETENTION_DAYS, RETENTION_SCHEDULE_ID, retentionDef, type RetentionResult } from '../../workflows/shared.js';

/** Deletes events, deliveries and MCP tool calls older than the retention window, in batches (short locks). */
export async function purgeExpired(deps: Deps): Promise<RetentionResult> {
  const em = deps.orm.em.fork();
  const [row] = await sql<{ cutoff: Date | string }>(em, `select now() - make_interval(days => $1) as cutoff`, [
    RETENTION_DAYS,
  ]);
  const cutoff = new Date(row.cutoff);
  const deliveries = await deleteInBatches(
    em,
    `delete from webhook_deliveries where id in (select id from webhook_deliveries where created_at < $1 and status
      <> 'pending' limit $2) returning 1`,
    [cutoff],
  );
  const events = await deleteInBatches(
    em,
    `delete from events where id in (select id from events where created_at < $1 and not fanout_pending limit $2)
      returning 1`,
    [cutoff],
  );
  // MCP tool calls are kept 30 days too; expired OAuth requests, codes and tokens go with them.
  const mcpCalls = await purgeOldCalls(em);
  await purgeIdleKeySessions(em);
  // Questions asked before destructive MCP tools, a day after they closed.
  await purgeOldElicitations(em);
  await purgeExpiredOAuth(em, deps.config.OAUTH_UNUSED_CLIENT_HOURS);
  // Settled reservations are kept as long as events.
  await deleteInBatches(
    em,
    `delete from usage_reservations where (app_id, id) in (select app_id, id from usage_reservations
      where settled_at < $1 limit $2) returning 1`,
    [cutoff],
  );
  // Ingested usage event ids deduplicate re-sent batches for as long.
  await deleteInBatches(
    em,
    `delete from usage_ingested where (app_id, event_id) in (select app_id, event_id from usage_ingested
      where created_at < $1 limit $2) returning 1`,
    [cutoff],
  );
  // Idempotency keys answer retries for 24 hours.
  const idempotencyKeys = await purgeIdempotencyKeys(em);
  return { events, deliveries, mcpCalls, idempotencyKeys, cutoff: cutoff.toISOString() };
}

/** Creates the hourly retention Schedule if it does not exist (idempotent; run at worker start). */
export async function ensureRetentionSchedule(deps: Deps): Promise<void> {
  try {
    await deps.temporal.client.schedule.create({
      scheduleId: RETENTION_SCHEDULE_ID,
      spec: { intervals: [{ every: '1 hour' }] },
      policies: { overlap: 'SKIP', catchupWindow: '1 hour' },
      action: scheduledStart(retentionDef, {
        taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
        args: [],
        workflowId: 'retention/run',
        staticSummary: `Remove events and webhook deliveries older than ${RETENTION_DAYS} days`,
      }),
      memo: { description: `Hourly: deletes events and webhook deliveries older than ${RETENTION_DAYS} days.` },
    });
    deps.logger.info({ scheduleId: RETENTION_SCHEDULE_ID }, 'created the retention schedule');
  } catch (err) {
    if ((err as Error).name !== 'ScheduleAlreadyRunning') throw err;
  }
}
