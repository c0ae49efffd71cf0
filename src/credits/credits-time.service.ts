// Credits over time, run by the account actor at its dates on the app's clock (workflows/billing-rules.ts `timersOf`):
// the plan's grant each month (`credits_grant`) and the expiry of grants (`credits_expiry`), with the pool's rollover.
import type { EntityManager } from '@mikro-orm/postgresql';
import { addMonths } from '../apps/clock.js';
import type { Deps } from '../deps.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import { publishPending } from '../events/publish.js';
import { newId } from '../ids.js';
import { GRANT_SQL } from './credits.sql.js';

/**
 * The account's next credits dates ($1 app, $2 account): the earliest expiry of a live grant, and per pool its plan
 * grants (a limit above 0 on the account's plan) the end of the last plan period granted, or now when none was. A
 * per-entity pool's periods are the account's, shared by its entities: none is due while no entity is registered (a
 * date that granting nothing would never move).
 */
const DATES_SQL = `
select (select min(g.expires_at) from credit_grants g
          where g.app_id = $1 and g.account_id = $2 and g.remaining > 0 and g.expires_at is not null) as next_expiry,
       (select min(case when e.credit_per_entity then case
          when exists (select 1 from account_entities x where x.app_id = $1 and x.account_id = $2) then coalesce(
            (select max(g.expires_at) from credit_grants g where g.app_id = $1 and g.account_id = $2 and
               g.pool_id = pe.entitlement_id and g.entity_id <> '' and g.source = 'plan'),
            '-infinity'::timestamptz) end
        else coalesce(
          (select max(g.expires_at) from credit_grants g where g.app_id = $1 and g.account_id = $2 and
             g.pool_id = pe.entitlement_id and g.entity_id = '' and g.source = 'plan'),
          '-infinity'::timestamptz) end)
          from accounts a
          join plan_entitlements pe on pe.app_id = a.app_id and pe.plan_id = a.plan_id
          join entitlements e on e.app_id = pe.app_id and e.id = pe.entitlement_id and e.type = 'credits'
         where a.app_id = $1 and a.id = $2 and pe.max > 0) as next_grant`;

/** The account's credits dates for its actor's snapshot (null: none). `-infinity`: a plan grant is due now. */
export async function creditDates(
  em: EntityManager,
  appId: string,
  accountId: string,
  now: Date,
): Promise<{ nextGrantAt: string | null; nextExpiryAt: string | null }> {
  const [r] = await sql<{ next_expiry: Date | null; next_grant: Date | string | null }>(em, DATES_SQL, [
    appId,
    accountId,
  ]);
  const grant = r?.next_grant;
  const nextGrantAt =
    grant === null || grant === undefined
      ? null
      : grant === '-infinity' || !Number.isFinite(new Date(grant).getTime())
        ? now.toISOString()
        : new Date(grant).toISOString();
  return { nextGrantAt, nextExpiryAt: r?.next_expiry ? new Date(r.next_expiry).toISOString() : null };
}

/**
 * `credits_grant`: each pool the account's plan grants gets its grant for every period that began by `asOf` (app
 * time) and was not granted yet: the plan's limit, expiring at the period end (monthly, also on yearly plans). The
 * period key (its start) makes each period's grant happen once, whatever retries and replays do.
 */
