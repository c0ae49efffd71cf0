import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';
import type { Deps } from '../deps.js';
import { scheduledStart } from '../temporal/client.js';
import {
  USAGE_ROLLUP_SCHEDULE_ID,
  USAGE_ROLLUP_WORKFLOW_ID,
  usageRollupDef,
  type UsageRollupResult,
} from '../../workflows/shared.js';

/** Days rolled up per transaction (keeps each one short while catching up). */
export const ROLLUP_CHUNK_DAYS = 31;

/**
 * The first UTC day that is not closed yet: today, or the day the oldest transaction still open on this
 * database began (it may still write usage rows dated then with `now()`). Days before it can no longer
 * receive rows dated `now()`; a row dated earlier (batch ingest and import take timestamps) is recorded
 * as a late row by the `usage_events_late` trigger. Sessions of other database roles show no
 * `xact_start` here; the service writes usage under one role.
 */
async function firstOpenDay(em: EntityManager): Promise<string> {
  const [row] = await sql<{ day: string }>(
    em,
    `select least((now() at time zone 'UTC')::date,
                  (select (min(xact_start) at time zone 'UTC')::date from pg_stat_activity
                    where datname = current_database() and backend_type = 'client backend'
                      and pid <> pg_backend_pid()))::text as day`,
  );
  return row.day;
}

interface Step {
  days: number;
  late: number;
  through: string;
}

/**
 * One transaction for one app: takes its `usage_rollups` row FOR UPDATE (late rows wait for it), folds the
 * late rows into the daily tables, then rolls up to `ROLLUP_CHUNK_DAYS` days from `through`, never past
 * `upTo`, and moves `through`. Idempotent: a day is (re)computed from the history as a whole, and a run
 * that fails changes nothing.
 */
async function step(deps: Deps, appId: string, upTo: string): Promise<Step | null> {
  return deps.orm.em.fork().transactional(async (em) => {
    const [state] = await sql<{ start: string; end: string }>(
      em,
      `with s as (
         select case when r.through = '-infinity'
                     then coalesce((select (min(created_at) at time zone 'UTC')::date from usage_events
                                     where app_id = r.app_id), $2::date)
                     else r.through end as start
           from usage_rollups r where r.app_id = $1 for update)
       select start::text as start, greatest(start, least(start + $3::int, $2::date))::text as end from s`,
      [appId, upTo, ROLLUP_CHUNK_DAYS],
    );
    if (!state) return null; // the app was deleted
    const [folded] = await sql<{ days: string[]; rows: string }>(
      em,
      `with moved as (
         delete from usage_rollup_late where app_id = $1 returning day, account_id, entitlement_id, amount),
       agg as (
         select account_id, day, entitlement_id, count(*) as calls, sum(amount) as amount from moved group by 1, 2, 3),
       up as (
         insert into usage_daily as d (app_id, account_id, day, entitlement_id, calls, amount)
         select $1::text, account_id, day, entitlement_id, calls, amount from agg order by 2, 3, 4
         on conflict (app_id, account_id, day, entitlement_id)
           do update set calls = d.calls + excluded.calls, amount = d.amount + excluded.amount)
       select coalesce(array_agg(distinct day::text), '{}') as days, coalesce(sum(calls), 0) as rows from agg`,
      [appId],
    );
    let days = 0;
    if (state.end > state.start) {
      await sql(
        em,
        `insert into usage_daily as d (app_id, account_id, day, entitlement_id, calls, amount)
         select $1::text, account_id, (created_at at time zone 'UTC')::date, entitlement_id, count(*), sum(amount)
           from usage_events
          where app_id = $1::text and created_at >= $2::date::timestamp at time zone 'UTC'
            and created_at < $3::date::timestamp at time zone 'UTC'
          group by 2, 3, 4
         on conflict (app_id, account_id, day, entitlement_id)
           do update set calls = excluded.calls, amount = excluded.amount`,
        [appId, state.start, state.end],
      );
      days = (Date.parse(state.end) - Date.parse(state.start)) / 86_400_000;
    }
    // The app-wide table, recomputed for every day that changed.
    await sql(
      em,
      `insert into usage_daily_app as d (app_id, day, entitlement_id, calls, amount)
       select $1::text, day, entitlement_id, sum(calls), sum(amount) from usage_daily
        where app_id = $1 and ((day >= $2::date and day < $3::date) or day = any($4::date[]))
        group by 2, 3
       on conflict (app_id, day, entitlement_id) do update set calls = excluded.calls, amount = excluded.amount`,
      [appId, state.start, state.end, folded.days],
    );
    await sql(em, `update usage_rollups set through = $2::date, updated_at = now() where app_id = $1`, [
      appId,
      state.end,
    ]);
    return { days, late: Number(folded.rows), through: state.end };
  });
}

/**
 * Rolls usage up into daily totals for every app, from each app's `through` to the last closed day, and
 * folds late rows in. Catches up after any downtime (it starts where the last run stopped); stops after
 * `budgetMs` with `done: false` so the workflow can call it again.
 */
export async function rollUpUsage(deps: Deps, budgetMs = 5 * 60_000): Promise<UsageRollupResult> {
  const started = Date.now();
  const em = deps.orm.em.fork();
  const upTo = await firstOpenDay(em);
  const apps = await sql<{ app_id: string }>(
    em,
    `select r.app_id from usage_rollups r
      where r.through < $1::date or exists (select 1 from usage_rollup_late l where l.app_id = r.app_id)
      order by r.app_id`,
    [upTo],
  );
  const result: UsageRollupResult = { apps: 0, days: 0, lateRows: 0, through: upTo, done: true };
  for (const { app_id } of apps) {
    let touched = false;
    for (;;) {
      if (Date.now() - started > budgetMs) return { ...result, done: false };
      const s = await step(deps, app_id, upTo);
      if (!s) break;
      touched ||= s.days > 0 || s.late > 0;
      result.days += s.days;
      result.lateRows += s.late;
      if (s.through >= upTo) break;
    }
    if (touched) result.apps++;
  }
  return result;
}

/**
 * Creates the roll-up Schedule if it does not exist (idempotent; run at worker start): hourly at five
 * past, so a day is in the roll-up within about an hour of its end; triggered once at creation, so a new
 * deployment rolls up its history at once. Runs never overlap; each one starts where the last stopped,
 * so a run missed during downtime needs no catch-up of its own.
 */
export async function ensureRollupSchedule(deps: Deps): Promise<void> {
  try {
    await deps.temporal.client.schedule.create({
      scheduleId: USAGE_ROLLUP_SCHEDULE_ID,
      spec: { intervals: [{ every: '1 hour', offset: '5 minutes' }] },
      policies: { overlap: 'SKIP', catchupWindow: '1 hour' },
      state: { triggerImmediately: true },
      action: scheduledStart(usageRollupDef, {
        taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
        args: [],
        workflowId: USAGE_ROLLUP_WORKFLOW_ID,
        staticSummary: 'Roll usage history up into daily totals for analytics',
      }),
      memo: {
        description:
          'Hourly: adds every closed UTC day since the last run to the daily usage roll-up (usage_daily, ' +
          'usage_daily_app) and folds in usage recorded late for days already rolled up.',
      },
    });
    deps.logger.info({ scheduleId: USAGE_ROLLUP_SCHEDULE_ID }, 'created the usage roll-up schedule');
  } catch (err) {
    if ((err as Error).name !== 'ScheduleAlreadyRunning') throw err;
  }
}
