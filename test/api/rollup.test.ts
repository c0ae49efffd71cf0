import { expect } from 'chai';
import pg from 'pg';
import type { z } from 'zod';
import * as analytics from '../../src/analytics/analytics.service.js';
import type * as S from '../../src/analytics/analytics.schemas.js';
import { INTERVALS, type Interval } from '../../src/analytics/analytics.schemas.js';
import { rollUpUsage } from '../../src/housekeeping/rollup.js';
import type { Ctx } from '../../src/context.js';
import { prepared, sql } from '../../src/db/sql.js';
import { loadApp } from '../../src/http/credentials.js';
import { iso } from '../../src/time.js';
import { USAGE_ROLLUP_SCHEDULE_ID, USAGE_ROLLUP_WORKFLOW_ID } from '../../workflows/shared.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const em = () => testEnv().deps.orm.em.fork();
const DAY = 86_400_000;

// ---- today's analytics, verbatim (before the roll-up), with the window's end pinned --------------------------

const WINDOW: Record<Interval, string | null> = {
  '7d': '7 days',
  '30d': '30 days',
  '60d': '60 days',
  '6m': '6 months',
  year: '1 year',
  alltime: null,
};
const BUCKET: Record<Interval, 'day' | 'week'> = {
  '7d': 'day',
  '30d': 'day',
  '60d': 'day',
  '6m': 'week',
  year: 'week',
  alltime: 'week',
};

async function legacyWindow(ctx: Ctx, interval: Interval, at: Date) {
  const [row] = await sql<{ now: Date; from: Date | null }>(
    ctx.em,
    `select $2::timestamptz as now, case when $1::text is null then null else $2::timestamptz - $1::interval end as from`,
    [WINDOW[interval], at],
  );
  return { interval, from: row.from, to: row.now };
}
type LegacyWindow = Awaited<ReturnType<typeof legacyWindow>>;
const legacyPresent = (w: LegacyWindow) => ({
  interval: w.interval,
  from: iso(w.from),
  to: iso(w.to)!,
});

/**
 * The queries as they were, each given its window (computed once per interval and instant rather than once per
 * query: the same statement, the same answer). They run as prepared statements, planned once per connection.
 */
const legacy = {
  async summary(ctx: Ctx, q: z.output<typeof S.summaryQuery>, w: LegacyWindow) {
    const rows = await prepared<{ id: string; name: string | null; calls: string; amount: string }>(
      ctx.em,
      'test_legacy_summary',
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
      ...legacyPresent(w),
      namespace: q.namespace ?? null,
      entitlements: rows.map((r) => ({ id: r.id, name: r.name, calls: Number(r.calls), amount: Number(r.amount) })),
    };
  },
  async topAccounts(ctx: Ctx, q: z.output<typeof S.topQuery>, w: LegacyWindow) {
    const rows = await prepared<{ account_id: string; calls: string; amount: string }>(
      ctx.em,
      'test_legacy_top',
      `select account_id, count(*) as calls, sum(amount) as amount from usage_events
        where app_id = $1 and ($2::timestamptz is null or created_at >= $2) and created_at <= $3 and ($4::text is null
          or entitlement_id = $4)
        group by account_id order by sum(amount) desc, count(*) desc, account_id limit $5`,
      [ctx.app.id, w.from, w.to, q.entitlement ?? null, q.limit],
    );
    return {
      ...legacyPresent(w),
      entitlement: q.entitlement ?? null,
      data: rows.map((r) => ({ account_id: r.account_id, calls: Number(r.calls), amount: Number(r.amount) })),
    };
  },
  async timeseries(ctx: Ctx, q: z.output<typeof S.timeseriesQuery>, w: LegacyWindow) {
    const bucket = BUCKET[q.interval];
    const filter = `app_id = $1 and ($4::text is null or account_id = $4) and ($5::text is null or entitlement_id = $5)`;
    const rows = await prepared<{ start: Date; calls: string; amount: string }>(
      ctx.em,
      'test_legacy_timeseries',
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
      ...legacyPresent(w),
      bucket,
      points: rows.map((r) => ({ start: iso(r.start)!, calls: Number(r.calls), amount: Number(r.amount) })),
    };
  },
};

