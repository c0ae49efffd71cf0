// The `analytics` section of `npm run bench`: analytics over a loaded history of usage rows, read whole, through
// HTTP before the roll-up (a 503 with Retry-After) and after it, with the answers compared.
import pg from 'pg';
import * as analytics from '../src/analytics/analytics.service.js';
import { rollUpUsage } from '../src/housekeeping/rollup.js';
import { longStatements } from '../src/db/sql.js';
import { usageRollupAppWorkflowId } from '../workflows/shared.js';
import type { Ctx } from '../src/context.js';
import { loadApp } from '../src/http/credentials.js';
import { createTestApp, seedCatalog } from '../test/helpers/factories.js';
import { testEnv } from '../test/helpers/servers.js';
import { fmt } from './load.js';

export const ANALYTICS_ROWS = Number(process.env.BENCH_ANALYTICS_ROWS ?? 10_000_000);
const ANALYTICS_TODAY = Number(process.env.BENCH_ANALYTICS_TODAY ?? 0);

/**
 * Analytics over ANALYTICS_ROWS usage rows (one app, 1,000 accounts, 2 entitlements, over 400 days), loaded
 * with one set-based statement as history the roll-up has not reached (a fresh import of a year). Each query is timed
 * three ways: the history read whole through the service (no roll-up, no statement bound: what a request would cost),
 * through HTTP on the shipped defaults before the roll-up (a window past ANALYTICS_UNROLLED_ROWS_MAX answers at once,
 * 503 with Retry-After, and starts the app's roll-up), and through HTTP once that roll-up has run.
 */
