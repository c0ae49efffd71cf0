import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { notFound } from '../http/errors.js';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import { Report, type IReport } from './analytics.entities.js';
import type * as S from './analytics.schemas.js';
import type { Interval } from './analytics.schemas.js';

/** Interval names to PostgreSQL intervals (calendar months and years for 6m and year); alltime has no start. */
const WINDOW: Record<Interval, string | null> = {
  '7d': '7 days',
  '30d': '30 days',
  '60d': '60 days',
  '6m': '6 months',
  year: '1 year',
  alltime: null,
};
/** Daily buckets up to 60 days, weekly (ISO weeks, Monday 00:00 UTC) beyond. */
const BUCKET: Record<Interval, 'day' | 'week'> = {
  '7d': 'day',
  '30d': 'day',
  '60d': 'day',
  '6m': 'week',
  year: 'week',
  alltime: 'week',
};

async function windowOf(ctx: Ctx, interval: Interval) {
  const w = WINDOW[interval];
  const [row] = await sql<{ now: Date; from: Date | null }>(
    ctx.em,
    `select now() as now, case when $1::text is null then null else now() - $1::interval end as from`,
    [w],
  );
  return { interval, from: row.from, to: row.now };
}

const present = (w: { interval: Interval; from: Date | null; to: Date }) => ({
  interval: w.interval,
  from: iso(w.from),
  to: iso(w.to)!,
});

/** Calls and total amount per entitlement in the window (optionally for one account). */
export async function summary(ctx: Ctx, q: z.output<typeof S.summaryQuery>) {
  const w = await windowOf(ctx, q.interval);
  const rows = await sql<{ id: string; name: string | null; calls: string; amount: string }>(
    ctx.em,
    `with agg as (
       select entitlement_id, count(*) as calls, sum(amount) as amount from usage_events
        where app_id = $1 and ($2::timestamptz is null or created_at >= $2) and created_at <= $3 and ($4::text is
          null or account_id = $4)
        group by entitlement_id)
     select agg.entitlement_id as id, e.name, agg.calls, agg.amount
       from agg left join entitlements e on e.app_id = $1 and e.id = agg.entitlement_id
      order by e.seq nulls last, agg.entitlement_id`,
    [ctx.app.id, w.from, w.to, q.namespace ?? null],
  );
  return {
    ...present(w),
    namespace: q.namespace ?? null,
    entitlements: rows.map((r) => ({ id: r.id, name: r.name, calls: Number(r.calls), amount: Number(r.amount) })),
  };
}

/** Accounts with the most usage (total amount, then calls) in the window. */
export async function topAccounts(ctx: Ctx, q: z.output<typeof S.topQuery>) {
  const w = await windowOf(ctx, q.interval);
  const rows = await sql<{ account_id: string; calls: string; amount: string }>(
    ctx.em,
    `select account_id, count(*) as calls, sum(amount) as amount from usage_events
      where app_id = $1 and ($2::timestamptz is null or created_at >= $2) and created_at <= $3 and ($4::text is null
        or entitlement_id = $4)
      group by account_id order by sum(amount) desc, count(*) desc, account_id limit $5`,
    [ctx.app.id, w.from, w.to, q.entitlement ?? null, q.limit],
  );
  return {
    ...present(w),
    entitlement: q.entitlement ?? null,
    data: rows.map((r) => ({ account_id: r.account_id, calls: Number(r.calls), amount: Number(r.amount) })),
  };
}

/** Calls and amount per bucket, every bucket present (zero when nothing happened). */
export async function timeseries(ctx: Ctx, q: z.output<typeof S.timeseriesQuery>) {
  const w = await windowOf(ctx, q.interval);
  const bucket = BUCKET[q.interval];
  const filter = `app_id = $1 and ($4::text is null or account_id = $4) and ($5::text is null or entitlement_id = $5)`;
  const rows = await sql<{ start: Date; calls: string; amount: string }>(
    ctx.em,
    `with bounds as (
       select date_trunc($6, coalesce($2::timestamptz, (select min(created_at) from usage_events where ${filter}),
         $3) at time zone 'UTC') as lo,
              date_trunc($6, $3::timestamptz at time zone 'UTC') as hi),
     series as (select generate_series(lo, hi, ('1 ' || $6)::interval) as start from bounds),
     agg as (
       select date_trunc($6, created_at at time zone 'UTC') as start, count(*) as calls, sum(amount) as amount from
         usage_events
        where ${filter} and ($2::timestamptz is null or created_at >= $2) and created_at <= $3 group by 1)
     select (s.start at time zone 'UTC') as start, coalesce(a.calls, 0) as calls, coalesce(a.amount, 0) as amount
       from series s left join agg a on a.start = s.start order by s.start`,
    [ctx.app.id, w.from, w.to, q.namespace ?? null, q.entitlement ?? null, bucket],
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

export function presentReport(r: IReport): z.input<typeof S.reportSchema> {
  return {
    id: r.id,
    name: r.name,
    entitlements: r.entitlements ?? null,
    interval: (r.interval ?? null) as Interval | null,
    created_at: iso(r.createdAt)!,
    updated_at: iso(r.updatedAt)!,
  };
}

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