// ---- the cases ---------------------------------------------------------------------------------------------

interface Query {
  name: string;
  interval: Interval;
  /**
   * Asked at the first instant only: what it adds to the other shapes does not depend on the window (see queries()).
   */
  once?: boolean;
  analytics: (ctx: Ctx, at: Date) => Promise<unknown>;
  legacy: (ctx: Ctx, w: LegacyWindow) => Promise<unknown>;
}

/**
 * Every query shape the analytics routes take, at every interval. Two are asked at one instant per call of
 * answers(), not at each: `top … 2` is, in both implementations, the first two rows of `top … 100` (three accounts,
 * ordered by amount, calls and account id: a total order) at every instant, so all it adds is that the limit is
 * applied, which no window changes; `summary … ghost` (an account with no usage) is empty at every instant, and the
 * account filter it goes through is checked at every instant by `summary … a1`, so all it adds is how an empty
 * answer reads.
 */
function queries(): Query[] {
  const out: Query[] = [];
  for (const interval of INTERVALS) {
    for (const namespace of [undefined, 'a1', 'ghost'])
      out.push({
        name: `summary ${interval} ${namespace ?? ''}`,
        interval,
        once: namespace === 'ghost',
        // anySize: the refusal of windows the roll-up has not reached (never at this size) has its own file,
        // test/api/analytics-unrolled.test.ts; the HTTP routes' test below still goes through it.
        analytics: (ctx, at) => analytics.summary(ctx, { interval, namespace }, at, true),
        legacy: (ctx, w) => legacy.summary(ctx, { interval, namespace }, w),
      });
    for (const [entitlement, limit] of [
      [undefined, 100],
      [undefined, 2],
      ['seats', 10],
    ] as const)
      out.push({
        name: `top ${interval} ${entitlement ?? ''} ${limit}`,
        interval,
        once: limit === 2,
        analytics: (ctx, at) => analytics.topAccounts(ctx, { interval, entitlement, limit }, at, true),
        legacy: (ctx, w) => legacy.topAccounts(ctx, { interval, entitlement, limit }, w),
      });
    for (const [namespace, entitlement] of [
      [undefined, undefined],
      ['a2', undefined],
      [undefined, 'api_calls'],
      ['a3', 'seats'],
    ])
      out.push({
        name: `timeseries ${interval} ${namespace ?? ''} ${entitlement ?? ''}`,
        interval,
        analytics: (ctx, at) => analytics.timeseries(ctx, { interval, namespace, entitlement }, at, true),
        legacy: (ctx, w) => legacy.timeseries(ctx, { interval, namespace, entitlement }, w),
      });
  }
  return out;
}

const HOUR = 3_600_000;
const hourStart = (t: Date | number) => Math.floor(new Date(t).getTime() / HOUR) * HOUR;
/** An instant and a millisecond either side. */
const around = (t: number) => [new Date(t - 1), new Date(t), new Date(t + 1)];

/**
 * Window ends around day boundaries (the last midnight, a millisecond either side), around the start of the current
 * hour (where the roll-up of the current day's closed hours ends), mid-day, in the past.
 */
function instants(now: Date): Date[] {
  const midnight = Math.floor(now.getTime() / DAY) * DAY;
  return [
    now,
    ...around(hourStart(now)),
    new Date(midnight),
    new Date(midnight + 1),
    new Date(midnight - 1),
    new Date(midnight - 10 * DAY + 45_296_789), // 12:34:56.789, ten days ago
    new Date(midnight - 30 * DAY),
    new Date(midnight - 200 * DAY + 3_600_000),
  ];
}