export async function analyticsBench(base: string, pool: pg.Pool) {
  // An app of its own: the other sections' usage (hundreds of thousands of rows dated today) would otherwise land in
  // the raw part of every window, and the figures would depend on which sections ran first.
  const app = await createTestApp('analytics');
  await seedCatalog(app);
  process.stdout.write(
    `\nAnalytics over ${ANALYTICS_ROWS.toLocaleString('en-US')} usage rows ` +
      '(one app of its own, 1,000 accounts, 2 entitlements, spread over 400 days):\n',
  );
  const t0 = Date.now();
  const client = await pool.connect();
  try {
    await client.query('begin');
    // Loaded as old history, straight into the table: the late-row trigger is off for the load (it would take
    // the app's roll-up row once per row), and the app's roll-up starts from scratch, so the run below rolls
    // all of it up.
    await client.query('alter table usage_events disable trigger usage_events_late');
    // Building the history's secondary indexes once after the load is far quicker than row by row.
    const indexes = (
      await client.query<{ name: string; def: string }>(
        `select indexname as name, indexdef as def from pg_indexes
          where schemaname = current_schema() and tablename = 'usage_events' and indexname <> 'usage_events_pkey'`,
      )
    ).rows;
    for (const i of indexes) await client.query(`drop index ${i.name}`);
    await client.query(
      `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
       select $1, 'acct-' || (g % 1000), case when g % 5 = 0 then 'seats' else 'api_calls' end, 1 + g % 3, null,
              now() - make_interval(secs => (g::double precision / $2) * 400 * 86400)
         from generate_series(1, $2) g`,
      [app.id, ANALYTICS_ROWS],
    );
    await client.query(`set local maintenance_work_mem = '512MB'`);
    // BENCH_ANALYTICS_TODAY more rows dated today, from midnight UTC to now (a busy day for the roll-up of hours).
    if (ANALYTICS_TODAY > 0)
      await client.query(
        `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
         select $1, 'acct-' || (g % 1000), case when g % 5 = 0 then 'seats' else 'api_calls' end, 1 + g % 3, null,
                date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'
                  + (now() - date_trunc('day', now() at time zone 'UTC') at time zone 'UTC') * (g::double precision / $2)
           from generate_series(1, $2) g`,
        [app.id, ANALYTICS_TODAY],
      );
    for (const i of indexes) await client.query(i.def);
    await client.query('alter table usage_events enable trigger usage_events_late');
    for (const table of ['usage_daily', 'usage_daily_app', 'usage_rollup_late'])
      await client.query(`delete from ${table} where app_id = $1`, [app.id]);
    await client.query(`update usage_rollups set through = '-infinity' where app_id = $1`, [app.id]);
    await client.query('commit');
  } catch (err) {
    await client.query('rollback');
    throw err;
  } finally {
    client.release();
  }
  await pool.query('vacuum analyze usage_events');
  // The roll-up holds closed days and the current day's closed hours: say how many rows are dated today, and (below)
  // how many the queries still read from the history itself.
  const today = await pool.query<{ n: string }>(
    `select count(*) as n from usage_events
      where app_id = $1 and created_at >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'`,
    [app.id],
  );
  process.stdout.write(
    `  (loaded in ${((Date.now() - t0) / 1000).toFixed(1)} s; ${Number(today.rows[0].n).toLocaleString('en-US')} ` +
      'of the rows are dated today, UTC)\n',
  );
  // Each query through HTTP (timed), and through the service with the window's end pinned, so the answers
  // before and after the roll-up can be compared exactly (through HTTP the window moves with the clock). The service
  // calls read whatever the size (`anySize`): the bench compares them, it does not answer a request.
  const ctx = async (): Promise<Ctx> => {
    const em = testEnv().deps.orm.em.fork();
    return { em, deps: testEnv().deps, app: (await loadApp(em, app.id))! };
  };
  const a = `/apps/${app.id}/analytics`;
  const queries: [string, string, ((at: Date, c: Ctx) => Promise<unknown>) | null][] = [
    ['summary 30d', `${a}?interval=30d`, (at, c) => analytics.summary(c, { interval: '30d' }, at, true)],
    ['summary alltime', `${a}?interval=alltime`, (at, c) => analytics.summary(c, { interval: 'alltime' }, at, true)],
    [
      'summary 30d, one account',
      `${a}?interval=30d&namespace=acct-7`,
      (at, c) => analytics.summary(c, { interval: '30d', namespace: 'acct-7' }, at, true),
    ],
    [
      'top accounts 30d',
      `${a}/top-namespaces?interval=30d&limit=10`,
      (at, c) => analytics.topAccounts(c, { interval: '30d', limit: 10 }, at, true),
    ],
    [
      'top accounts year',
      `${a}/top-namespaces?interval=year&limit=10`,
      (at, c) => analytics.topAccounts(c, { interval: 'year', limit: 10 }, at, true),
    ],
    [
      'timeseries 60d',
      `${a}/timeseries?interval=60d`,
      (at, c) => analytics.timeseries(c, { interval: '60d' }, at, true),
    ],
    [
      'timeseries year',
      `${a}/timeseries?interval=year&entitlement=api_calls`,
      (at, c) => analytics.timeseries(c, { interval: 'year', entitlement: 'api_calls' }, at, true),
    ],
    [
      'timeseries year, one account',
      `${a}/timeseries?interval=year&namespace=acct-7`,
      (at, c) => analytics.timeseries(c, { interval: 'year', namespace: 'acct-7' }, at, true),
    ],
    ['events (latest 50)', `${a}/events?namespace=acct-7`, null],
  ];
  const at = new Date();
  // The history read as it is, without the roll-up and without a request's statement bound (what a request would
  // cost if it did), through the service with the window's end pinned: also the answer the roll-up must give again.
  const raw = async (pinned: (at: Date, c: Ctx) => Promise<unknown>) => {
    const em = testEnv().deps.orm.em.fork();
    return em.transactional(async (t) => {
      await longStatements(t);
      const c: Ctx = { em: t, deps: testEnv().deps, app: (await loadApp(t, app.id))! };
      const s0 = process.hrtime.bigint();
      const answer = JSON.stringify(await pinned(at, c));
      return { ms: Number(process.hrtime.bigint() - s0) / 1e6, answer };
    });
  };
  const history: { ms: number; answer: string }[] = [];
  for (const [, , pinned] of queries) history.push(pinned ? await raw(pinned) : { ms: NaN, answer: '' });
  // Through HTTP on the shipped defaults: a window that would read more history than the roll-up has reached answers
  // at once, 503 with Retry-After (and starts the app's roll-up); the others answer from the history.
  const http = async () => {
    const out: { median: number; status: number; retryAfter: number | null; body: string }[] = [];
    for (const [, url] of queries) {
      const times: number[] = [];
      let last = { status: 0, retryAfter: null as number | null, body: '' };
      for (let i = 0; i < 5; i++) {
        const s0 = process.hrtime.bigint();
        const res = await fetch(base + url, { headers: { authorization: `Bearer ${app.api_key}` } });
        const body = await res.text();
        times.push(Number(process.hrtime.bigint() - s0) / 1e6);
        const ra = res.headers.get('retry-after');
        last = { status: res.status, retryAfter: ra === null ? null : Number(ra), body };
      }
      times.sort((x, y) => x - y);
      out.push({ median: times[2], ...last });
    }
    return out;
  };
  const refusedAt = Date.now();
  const before = await http();
  const refused = before.filter((b) => b.status === 503);
  const unexpected = before.find((b) => b.status !== 200 && b.status !== 503);
  if (unexpected) throw new Error(`analytics before the roll-up: ${unexpected.status} ${unexpected.body}`);
  // The roll-up: the app's own run, started by the first refusal (its Retry-After said when it would be done), or a
  // run called here when nothing was refused (a smaller history).
  const r0 = Date.now();
  let rollup: string;
  if (refused.length) {
    const run = testEnv().deps.temporal.client.workflow.getHandle(usageRollupAppWorkflowId(app.id));
    const result = (await run.result().catch((err: { cause?: { cause?: Error } }) => {
      throw new Error(`the app's roll-up failed: ${err.cause?.cause?.message ?? String(err)}`, { cause: err });
    })) as { days: number; rolledTo?: string };
    const said = Math.max(...refused.map((b) => b.retryAfter ?? 0));
    rollup =
      `the app's own run, started by the first 503: ${result.days} days and the hours before ${result.rolledTo}, ` +
      `done ${((Date.now() - refusedAt) / 1000).toFixed(1)} s after the first 503, whose Retry-After said ${said} s`;
  } else {
    const rolled = await rollUpUsage(testEnv().deps, { budgetMs: 60 * 60_000 });
    rollup = `a run over the whole history: ${rolled.days} days and the hours before ${rolled.rolledTo} in ${(
      (Date.now() - r0) /
      1000
    ).toFixed(1)} s`;
  }
  await pool.query('vacuum analyze usage_daily, usage_daily_app');
  const after = await http();
  const failed = after.find((b) => b.status !== 200);
  if (failed) throw new Error(`analytics after the roll-up: ${failed.status} ${failed.body}`);
  const pinnedAfter: string[] = [];
  for (const [, , pinned] of queries) pinnedAfter.push(pinned ? JSON.stringify(await pinned(at, await ctx())) : '');
  const rawRows = await pool.query<{ n: string }>(
    `select count(*) as n from usage_events u join usage_rollups r on r.app_id = u.app_id
      where u.app_id = $1 and u.created_at >= usage_rolled_to(r.through, r.rolled_to)`,
    [app.id],
  );
  process.stdout.write(
    `  roll-up: ${rollup}; ${Number(rawRows.rows[0].n).toLocaleString('en-US')} rows after it are read raw\n` +
      '  query (median of 5)                history read whole   HTTP before the roll-up        HTTP with roll-up' +
      '   same answer (window end pinned)\n',
  );
  queries.forEach(([name, , pinned], i) => {
    const b = before[i];
    const was =
      b.status === 503 ? `  503 in ${b.median.toFixed(1)} ms, Retry-After ${b.retryAfter}` : `${fmt(b.median, 1)} ms`;
    process.stdout.write(
      `  ${name.padEnd(34)} ${pinned ? `${fmt(history[i].ms, 1)} ms` : '        -   '}   ${was.padEnd(32)}` +
        `${fmt(after[i].median, 1)} ms   ${pinned ? (history[i].answer === pinnedAfter[i] ? 'yes' : 'NO') : '-'}\n`,
    );
  });
}