export async function grantPlanCredits(deps: Deps, appId: string, accountId: string, asOf: string, workflowId: string) {
  const em = deps.orm.em.fork();
  const at = new Date(asOf);
  const pools = await sql<{ pool: string; max: string; last_end: Date | null; per_entity: boolean }>(
    em,
    `select pe.entitlement_id as pool, pe.max, e.credit_per_entity as per_entity,
            (select max(g.expires_at) from credit_grants g where g.app_id = a.app_id and g.account_id = a.id and
               g.pool_id = pe.entitlement_id and g.entity_id = '' and g.source = 'plan') as last_end
       from accounts a
       join plan_entitlements pe on pe.app_id = a.app_id and pe.plan_id = a.plan_id
       join entitlements e on e.app_id = pe.app_id and e.id = pe.entitlement_id and e.type = 'credits'
      where a.app_id = $1 and a.id = $2 and pe.max > 0`,
    [appId, accountId],
  );
  const events: string[] = [];
  for (const p of pools) {
    if (p.per_entity) {
      events.push(...(await grantEntityPeriods(em, appId, accountId, p.pool, Number(p.max), at, null, workflowId)));
      continue;
    }
    // The first period starts now; then each starts where the last ended. A clock moved far ahead is caught up
    // period by period (at most 24 at once; the next date carries on).
    let start = p.last_end ? new Date(p.last_end) : at;
    for (let n = 0; n < 24 && start.getTime() <= at.getTime(); n++) {
      const end = addMonths(start, 1);
      const [row] = await sql<{ events: string[] }>(em, GRANT_SQL, [
        appId,
        accountId,
        p.pool,
        Number(p.max),
        end.toISOString(),
        'plan',
        null,
        newId('creditGrant'),
        null,
        null,
        null,
        newId('event'),
        null,
        start.toISOString(),
        workflowId,
        '',
      ]);
      events.push(...(row?.events ?? []));
      start = end;
    }
  }
  if (events.length)
    await publishPending(deps, events).catch((err) =>
      deps.logger.warn({ err, events }, 'credits event publishing deferred to the relay'),
    );
}

/**
 * A per-entity pool's plan grants ($max a period each): the account's periods are shared by its entities (the first
 * starts when the first entity is registered, each next where the last ended), and every registered entity (or only
 * `only`) gets the period under way, once (its period key), then each period that began by `at`. An entity registered
 * mid-period gets that period's whole grant; deleted and registered again under the same id it gets nothing more
 * for the same period. Answers the events to publish.
 */
export async function grantEntityPeriods(
  em: EntityManager,
  appId: string,
  accountId: string,
  pool: string,
  max: number,
  at: Date,
  only: string | null,
  workflowId: string | null,
): Promise<string[]> {
  const entities = (
    await sql<{ id: string }>(
      em,
      `select id from account_entities where app_id = $1 and account_id = $2 and ($3::text is null or id = $3)
        order by id`,
      [appId, accountId, only],
    )
  ).map((r) => r.id);
  if (!entities.length) return [];
  const [cur] = await sql<{ period_key: string; expires_at: Date }>(
    em,
    `select period_key, expires_at from credit_grants
      where app_id = $1 and account_id = $2 and pool_id = $3 and entity_id <> '' and source = 'plan'
        and period_key is not null
      order by expires_at desc limit 1`,
    [appId, accountId, pool],
  );
  const periods: { start: string; end: Date }[] = [];
  if (cur && new Date(cur.expires_at).getTime() > at.getTime())
    periods.push({ start: cur.period_key, end: new Date(cur.expires_at) });
  let start = cur ? new Date(cur.expires_at) : at;
  for (let n = 0; n < 24 && start.getTime() <= at.getTime(); n++) {
    const end = addMonths(start, 1);
    periods.push({ start: start.toISOString(), end });
    start = end;
  }
  const events: string[] = [];
  for (const period of periods)
    for (const entity of entities) {
      const [row] = await sql<{ events: string[] }>(em, GRANT_SQL, [
        appId,
        accountId,
        pool,
        max,
        period.end.toISOString(),
        'plan',
        null,
        newId('creditGrant'),
        null,
        null,
        null,
        newId('event'),
        null,
        period.start,
        workflowId,
        entity,
      ]);
      events.push(...(row?.events ?? []));
    }
  return events;
}

/**
 * `credits_expiry`: per pool with a grant due by `asOf`, in one transaction that holds the pool's balance row: the
 * debits not yet taken from particular grants are taken (earliest-expiring first), then what is left of each due
 * grant expires (a ledger row, `credits.expired`), and a plan grant's unused credits roll over up to the pool's cap
 * into a `rollover` grant that lasts one more period.
 */
