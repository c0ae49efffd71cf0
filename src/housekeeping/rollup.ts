import type { EntityManager } from '@mikro-orm/postgresql';
import { longStatements, sql } from '../db/sql.js';
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
 * Where a run may roll up to: the start of the current UTC hour, or of the hour in which the oldest transaction
 * still open on this database began (it may still write usage rows dated then with `now()`). Hours before it can
 * no longer receive rows dated `now()`; a row dated earlier (batch ingest and import take timestamps) is recorded
 * as a late row by the `usage_events_late` trigger, whose WHEN clause relies on exactly this bound. Sessions of
 * other database roles show no `xact_start` here; the service writes usage under one role. `before` (tests) moves
 * the bound earlier, never later.
 */
async function firstOpenHour(em: EntityManager, before?: Date): Promise<{ upTo: string; day: string }> {
  const [row] = await sql<{ up_to: string; day: string }>(
    em,
    `with b as (
       select least(date_trunc('hour', now() at time zone 'UTC'),
                    (select date_trunc('hour', min(xact_start) at time zone 'UTC') from pg_stat_activity
                      where datname = current_database() and backend_type = 'client backend'
                        and pid <> pg_backend_pid()),
                    date_trunc('hour', $1::timestamptz at time zone 'UTC')) as h)
     select to_char(h, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as up_to, h::date::text as day from b`,
    [before ?? null],
  );
  return { upTo: row.up_to, day: row.day };
}

interface Step {
  days: number;
  late: number;
  through: string;
  rolledTo: string;
}

/**
 * One transaction for one app: takes its `usage_rollups` row FOR UPDATE (late rows wait for it), folds the
 * late rows into the daily tables, then rolls up to `ROLLUP_CHUNK_DAYS` whole days from `through`, never past
 * `upTo`'s day, and moves `through`. When it reaches that day, it also rolls up the day's hours before `upTo` (a
 * partial day) and moves `rolled_to` there. Idempotent: a day is (re)computed from the history as a whole, and a
 * run that fails changes nothing.
 */
