import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { prepared, sql } from '../db/sql.js';
import { AppError, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import { Report } from './analytics.entities.js';
import type * as S from './analytics.schemas.js';
import type { Interval } from './analytics.schemas.js';
import { presentReport } from './analytics.present.js';
import { outboxStart, type TemporalCommand } from '../temporal/outbox.js';
import { usageRollupAppDef, usageRollupAppWorkflowId } from '../../workflows/shared.js';

/** Interval names to PostgreSQL intervals (calendar months and years for 6m and year); alltime has no start. */
export const WINDOW: Record<Interval, string | null> = {
  '7d': '7 days',
  '30d': '30 days',
  '60d': '60 days',
  '6m': '6 months',
  year: '1 year',
  alltime: null,
};
/** Daily buckets up to 60 days, weekly (ISO weeks, Monday 00:00 UTC) beyond. */
export const BUCKET: Record<Interval, 'day' | 'week'> = {
  '7d': 'day',
  '30d': 'day',
  '60d': 'day',
  '6m': 'week',
  year: 'week',
  alltime: 'week',
};

/**
 * A query's window and how it is read: whole UTC days inside the window that the roll-up covers (`[dayLo, dayHi)`,
 * when `rolled`) come from the roll-up tables (with the late rows recorded since the last run), the last of them
 * possibly a partial day (the roll-up's hours of its first open day, up to `rolled_to`); everything else in
 * `[from, to]` from `usage_events`, as two ranges: `[aLo, aHi)` before the rolled-up days and `[bLo, to]` after
 * them (without rolled-up days: `a` is empty and `b` is the window).
 */
interface Window {
  interval: Interval;
  from: Date | null;
  to: Date;
  rolled: boolean;
  dayLo: string;
  dayHi: string;
  aLo: Date | string;
  aHi: Date | string;
  bLo: Date | string;
}

/**
 * `at` pins the window's end (tests compare answers at chosen instants); otherwise it ends now. A prepared statement
 * (planned once per connection): planning it took about 1.3 ms of PostgreSQL's CPU, executing it 0.2.
 */
async function windowOf(ctx: Ctx, interval: Interval, at?: Date): Promise<Window> {
  const [row] = await prepared<{
    now: Date;
    from: Date | null;
    rolled: boolean;
    day_lo: string;
    day_hi: string;
    partial_to: Date | null;
  }>(
    ctx.em,
    'analytics_window',
    `with w as (
       select t, case when $1::text is null then null else t - $1::interval end as f
         from (select coalesce($3::timestamptz, now()) as t) x),
     r as (select through, usage_rolled_to(through, rolled_to) as e from usage_rollups where app_id = $2),
     d as (
       select w.*, r.through, r.e,
              -- the first whole day: the day the window starts on when it starts at midnight, else the next
              case when f is null then '-infinity'::date
                   when f = date_trunc('day', f at time zone 'UTC') at time zone 'UTC' then (f at time zone 'UTC')::date
                   else (f at time zone 'UTC')::date + 1 end as lo,
              -- whole days end before the window's last (partial) day, and only rolled-up days count
              least((t at time zone 'UTC')::date, coalesce(r.through, '-infinity'::date)) as hi
         from w left join r on true),
     p as (
       -- the roll-up's partial day (its hours before e) serves the window when the window covers all of it
       select d.*, (through = hi and e > hi::timestamp at time zone 'UTC' and t >= e and lo <= hi) as partial from d)
     select t as now, f as from, case when partial then hi + 1 else hi end > lo as rolled, lo::text as day_lo,
            (case when partial then hi + 1 else hi end)::text as day_hi, case when partial then e end as partial_to
       from p`,
    [WINDOW[interval], ctx.app.id, at ?? null],
  );
  const midnight = (day: string) => (day === '-infinity' ? day : `${day}T00:00:00Z`);
  const start = row.from ?? '-infinity';
  return {
    interval,
    from: row.from,
    to: row.now,
    rolled: row.rolled,
    dayLo: row.day_lo,
    dayHi: row.day_hi,
    aLo: start,
    aHi: row.rolled ? midnight(row.day_lo) : '-infinity',
    bLo: row.partial_to ?? (row.rolled ? midnight(row.day_hi) : start),
  };
}

/** How far behind the roll-up normally is: it runs hourly at five past, up to the start of that hour. */
const ROLLUP_LAG_MS = 3 * 3_600_000;
/** The roll-up's speed assumed when saying when a window is ready (measured 200,000+ rows a second, 2 cores). */
export const ROLLUP_ROWS_PER_SECOND = 100_000;

/** One app's roll-up, now (its workflow id keeps one run per app at a time; a finished one is run again). */
export function usageRollupAppCommand(appId: string): TemporalCommand {
  return outboxStart(
    usageRollupAppDef,
    usageRollupAppWorkflowId(appId),
    { appId },
    { onExisting: 'restart', summary: `Roll up the usage history of app ${appId} now` },
  );
}

/**
 * A window whose history the roll-up has not reached (a year imported minutes ago, ingest with past timestamps into a
 * new app, a roll-up that fell behind) would have every request read that history row by row, past its statement
 * bound: such a request is answered at once instead, 503 with `Retry-After` saying when the roll-up will have
 * reached it, and the app's roll-up is started if it is not running. Only history older than the roll-up's normal lag
 * counts (the current hours are always read raw), with the query's own filters: one account's history is usually
 * small enough to answer now. `anySize` (the bench, comparing answers) skips the check.
 */
async function refuseUnrolled(
  ctx: Ctx,
  w: Window,
  filter: { account: string | null; entitlement: string | null },
  anySize = false,
): Promise<void> {
  if (anySize) return;
  const upTo = new Date(new Date(w.to).getTime() - ROLLUP_LAG_MS);
  const from = w.bLo === '-infinity' ? -Infinity : new Date(w.bLo).getTime();
  if (from >= upTo.getTime()) return;
  // ANALYTICS_UNROLLED_ROWS_MAX (250,000): reading history costs about 0.3 µs a row for a summary and 1 µs for a time
  // series on the 2-core development machine (docs/benchmarks.md), well inside the 2 s bound even on a busy one.
  const max = ctx.deps.config.ANALYTICS_UNROLLED_ROWS_MAX;
  const [{ n }] = await sql<{ n: string }>(
    ctx.em,
    `select count(*) as n from (
       select 1 from usage_events
        where app_id = $1 and created_at >= $2 and created_at < $3
          and ($4::text is null or account_id = $4) and ($5::text is null or entitlement_id = $5)
        limit $6) x`,
    [ctx.app.id, w.bLo, upTo, filter.account, filter.entitlement, max],
  );
  if (Number(n) < max) return;
  // What the roll-up has left of this app's history: the planner's estimate (counting it would take as long as
  // reading it).
  const [state] = await sql<{ rolled_to: Date | null }>(
    ctx.em,
    `select nullif(usage_rolled_to(through, rolled_to), '-infinity') as rolled_to from usage_rollups where app_id = $1`,
    [ctx.app.id],
  );
  const [plan] = await sql<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>(
    ctx.em,
    `explain (format json) select 1 from usage_events
      where app_id = $1 and created_at >= $2 and created_at < date_trunc('hour', now())`,
    [ctx.app.id, state?.rolled_to ?? '-infinity'],
  );
  const left = Math.max(Number(n), Math.round(plan['QUERY PLAN'][0].Plan['Plan Rows']));
  // The app's own run, unless one is under way (an import started one): in the background, the answer does not wait.
  void ctx.deps.outbox
    .carryOut(usageRollupAppCommand(ctx.app.id))
    .catch((err: unknown) => ctx.deps.logger.warn({ err, appId: ctx.app.id }, 'could not start the roll-up'));
  const seconds = Math.min(3600, Math.max(10, Math.ceil(left / ROLLUP_ROWS_PER_SECOND) + 10));
  throw new AppError(
    503,
    `Not ready yet: this window covers about ${left.toLocaleString('en-US')} usage rows ` +
      `${state?.rolled_to ? `recorded since ${iso(state.rolled_to)}` : 'of history'} that the daily roll-up has not ` +
      `reached (history imported or ingested with past timestamps, or a roll-up that fell behind), more than a request ` +
      `reads from the history itself. The roll-up of this app is under way; ` +
      `retry in about ${seconds} seconds (one account's usage, \`namespace\`, answers now).`,
    undefined,
    { 'Retry-After': String(seconds) },
  );
}

const present = (w: Window) => ({
  interval: w.interval,
  from: iso(w.from),
  to: iso(w.to)!,
});

/**
 * The rows of one window as `(key, calls, amount)` from its three sources, to be summed by key: raw usage
 * in the two ranges, the roll-up's whole days, and late rows recorded for those days since the last run.
 * `key` is a SQL expression over `created_at` (raw) or `day` (roll-up and late rows) by `keyOf`; `filter`
 * narrows by account and entitlement (the caller's parameters, by number); `windowParams` gives $1..$8.
 */
function windowSql(
  keyOf: (source: 'raw' | 'day') => string,
  filter: { account: string | null; entitlement: string | null },
  byAccount: boolean,
): string {
  const where = [
    filter.account ? `account_id = ${filter.account}` : null,
    filter.entitlement ? `entitlement_id = ${filter.entitlement}` : null,
  ]
    .filter(Boolean)
    .map((c) => ` and ${c}`)
    .join('');
  const raw = keyOf('raw');
  const day = keyOf('day');
  // App-wide views read the app-level table (a row per day and entitlement) unless they group or filter by account.
  const daily = byAccount || filter.account ? 'usage_daily' : 'usage_daily_app';
  return `
    select ${raw} as k, count(*) as calls, sum(amount) as amount from usage_events
     where app_id = $1 and created_at >= $5 and created_at < $6${where} group by 1
    union all
    select ${raw}, count(*), sum(amount) from usage_events
     where app_id = $1 and created_at >= $7 and created_at <= $2${where} group by 1
    union all
    select ${day}, sum(calls), sum(amount) from ${daily}
     where $8 and app_id = $1 and day >= $3::date and day < $4::date${where} group by 1
    union all
    select ${day}, count(*), sum(amount) from usage_rollup_late
     where $8 and app_id = $1 and day >= $3::date and day < $4::date${where} group by 1`;
}

/** $1 app, $2 the window's end, $3 and $4 the roll-up's days, $5..$7 the raw ranges, $8 rolled. */
const windowParams = (ctx: Ctx, w: Window) => [ctx.app.id, w.to, w.dayLo, w.dayHi, w.aLo, w.aHi, w.bLo, w.rolled];

/** Calls and total amount per entitlement in the window (optionally for one account). */
export async function summary(ctx: Ctx, q: z.output<typeof S.summaryQuery>, at?: Date, anySize = false) {
  const w = await windowOf(ctx, q.interval, at);
  await refuseUnrolled(ctx, w, { account: q.namespace ?? null, entitlement: null }, anySize);
  const parts = windowSql(() => 'entitlement_id', { account: q.namespace ? '$9' : null, entitlement: null }, false);
  const rows = await sql<{ id: string; name: string | null; calls: string; amount: string }>(
    ctx.em,
    `with agg as (
       select k as entitlement_id, sum(calls) as calls, sum(amount) as amount from (${parts}) u
        group by k having sum(calls) > 0)
     select agg.entitlement_id as id, e.name, agg.calls, agg.amount
       from agg left join entitlements e on e.app_id = $1 and e.id = agg.entitlement_id
      order by e.seq nulls last, agg.entitlement_id`,
    [...windowParams(ctx, w), ...(q.namespace ? [q.namespace] : [])],
  );
  return {
    ...present(w),
    namespace: q.namespace ?? null,
    entitlements: rows.map((r) => ({ id: r.id, name: r.name, calls: Number(r.calls), amount: Number(r.amount) })),
  };
}

/** Accounts with the most usage (total amount, then calls) in the window. */
export async function topAccounts(ctx: Ctx, q: z.output<typeof S.topQuery>, at?: Date, anySize = false) {
  const w = await windowOf(ctx, q.interval, at);
  await refuseUnrolled(ctx, w, { account: null, entitlement: q.entitlement ?? null }, anySize);
  const parts = windowSql(() => 'account_id', { account: null, entitlement: q.entitlement ? '$10' : null }, true);
  const rows = await sql<{ account_id: string; calls: string; amount: string }>(
    ctx.em,
    `select k as account_id, sum(calls) as calls, sum(amount) as amount from (${parts}) u
      group by k order by sum(amount) desc, sum(calls) desc, k limit $9`,
    [...windowParams(ctx, w), q.limit, ...(q.entitlement ? [q.entitlement] : [])],
  );
  return {
    ...present(w),
    entitlement: q.entitlement ?? null,
    data: rows.map((r) => ({ account_id: r.account_id, calls: Number(r.calls), amount: Number(r.amount) })),
  };
}

/** Calls and amount per bucket, every bucket present (zero when nothing happened). */
export async function timeseries(ctx: Ctx, q: z.output<typeof S.timeseriesQuery>, at?: Date, anySize = false) {
  const w = await windowOf(ctx, q.interval, at);
  await refuseUnrolled(ctx, w, { account: q.namespace ?? null, entitlement: q.entitlement ?? null }, anySize);
  const bucket = BUCKET[q.interval];
  const parts = windowSql(
    (source) => (source === 'raw' ? `date_trunc($9, created_at at time zone 'UTC')` : `date_trunc($9, day::timestamp)`),
    { account: q.namespace ? '$11' : null, entitlement: q.entitlement ? '$12' : null },
    false,
  );
  const filter = `app_id = $1 and ($11::text is null or account_id = $11) and ($12::text is null or entitlement_id = $12)`;
  const rows = await sql<{ start: Date; calls: string; amount: string }>(
    ctx.em,
    `with bounds as (
       select date_trunc($9, coalesce($10::timestamptz, (select min(created_at) from usage_events where ${filter}),
         $2) at time zone 'UTC') as lo,
              date_trunc($9, $2::timestamptz at time zone 'UTC') as hi),
     series as (select generate_series(lo, hi, ('1 ' || $9)::interval) as start from bounds),
     agg as (select k as start, sum(calls) as calls, sum(amount) as amount from (${parts}) u group by k)
     select (s.start at time zone 'UTC') as start, coalesce(a.calls, 0) as calls, coalesce(a.amount, 0) as amount
       from series s left join agg a on a.start = s.start order by s.start`,
    [...windowParams(ctx, w), bucket, w.from, q.namespace ?? null, q.entitlement ?? null],
  );
  return {
    ...present(w),
    bucket,
    points: rows.map((r) => ({ start: iso(r.start)!, calls: Number(r.calls), amount: Number(r.amount) })),
  };
}

/** The usage history, newest first. */
export async function usageEvents(ctx: Ctx, q: z.output<typeof S.eventsQuery>) {
  const rows = await sql<{
    id: string;
    account_id: string;
    entitlement_id: string;
    amount: string;
    count: string | null;
    created_at: Date;
  }>(
    ctx.em,
    `select id, account_id, entitlement_id, amount, count, created_at from usage_events
      where app_id = $1 and ($2::text is null or account_id = $2) and ($3::text is null or entitlement_id = $3)
      order by created_at desc, id desc limit $4`,
    [ctx.app.id, q.namespace ?? null, q.entitlement ?? null, q.limit],
  );
  return {
    data: rows.map((r) => ({
      id: String(r.id),
      account_id: r.account_id,
      entitlement_id: r.entitlement_id,
      amount: Number(r.amount),
      count: r.count === null ? null : Number(r.count),
      created_at: iso(r.created_at)!,
    })),
  };
}

// ---- saved reports ------------------------------------------------------------------------------------

async function findReport(ctx: Ctx, id: string) {
  const r = await ctx.em.findOne(Report, { appId: ctx.app.id, id });
  if (!r) throw notFound(`Report ${id}`);
  return r;
}

export async function listReports(ctx: Ctx) {
  return (await ctx.em.find(Report, { appId: ctx.app.id }, { orderBy: { createdAt: 'asc', id: 'asc' } })).map(
    presentReport,
  );
}
export async function getReport(ctx: Ctx, id: string) {
  return presentReport(await findReport(ctx, id));
}
export async function createReport(ctx: Ctx, input: z.output<typeof S.createReportBody>) {
  const r = ctx.em.create(Report, {
    id: newId('report'),
    appId: ctx.app.id,
    name: input.name,
    entitlements: input.entitlements ?? null,
    interval: input.interval ?? null,
  });
  await ctx.em.flush();
  return presentReport(r);
}
export async function updateReport(ctx: Ctx, id: string, input: z.output<typeof S.updateReportBody>) {
  const r = await findReport(ctx, id);
  if (input.name !== undefined) r.name = input.name;
  if (input.entitlements !== undefined) r.entitlements = input.entitlements;
  if (input.interval !== undefined) r.interval = input.interval;
  await ctx.em.flush();
  return presentReport(r);
}
export async function deleteReport(ctx: Ctx, id: string) {
  const r = await findReport(ctx, id);
  await ctx.em.nativeDelete(Report, { appId: ctx.app.id, id });
  return presentReport(r);
}