export async function expireCredits(deps: Deps, appId: string, accountId: string, asOf: string, workflowId: string) {
  const em = deps.orm.em.fork();
  const due = await sql<{ pool_id: string; entity_id: string }>(
    em,
    `select distinct pool_id, entity_id from credit_grants
      where app_id = $1 and account_id = $2 and remaining > 0 and expires_at <= $3`,
    [appId, accountId, asOf],
  );
  for (const key of due) {
    await inTransaction(deps, em, async (t) => {
      const params = [appId, accountId, key.pool_id, key.entity_id];
      // The lock first, in a statement of its own: the next statements' snapshots see every grant committed before.
      await sql(
        t.em,
        `select 1 from credit_balances where app_id = $1 and account_id = $2 and pool_id = $3 and entity_id = $4
         for update`,
        params,
      );
      await sql(t.em, SETTLE_SQL, params);
      const expired = await sql<{ id: string; remaining: string; source: string; expires_at: Date }>(
        t.em,
        `update credit_grants g set remaining = 0 from (
           select id, remaining from credit_grants where app_id = $1 and account_id = $2 and pool_id = $3 and
             entity_id = $4 and remaining > 0 and expires_at <= $5 for update) d
         where g.id = d.id returning g.id, d.remaining, g.source, g.expires_at`,
        [...params, asOf],
      );
      const total = expired.reduce((s, g) => s + Number(g.remaining), 0);
      const [bal] = await sql<{ balance: string; cap: string | null }>(
        t.em,
        `update credit_balances b set balance = b.balance - $5, updated_at = now()
           where app_id = $1 and account_id = $2 and pool_id = $3 and entity_id = $4
         returning b.balance, (select credit_rollover_cap from entitlements e where e.app_id = $1 and e.id = $3) as cap`,
        [...params, total],
      );
      for (const g of expired.filter((x) => Number(x.remaining) > 0))
        await sql(
          t.em,
          `insert into credit_ledger (app_id, account_id, pool_id, entity_id, grant_id, amount, kind, workflow_id)
           values ($1, $2, $3, $4, $5, $6, 'expiry', $7)`,
          [...params, g.id, -Number(g.remaining), workflowId],
        );
      const balance = Number(bal?.balance ?? 0);
      for (const g of expired)
        if (Number(g.remaining) > 0)
          t.emit(appId, 'credits.expired', {
            object: {
              account_id: accountId,
              entity: key.entity_id || null,
              pool: key.pool_id,
              grant: g.id,
              expired: Number(g.remaining),
              balance,
            },
          });
      // Rollover: a plan period's unused credits, up to the cap, into a grant that lasts one more period.
      const unusedPlan = expired.filter((g) => g.source === 'plan').reduce((s, g) => s + Number(g.remaining), 0);
      const cap = bal?.cap === null || bal?.cap === undefined ? null : Number(bal.cap);
      const keep = cap === null ? 0 : Math.min(cap, unusedPlan);
      if (keep > 0) {
        const periodEnd = expired.find((g) => g.source === 'plan')!.expires_at;
        const [row] = await sql<{ grant: { id: string } | null }>(t.em, GRANT_SQL, [
          appId,
          accountId,
          key.pool_id,
          keep,
          addMonths(new Date(periodEnd), 1).toISOString(),
          'rollover',
          `rolled over from the period that ended ${new Date(periodEnd).toISOString()}`,
          newId('creditGrant'),
          null,
          null,
          null,
          newId('event'),
          null,
          `rollover:${new Date(periodEnd).toISOString()}`,
          workflowId,
          key.entity_id,
        ]);
        void row;
      }
    });
  }
}

/**
 * Takes the pool's unallocated debits from its live grants, earliest-expiring first ($1 app, $2 account, $3 pool,
 * $4 entity). Run while the balance row is locked (by an earlier statement of the transaction).
 */
export const SETTLE_SQL = `
with g as (
  select id, remaining, sum(remaining) over (order by expires_at nulls last, created_at, id) as upto
  from credit_grants where app_id = $1 and account_id = $2 and pool_id = $3 and entity_id = $4 and remaining > 0
),
b as (select unallocated from credit_balances where app_id = $1 and account_id = $2 and pool_id = $3 and entity_id = $4),
take as (select g.id, least(g.remaining, greatest(0, b.unallocated - (g.upto - g.remaining))) as t from g, b),
spent as (
  update credit_grants x set remaining = x.remaining - take.t from take where x.id = take.id and take.t > 0
  returning take.t
)
update credit_balances set unallocated = unallocated - (select coalesce(sum(t), 0) from spent)
where app_id = $1 and account_id = $2 and pool_id = $3 and entity_id = $4`;