async function step(deps: Deps, appId: string, upTo: { upTo: string; day: string }): Promise<Step | null> {
  return deps.orm.em.fork().transactional(async (em) => {
    // A month of an app's history at a time: longer than a request's statement may take.
    await longStatements(em);
    const [state] = await sql<{ start: string; end: string; partial: boolean }>(
      em,
      `with s as (
         select case when r.through = '-infinity'
                     then coalesce((select (min(created_at) at time zone 'UTC')::date from usage_events
                                     where app_id = r.app_id), $2::date)
                     else r.through end as start
           from usage_rollups r where r.app_id = $1 for update),
       e as (select start, greatest(start, least(start + $3::int, $2::date)) as "end" from s)
       -- the partial day: upTo's day, reached by this step, when upTo is past its midnight and past what is
       -- rolled up already (a run bounded earlier than the last one, by an open transaction, leaves it as it is)
       select start::text as start, "end"::text as end,
              "end" = $2::date and $4::timestamptz > $2::date::timestamp at time zone 'UTC'
                and ("end" > start or $4::timestamptz > (select usage_rolled_to(through, rolled_to) from usage_rollups
                                                        where app_id = $1)) as partial
         from e`,
      [appId, upTo.day, ROLLUP_CHUNK_DAYS, upTo.upTo],
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
    // Whole days, then the partial day's hours before upTo: each recomputed from the history (replacing what the
    // late rows just added, which the history holds too).
    const rollUp = (from: string, to: string) =>
      sql(
        em,
        `insert into usage_daily as d (app_id, account_id, day, entitlement_id, calls, amount)
         select $1::text, account_id, (created_at at time zone 'UTC')::date, entitlement_id, count(*), sum(amount)
           from usage_events
          where app_id = $1::text and created_at >= $2::timestamptz and created_at < $3::timestamptz
          group by 2, 3, 4
         on conflict (app_id, account_id, day, entitlement_id)
           do update set calls = excluded.calls, amount = excluded.amount`,
        [appId, from, to],
      );
    const midnight = (day: string) => `${day}T00:00:00Z`;
    let days = 0;
    if (state.end > state.start) {
      await rollUp(midnight(state.start), midnight(state.end));
      days = (Date.parse(state.end) - Date.parse(state.start)) / 86_400_000;
    }
    if (state.partial) await rollUp(midnight(state.end), upTo.upTo);
    // The app-wide table, recomputed for every day that changed.
    await sql(
      em,
      `insert into usage_daily_app as d (app_id, day, entitlement_id, calls, amount)
       select $1::text, day, entitlement_id, sum(calls), sum(amount) from usage_daily
        where app_id = $1 and ((day >= $2::date and day < $3::date) or day = any($4::date[]))
        group by 2, 3
       on conflict (app_id, day, entitlement_id) do update set calls = excluded.calls, amount = excluded.amount`,
      [
        appId,
        state.start,
        state.partial ? upTo.day : state.end,
        [...folded.days, ...(state.partial ? [upTo.day] : [])],
      ],
    );
    const [moved] = await sql<{ rolled_to: string }>(
      em,
      `update usage_rollups set through = $2::date, rolled_to = coalesce($3::timestamptz, rolled_to), updated_at = now()
        where app_id = $1
       returning to_char(usage_rolled_to(through, rolled_to) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
         as rolled_to`,
      [appId, state.end, state.partial ? upTo.upTo : state.end > state.start ? midnight(state.end) : null],
    );
    return { days, late: Number(folded.rows), through: state.end, rolledTo: moved.rolled_to };
  });
}

/**
 * Rolls usage up for every app: into daily totals from each app's `through` to the last closed day, and the
 * closed hours of the day after it (up to the start of the current hour); folds late rows in. Catches up after
 * any downtime (it starts where the last run stopped); stops after `budgetMs` with `done: false` so the workflow
 * can call it again. `before` (tests) stops earlier than the current hour; `appId` rolls up that app alone.
 */
export async function rollUpUsage(
  deps: Deps,
  opts: { budgetMs?: number; before?: Date; appId?: string } = {},
): Promise<UsageRollupResult> {
  const budgetMs = opts.budgetMs ?? 5 * 60_000;
  const started = Date.now();
  const em = deps.orm.em.fork();
  const upTo = await firstOpenHour(em, opts.before);
  const apps = await sql<{ app_id: string }>(
    em,
    // An app with no usage between its rolled-up instant and upTo is left where it is: its raw part is empty, so
    // reading it costs an index probe, and a run costs no transaction per idle app per hour.
    `select r.app_id from usage_rollups r
      where ($2::text is null or r.app_id = $2)
        and (exists (select 1 from usage_events u
                      where u.app_id = r.app_id and u.created_at >= usage_rolled_to(r.through, r.rolled_to)
                        and u.created_at < $1::timestamptz)
             or exists (select 1 from usage_rollup_late l where l.app_id = r.app_id))
      order by r.app_id`,
    [upTo.upTo, opts.appId ?? null],
  );
  const result: UsageRollupResult = {
    apps: 0,
    days: 0,
    lateRows: 0,
    through: upTo.day,
    rolledTo: upTo.upTo,
    done: true,
  };
  for (const { app_id } of apps) {
    let touched = false;
    for (;;) {
      if (Date.now() - started > budgetMs) return { ...result, done: false };
      const s = await step(deps, app_id, upTo);
      if (!s) break;
      touched ||= s.days > 0 || s.late > 0 || s.rolledTo === upTo.upTo;
      result.days += s.days;
      result.lateRows += s.late;
      if (s.through >= upTo.day) break;
    }
    if (touched) result.apps++;
  }
  return result;
}

/**
 * Creates the roll-up Schedule if it does not exist (idempotent; run at worker start): hourly at five
 * past, so an hour is in the roll-up within about an hour of its end; triggered once at creation, so a new
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
          'usage_daily_app), with the closed hours of the current day, and folds in usage recorded late for what ' +
          'is already rolled up.',
      },
    });
    deps.logger.info({ scheduleId: USAGE_ROLLUP_SCHEDULE_ID }, 'created the usage roll-up schedule');
  } catch (err) {
    if ((err as Error).name !== 'ScheduleAlreadyRunning') throw err;
  }
}