/**
 * Each query at each instant, by the implementation under test (`analytics`) or the oracle (`legacy`). An instant
 * given twice (the start of the current hour is a midnight from 00:00 to 00:59; a test's own bounds can fall on it)
 * is asked once: its answers have the same keys.
 */
async function answers(impl: typeof analytics | typeof legacy, app: TestApp, ats: Date[]) {
  const ctx: Ctx = { em: em(), deps: testEnv().deps, app: (await loadApp(em(), app.id))! };
  const out: Record<string, unknown> = {};
  const unique = [...new Set(ats.map((at) => at.getTime()))].map((t) => new Date(t));
  const usage = impl === legacy ? await usageOf(app.id) : '';
  for (const [i, at] of unique.entries()) {
    const windows = new Map<Interval, LegacyWindow>();
    for (const q of queries()) {
      if (i > 0 && q.once) continue;
      const key = `${at.toISOString()} ${q.name}`;
      if (impl === legacy) {
        const known = oracle.get(`${usage} ${key}`);
        if (known !== undefined) {
          out[key] = known;
          continue;
        }
        if (!windows.has(q.interval)) windows.set(q.interval, await legacyWindow(ctx, q.interval, at));
        oracle.set(`${usage} ${key}`, (out[key] = await q.legacy(ctx, windows.get(q.interval)!)));
      } else out[key] = await q.analytics(ctx, at);
    }
  }
  return out;
}

/**
 * deep.equal, with a shortcut for the usual case: answers whose JSON is the same (with undefined, NaN, the infinities
 * and -0 spelled out, which JSON would lose) are deep-equal. Comparing two sets of answers (some 20,000 objects) with
 * deep.equal took about 150 ms of CPU; it still says what differs when something does.
 */
function expectSame(actual: unknown, expected: unknown) {
  const json = (v: unknown) =>
    JSON.stringify(v, (_, x: unknown) =>
      x === undefined || (typeof x === 'number' && (!Number.isFinite(x) || Object.is(x, -0))) ? `\u0000${x}` : x,
    );
  if (json(actual) !== json(expected)) expect(actual).to.deep.equal(expected);
}

/**
 * The oracle's answers by what they read (the app's usage rows and entitlements, as `usageOf` says) and the query:
 * every test seeds the same usage (at the same `now`), and the roll-up never writes `usage_events`, so most tests ask
 * the oracle what an earlier one already asked it; a test that adds rows changes what `usageOf` says.
 */
const oracle = new Map<string, unknown>();

/** A digest of what the oracle reads of an app: its usage rows, and its entitlements' names in their order. */
async function usageOf(appId: string): Promise<string> {
  const [row] = await sql<{ digest: string }>(
    em(),
    `select md5(
       (select coalesce(string_agg(concat_ws('|', account_id, entitlement_id, amount, coalesce(count::text, '-'),
                                             created_at), ',' order by created_at, account_id, entitlement_id, amount,
                                   count), '')
          from usage_events where app_id = $1) || '/' ||
       (select coalesce(string_agg(concat_ws('|', id, coalesce(name, '-')), ',' order by seq, id), '')
          from entitlements where app_id = $1)) as digest`,
    [appId],
  );
  return row.digest;
}

const through = async (appId: string) =>
  (
    await sql<{ through: string }>(em(), `select through::text as through from usage_rollups where app_id = $1`, [
      appId,
    ])
  )[0].through;

/** Nothing rolled up for the app: what a scheduled run (at the worker's start, at five past) may have done, undone. */
async function resetRollup(appId: string) {
  await em().transactional(async (t) => {
    await sql(t, `select 1 from usage_rollups where app_id = $1 for update`, [appId]);
    for (const table of ['usage_daily', 'usage_daily_app', 'usage_rollup_late'])
      await sql(t, `delete from ${table} where app_id = $1`, [appId]);
    await sql(t, `update usage_rollups set through = '-infinity', rolled_to = '-infinity' where app_id = $1`, [appId]);
  });
}

