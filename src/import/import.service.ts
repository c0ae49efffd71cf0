import type { z } from 'zod';
import { usageRollupAppCommand } from '../analytics/analytics.service.js';
import { actorFact } from '../subscriptions/actor-facts.js';
import type { Ctx } from '../context.js';
import { longStatements, sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import { badRequest, conflict, missingReference } from '../errors.js';
import type { importBody } from './import.schemas.js';

type ImportInput = z.output<typeof importBody>;

/**
 * Backdated accounts and usage in one transaction, validated as a whole first: the first bad row is
 * a 400 naming it and nothing is written. Imported usage goes into the history and the counters
 * (no limit checks: it already happened). No events and no webhooks; incentive expiries are scheduled, and so is a
 * run of the app's analytics roll-up when usage came in.
 */
export async function importData(ctx: Ctx, input: ImportInput) {
  const result = await importRows(ctx, input);
  await analyzeGrown(ctx, {
    accounts: input.accounts.length,
    usage_counters: new Set(input.usage.map((u) => `${u.account_id}\u0000${u.entitlement_id}`)).size,
  });
  return result;
}

/**
 * After a bulk load, statistics (as PostgreSQL's manual advises): a table the import grew past autovacuum's own
 * threshold (50 rows and 10% of what the planner believes it holds), by at least 1,000 rows, is analysed at once
 * rather than in autovacuum's next round, up to a minute later. Until then the lookups by key that follow (usage,
 * effective access, batch ingest) are planned for the table's old size: right after importing 1,000 accounts into
 * a table never analysed, each lookup of an account used the app's plan index and scanned the app's accounts
 * (a 500-event batch took 110 ms instead of 57). The import is committed by then: a failure here is only logged.
 */
async function analyzeGrown(ctx: Ctx, grown: Record<'accounts' | 'usage_counters', number>) {
  const tables = Object.entries(grown).filter(([, n]) => n >= 1000);
  if (!tables.length) return;
  try {
    const known = await sql<{ relname: string; reltuples: number }>(
      ctx.em,
      `select relname, reltuples from pg_class where relnamespace = current_schema()::regnamespace and relname = any($1)`,
      [tables.map(([name]) => name)],
    );
    for (const [name, n] of tables) {
      const reltuples = Number(known.find((k) => k.relname === name)?.reltuples ?? -1);
      if (reltuples < 0 || n > 50 + 0.1 * reltuples)
        await ctx.em.fork().transactional(async (em) => {
          await longStatements(em);
          await sql(em, `analyze ${name}`); // a name from the list above
        });
    }
  } catch (err) {
    ctx.deps.logger.warn({ err }, 'could not analyse the tables an import grew');
  }
}

function importRows(ctx: Ctx, input: ImportInput) {
  return inTransaction(ctx.deps, ctx.em, async (t) => {
    // Thousands of rows in a few statements: longer than a request's statement may take.
    await longStatements(t.em);
    const appId = ctx.app.id;
    const ids = (rows: { id: string }[]) => new Set(rows.map((r) => r.id));
    const [plans, incentives, entitlements, freePlan] = await Promise.all([
      sql<{ id: string }>(t.em, 'select id from plans where app_id = $1', [appId]).then(ids),
      sql<{ id: string }>(t.em, 'select id from incentives where app_id = $1', [appId]).then(ids),
      sql<{ id: string; type: string }>(t.em, 'select id, type from entitlements where app_id = $1', [appId]).then(
        (r) => new Map(r.map((e) => [e.id, e.type])),
      ),
      sql<{ id: string }>(t.em, 'select id from plans where app_id = $1 and is_free order by seq limit 1', [
        appId,
      ]).then((r) => r[0]?.id ?? null),
    ]);
    const importedIds = input.accounts.map((a) => a.id);
    const usageIds = [...new Set(input.usage.map((u) => u.account_id))];
    const existing = new Set(
      (
        await sql<{ id: string }>(t.em, 'select id from accounts where app_id = $1 and id = any($2::text[])', [
          appId,
          [...new Set([...importedIds, ...usageIds])],
        ])
      ).map((r) => r.id),
    );

    const seen = new Map<string, number>();
    const accounts = input.accounts.map((a, i) => {
      const row = `accounts.${i}`;
      if (seen.has(a.id)) throw badRequest(`${row}.id: duplicate of accounts.${seen.get(a.id)}`);
      seen.set(a.id, i);
      if (existing.has(a.id)) throw conflict(`${row}.id: account ${a.id} already exists`);
      const plan = a.plan ?? freePlan;
      if (!plan) throw badRequest(`${row}.plan: is required (the app has no free plan to default to)`);
      if (!plans.has(plan)) throw missingReference(`${row}.plan: plan ${plan} does not exist`);
      if (a.incentive && !incentives.has(a.incentive))
        throw missingReference(`${row}.incentive: incentive ${a.incentive} does not exist`);
      if (a.incentive_expires_at && !a.incentive) throw badRequest(`${row}.incentive_expires_at: needs an incentive`);
      return { ...a, plan };
    });
    input.usage.forEach((u, i) => {
      const row = `usage.${i}`;
      if (!seen.has(u.account_id) && !existing.has(u.account_id))
        throw missingReference(`${row}.account_id: account ${u.account_id} does not exist`);
      const type = entitlements.get(u.entitlement_id);
      if (!type) throw missingReference(`${row}.entitlement_id: entitlement ${u.entitlement_id} does not exist`);
      if (type !== 'usage') throw badRequest(`${row}.entitlement_id: ${u.entitlement_id} is a boolean entitlement`);
    });

    if (accounts.length) {
      await sql(
        t.em,
        `insert into accounts (app_id, id, name, plan_id, incentive_id, incentive_expires_at, created_at, updated_at)
         select $1, a.id, a.name, a.plan, a.incentive, a.expires, coalesce(a.created, now()), now()
           from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[]) as a(id,
             name, plan, incentive, expires, created)`,
        [
          appId,
          accounts.map((a) => a.id),
          accounts.map((a) => a.name ?? null),
          accounts.map((a) => a.plan),
          accounts.map((a) => a.incentive ?? null),
          accounts.map((a) => (a.incentive ? (a.incentive_expires_at ?? null) : null)),
          accounts.map((a) => a.created_at ?? null),
        ],
      );
      for (const a of accounts) {
        if (a.incentive && a.incentive_expires_at) t.temporal(actorFact(appId, a.id, { kind: 'account_changed' }));
      }
    }
    if (input.usage.length) {
      const cols = [
        input.usage.map((u) => u.account_id),
        input.usage.map((u) => u.entitlement_id),
        input.usage.map((u) => u.amount),
        input.usage.map((u) => u.created_at),
      ];
      await sql(
        t.em,
        `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
         select $1, u.account, u.entitlement, u.amount, null, u.created
           from unnest($2::text[], $3::text[], $4::bigint[], $5::timestamptz[]) as u(account, entitlement, amount,
             created)`,
        [appId, ...cols],
      );
      await sql(
        t.em,
        `with totals as (
           select u.account, u.entitlement, sum(u.amount) as total
             from unnest($2::text[], $3::text[], $4::bigint[]) as u(account, entitlement, amount) group by 1, 2),
         ensured as (
           insert into usage_counters (app_id, account_id, entitlement_id, count, updated_at)
           select $1, account, entitlement, 0, now() from totals on conflict do nothing)
         select 1`,
        [appId, ...cols.slice(0, 3)],
      );
      await sql(
        t.em,
        `update usage_counters c set count = greatest(c.count + s.total, 0), updated_at = now()
           from (select u.account, u.entitlement, sum(u.amount) as total
                   from unnest($2::text[], $3::text[], $4::bigint[]) as u(account, entitlement, amount) group by 1, 2) s
          where c.app_id = $1 and c.account_id = s.account and c.entitlement_id = s.entitlement
            and c.entity_id = ''`,
        [appId, ...cols.slice(0, 3)],
      );
      // History past where the app's roll-up has reached (older than its normal lag of a few hours) is rolled up by
      // a run of its own now, not at the next hourly one: a year imported into a new app would otherwise be read row
      // by row by analytics requests until then. Rows older than that point were recorded as late rows, which
      // analytics read by day and the next run folds in.
      const [beyond] = await sql<{ beyond: boolean }>(
        t.em,
        `select exists (select 1 from unnest($2::timestamptz[]) as u(created) join usage_rollups r on r.app_id = $1
                          where u.created >= usage_rolled_to(r.through, r.rolled_to)
                            and u.created < now() - interval '3 hours') as beyond`,
        [appId, cols[3]],
      );
      if (beyond?.beyond) t.temporal(usageRollupAppCommand(appId));
    }
    return { accounts: accounts.length, usage_events: input.usage.length };
  });
}