/**
 * Runs `fn` with the roll-up Schedule paused and no run of it in flight, so that no scheduled run moves the roll-up
 * past a bound the test chose.
 */
async function withSchedulePaused<T>(fn: () => Promise<T>): Promise<T> {
  const schedule = testEnv().deps.temporal.client.schedule.getHandle(USAGE_ROLLUP_SCHEDULE_ID);
  await schedule.pause('a roll-up test bounds its runs');
  try {
    await eventually(async () => (await schedule.describe()).info.runningActions.length === 0);
    return await fn();
  } finally {
    await schedule.unpause();
  }
}

/**
 * Rolls the app up from scratch to a bound 90 minutes back (an hour more when that is a midnight), so a partial day
 * exists at any time of day (yesterday's, just after midnight).
 */
async function rollUpToPartialBound(appId: string) {
  const back = hourStart(Date.now() - 90 * 60_000);
  const bound = back % DAY === 0 ? back - HOUR : back;
  await resetRollup(appId);
  const r = await rollUpUsage(testEnv().deps, { before: new Date(bound + 59 * 60_000) });
  return { bound, r };
}

describe('daily usage roll-up', function () {
  this.timeout(240_000);
  let app: TestApp;
  // One `now` for the file: each test seeds its own app with the same usage, so the oracle's answers carry over.
  let now: Date;
  let ats: Date[];
  before(() => {
    now = new Date();
    ats = instants(now);
  });

  beforeEach(async () => {
    ({ app } = await seededApp({ accounts: ['a1', 'a2', 'a3'].map((id) => ({ id, plan: 'scale' })) }));
    // History over 420 days, with rows on each side of every midnight, and an entitlement deleted since.
    await sql(
      em(),
      `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
       select $1, 'a' || (1 + (d + k) % 3), (array['api_calls', 'seats', 'gone'])[1 + (d * 7 + k) % 3],
              ((d * 13 + k * 5) % 9) - 2, null,
              date_trunc('day', $2::timestamptz at time zone 'UTC') at time zone 'UTC' - make_interval(days => d)
                + (array[interval '0', interval '1 millisecond', interval '12 hours', interval '23:59:59.999'])[1 + k % 4]
         from generate_series(0, 420) d, generate_series(0, 5) k
        where d > 0 or k % 4 < 2`,
      [app.id, now],
    );
    // The last 26 hours: every 20 minutes, and a millisecond either side of each hour's start (never after now).
    await sql(
      em(),
      `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
       select $1, 'a' || (1 + m % 3), (array['api_calls', 'seats'])[1 + m % 2], 1 + m % 4, null, t
         from generate_series(0, 78) m,
              lateral (select date_trunc('hour', $2::timestamptz at time zone 'UTC') at time zone 'UTC'
                                - make_interval(mins => 20 * m) + make_interval(secs => j / 1000.0) as t
                         from unnest(case when m % 3 = 0 then array[-1, 0, 1] else array[0] end) j) x
        where t <= $2::timestamptz`,
      [app.id, now],
    );
  });

  it('answers before the roll-up are the same as the queries before the roll-up existed', async () => {
    // Nothing rolled up for this app (a scheduled run may have started it already).
    await resetRollup(app.id);
    expectSame(await answers(analytics, app, ats), await answers(legacy, app, ats));
  });

  it('answers after the roll-up are identical, at every interval, around day boundaries and in the past', async () => {
    const before = await answers(legacy, app, ats);
    const r = await rollUpUsage(testEnv().deps);
    expect(r.done).to.equal(true);
    expect(await through(app.id)).to.equal(r.through);
    expect(r.through).to.equal(new Date().toISOString().slice(0, 10));
    // The current day's closed hours too: up to the start of this hour (or of the hour an open transaction began).
    expect(Date.parse(r.rolledTo!)).to.be.within(hourStart(now) - HOUR, Date.now());
    const rows = await sql<{ n: string }>(em(), `select count(*) as n from usage_daily where app_id = $1`, [app.id]);
    expect(Number(rows[0].n)).to.be.greaterThan(300);
    expectSame(await answers(analytics, app, ats), before);
  });

  it('usage recorded late for a rolled-up day counts at once, and the next run folds it in', async () => {
    await rollUpUsage(testEnv().deps);
    // Batch ingest with timestamps in rolled-up days, and an import of old history.
    const ingested = await post(`/apps/${app.id}/usage/events`, app.api_key, {
      events: [
        {
          id: 'late-1',
          account: 'a1',
          entitlement: 'api_calls',
          amount: 7,
          timestamp: iso(new Date(ats[1].getTime() - 1)),
        },
        {
          id: 'late-2',
          account: 'a2',
          entitlement: 'seats',
          amount: 3,
          timestamp: iso(new Date(now.getTime() - 40 * DAY)),
        },
        {
          id: 'late-3',
          account: 'a3',
          entitlement: 'api_calls',
          amount: 5,
          timestamp: iso(new Date(now.getTime() - 300 * DAY)),
        },
        { id: 'today', account: 'a3', entitlement: 'api_calls', amount: 1 },
      ],
    });
    expect(ingested.status, ingested.text).to.equal(200);
    const imported = await post(`/apps/${app.id}/import`, testEnv().adminKey, {
      accounts: [],
      usage: [
        {
          account_id: 'a2',
          entitlement_id: 'api_calls',
          amount: 11,
          created_at: iso(new Date(now.getTime() - 5 * DAY)),
        },
      ],
    });
    expect(imported.status, imported.text).to.equal(201);
    const late = async () =>
      Number(
        (await sql<{ n: string }>(em(), `select count(*) as n from usage_rollup_late where app_id = $1`, [app.id]))[0]
          .n,
      );
    expect(await late()).to.equal(4);
    const want = await answers(legacy, app, ats);
    expectSame(await answers(analytics, app, ats), want);
    const r = await rollUpUsage(testEnv().deps);
    expect(r.lateRows).to.be.at.least(4);
    expect(await late()).to.equal(0);
    expectSame(await answers(analytics, app, ats), want);
  });

  it("the current day's closed hours: a partial day serves windows that cover it; late rows into it count", async () => {
    await withSchedulePaused(async () => {
      const { bound, r } = await rollUpToPartialBound(app.id);
      expect(r.rolledTo).to.equal(new Date(bound).toISOString().replace('.000', ''));
      const day = new Date(bound).toISOString().slice(0, 10);
      expect(await through(app.id)).to.equal(day);
      const [partial] = await sql<{ calls: string }>(
        em(),
        `select coalesce(sum(calls), 0) as calls from usage_daily_app where app_id = $1 and day = $2::date`,
        [app.id, day],
      );
      const [history] = await sql<{ calls: string }>(
        em(),
        `select count(*) as calls from usage_events
          where app_id = $1 and created_at >= $2::date::timestamp at time zone 'UTC' and created_at < $3`,
        [app.id, day, new Date(bound)],
      );
      expect(Number(partial.calls)).to.equal(Number(history.calls)).and.to.be.greaterThan(0);
      const at = [...ats, ...around(bound), ...around(bound + HOUR)];
      expectSame(await answers(analytics, app, at), await answers(legacy, app, at));

      // A row dated just before the bound is late (the partial day holds the hours before it); one just after is not.
      const lateRows = async () =>
        Number(
          (await sql<{ n: string }>(em(), `select count(*) as n from usage_rollup_late where app_id = $1`, [app.id]))[0]
            .n,
        );
      const ingested = await post(`/apps/${app.id}/usage/events`, app.api_key, {
        events: [
          { id: 'h-1', account: 'a1', entitlement: 'api_calls', amount: 4, timestamp: iso(new Date(bound - 1)) },
          { id: 'h+1', account: 'a2', entitlement: 'seats', amount: 6, timestamp: iso(new Date(bound + 1)) },
        ],
      });
      expect(ingested.status, ingested.text).to.equal(200);
      expect(await lateRows()).to.equal(1);
      const want = await answers(legacy, app, at);
      expectSame(await answers(analytics, app, at), want);

      // A run bounded earlier than what is rolled up folds the late row and leaves the partial day as it is.
      const earlier = await rollUpUsage(testEnv().deps, { before: new Date(bound - 2 * HOUR) });
      expect(earlier.lateRows).to.be.at.least(1);
      expect(await lateRows()).to.equal(0);
      expectSame(await answers(analytics, app, at), want);

      // The next unbounded run rolls up to the current hour, and answers stay the same.
      const next = await rollUpUsage(testEnv().deps);
      expect(Date.parse(next.rolledTo!)).to.be.greaterThan(bound);
      expectSame(await answers(analytics, app, at), want);
    });
  });

  it('a run moving past the time of a row still being written waits for its writer, and counts the row once', async () => {
    await withSchedulePaused(async () => {
      // A writer inserts a row dated 30 minutes after the roll-up's end, so not late, and stays open while a run moves
      // the roll-up past that row's time. The writer's lock on the app's roll-up row makes the run wait for its
      // commit, so the run's recompute sees the row; without it the row would be in neither the roll-up nor the late
      // rows.
      const { bound } = await rollUpToPartialBound(app.id);
      const writer = new pg.Client({ connectionString: testEnv().config.databaseUrl });
      await writer.connect();
      try {
        await writer.query('begin');
        await writer.query(
          `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
           values ($1, 'a1', 'api_calls', 1000, null, $2)`,
          [app.id, new Date(bound + 30 * 60_000)],
        );
        let finished = false;
        const run = rollUpUsage(testEnv().deps).then((r) => {
          finished = true;
          return r;
        });
        await new Promise((r) => setTimeout(r, 1000));
        expect(finished, 'the run waits for the writer').to.equal(false);
        await writer.query('commit');
        const r = await run;
        expect(Date.parse(r.rolledTo!)).to.be.greaterThan(bound + 30 * 60_000);
      } finally {
        await writer.end();
      }
      const lateRows = await sql<{ n: string }>(em(), `select count(*) as n from usage_rollup_late where app_id = $1`, [
        app.id,
      ]);
      expect(Number(lateRows[0].n)).to.equal(0);
      const at = [...ats, ...around(bound + 30 * 60_000)];
      expectSame(await answers(analytics, app, at), await answers(legacy, app, at));
    });
  });

  it('a run leaves an app with no usage since its last run where it is; its next usage moves it on', async () => {
    await withSchedulePaused(async () => {
      const { app: idle } = await seededApp();
      await createAccount(idle, { id: 'a1', plan: 'scale' });
      await sql(
        em(),
        `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
         select $1, 'a1', 'api_calls', 1 + g % 3, null, now() - interval '3 days' + make_interval(mins => g)
           from generate_series(1, 50) g`,
        [idle.id],
      );
      const { bound } = await rollUpToPartialBound(idle.id);
      const rolledTo = async () => {
        const [row] = await sql<{ e: Date | string }>(
          em(),
          `select usage_rolled_to(through, rolled_to) as e from usage_rollups where app_id = $1`,
          [idle.id],
        );
        return new Date(row.e).getTime();
      };
      expect(await rolledTo()).to.equal(bound);
      const at = [...ats, ...around(bound)];
      const want = await answers(legacy, idle, at);

      // Nothing since the bound: the next run does not touch the app, and its answers are the same.
      await rollUpUsage(testEnv().deps);
      expect(await rolledTo()).to.equal(bound);
      expectSame(await answers(analytics, idle, at), want);

      // A usage row after the bound (not late): the next run rolls the app up to the current hour.
      const ingested = await post(`/apps/${idle.id}/usage/events`, idle.api_key, {
        events: [
          { id: 'after', account: 'a1', entitlement: 'api_calls', amount: 2, timestamp: iso(new Date(bound + 1)) },
        ],
      });
      expect(ingested.status, ingested.text).to.equal(200);
      const next = await rollUpUsage(testEnv().deps);
      expect(await rolledTo())
        .to.equal(Date.parse(next.rolledTo!))
        .and.to.be.greaterThan(bound);
      expectSame(await answers(analytics, idle, at), await answers(legacy, idle, at));
    });
  });

  it('catches up after downtime: a roll-up 60 days behind serves what it has, then rolls up the rest', async () => {
    await rollUpUsage(testEnv().deps);
    const want = await answers(legacy, app, ats);
    // As if the schedule had not run for 60 days.
    await sql(em(), `delete from usage_daily where app_id = $1 and day >= (now() at time zone 'UTC')::date - 60`, [
      app.id,
    ]);
    await sql(em(), `delete from usage_daily_app where app_id = $1 and day >= (now() at time zone 'UTC')::date - 60`, [
      app.id,
    ]);
    await sql(em(), `update usage_rollups set through = (now() at time zone 'UTC')::date - 60 where app_id = $1`, [
      app.id,
    ]);
    expectSame(await answers(analytics, app, ats), want);
    const r = await rollUpUsage(testEnv().deps);
    expect(r.days).to.be.at.least(60);
    expect(await through(app.id)).to.equal(r.through);
    expectSame(await answers(analytics, app, ats), want);
    // Running again changes nothing.
    const again = await rollUpUsage(testEnv().deps);
    expect(again.days).to.equal(0);
    expectSame(await answers(analytics, app, ats), want);
  });

  it('the HTTP routes answer the same before and after the roll-up', async () => {
    const paths = [
      `/apps/${app.id}/analytics?interval=alltime`,
      `/apps/${app.id}/analytics?interval=30d&namespace=a1`,
      `/apps/${app.id}/analytics/top-namespaces?interval=year&limit=3`,
      `/apps/${app.id}/analytics/timeseries?interval=year&entitlement=api_calls`,
      `/apps/${app.id}/analytics/timeseries?interval=60d&namespace=a2`,
    ];
    const strip = (b: Record<string, unknown>) => ({ ...b, from: undefined, to: undefined });
    const before = [];
    for (const p of paths) before.push(strip((await get(p, app.api_key)).body));
    await rollUpUsage(testEnv().deps);
    const after = [];
    for (const p of paths) after.push(strip((await get(p, app.api_key)).body));
    expect(after).to.deep.equal(before);
  });

  it('a Temporal Schedule runs it: a meaningful id and summary, and a run rolls the app up', async () => {
    const client = testEnv().deps.temporal.client;
    const schedule = client.schedule.getHandle(USAGE_ROLLUP_SCHEDULE_ID);
    const desc = await schedule.describe();
    expect(desc.action.type).to.equal('startWorkflow');
    if (desc.action.type === 'startWorkflow') {
      expect(desc.action.workflowType).to.equal('usageRollupWorkflow');
      expect(desc.action.workflowId).to.equal(USAGE_ROLLUP_WORKFLOW_ID);
      expect(desc.action.staticSummary).to.equal('Roll usage history up into daily totals for analytics');
    }
    expect(desc.policies.overlap).to.equal('SKIP');
    const before = desc.info.recentActions.length;
    await schedule.trigger();
    await eventually(async () => (await schedule.describe()).info.recentActions.length > before);
    const latest = (await schedule.describe()).info.recentActions.at(-1)!;
    const handle = client.workflow.getHandle(
      latest.action.workflow.workflowId,
      latest.action.workflow.firstExecutionRunId,
    );
    const result = (await handle.result()) as { done: boolean; through: string };
    expect(result.done).to.equal(true);
    expect(await through(app.id)).to.equal(result.through);
    expect(await (await handle.describe()).staticSummary()).to.equal(
      'Roll usage history up into daily totals for analytics',
    );
  });
});
