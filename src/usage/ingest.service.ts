import { ACTIVE_EXTRA, ACTIVE_INCENTIVE } from '../access/access.service.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { notFound } from '../errors.js';
import { publishPending } from '../events/publish.js';

/** The most usage events one batch may carry. */
export const INGEST_MAX_EVENTS = 1000;

export interface IngestEvent {
  id: string;
  account: string;
  entitlement: string;
  amount: number;
  timestamp?: string;
  /** The entity under the account whose counter (a per-entity feature) or balance (a per-entity pool) moves. */
  entity?: string;
}

export interface IngestResult {
  id: string;
  status: 'applied' | 'blocked' | 'error';
  /** The counter after the event (applied), or what blocked it (blocked). */
  count: number | null;
  error: string | null;
  /** True when this event id was ingested before: the result is the first one, nothing changed. */
  duplicate: boolean;
}

interface Row {
  idx: number;
  event_id: string;
  status: IngestResult['status'];
  count: string | null;
  error: string | null;
  duplicate: boolean;
  events: string[];
}

/**
 * The limit of many (account, entitlement) pairs at once ($1 app, $2 accounts, $3 entitlements, paired by
 * position), as one row of arrays in the order given (the last two: whether the entitlement's counter and its pool's
 * balance are kept per entity): the set form of the single-event statement's
 * `LIMIT_CTES` (same layers, same fragments: an incentive's limit over an extra's over the plan's; an
 * entitlement on none of them is not entitled), each a lookup by key (`limit 1` keeps the planner from
 * turning them into joins it would plan from statistics a new app does not have yet). `usage_ingest_batch` runs it
 * once per batch.
 */
export const PAIR_LIMITS_SQL = `
select array_agg(p.account order by p.k), array_agg(p.entitlement order by p.k), array_agg(a.id is not null order by p.k),
       array_agg(e.type::text order by p.k), array_agg(e.name::text order by p.k),
       array_agg(e.overage_mode::text order by p.k),
       array_agg(coalesce(i.found or x.found or pl.found, false) order by p.k),
       array_agg(case when i.found then i.max when x.found then x.max else pl.max end order by p.k),
       array_agg(e.credit_pool_id::text order by p.k), array_agg(e.credit_cost order by p.k),
       array_agg(coalesce(e.usage_per_entity, false) order by p.k),
       array_agg(coalesce(pp.credit_per_entity, false) order by p.k)
  from unnest($2::text[], $3::text[]) with ordinality as p(account, entitlement, k)
  left join lateral (select * from accounts a where a.app_id = $1 and a.id = p.account limit 1) a on true
  left join lateral (select * from entitlements e where e.app_id = $1 and e.id = p.entitlement limit 1) e on true
  left join lateral (
    select pp.credit_per_entity from entitlements pp where pp.app_id = $1 and pp.id = e.credit_pool_id limit 1) pp
    on true
  left join lateral (
    select true as found, ie.max from incentive_entitlements ie
     where a.id is not null and ie.app_id = $1 and ie.entitlement_id = p.entitlement
       and ie.incentive_id = ${ACTIVE_INCENTIVE} limit 1) i on true
  left join lateral (
    select true as found, x.max from account_extras x
     where a.id is not null and x.app_id = $1 and x.account_id = p.account and x.kind = 'entitlement'
       and x.ref_id = p.entitlement and ${ACTIVE_EXTRA} limit 1) x on true
  left join lateral (
    select true as found, pe.max from plan_entitlements pe
     where pe.app_id = $1 and pe.plan_id = a.plan_id and pe.entitlement_id = p.entitlement limit 1) pl on true`;

/**
 * The database call a batch is: one statement, whatever the batch size (also run by the bench as its ceiling). It
 * first locks the app's row as a key check would (`FOR KEY SHARE`, once for the batch: the history and the ids keep
 * no foreign key, see Migration20261127090000), so a batch and the app's deletion do not interleave; no rows at all
 * means the app is gone.
 */
export const INGEST_SQL =
  'select r.* from (select id from apps where id = $1 for key share) a ' +
  'cross join lateral usage_ingest_batch(a.id, $2, $3, $4, $5, $6::timestamptz[], $7, $8) r order by r.idx';

export const ingestParams = (appId: string, events: IngestEvent[]) => [
  appId,
  events.map((e) => e.id),
  events.map((e) => e.account),
  events.map((e) => e.entitlement),
  events.map((e) => e.amount),
  events.map((e) => e.timestamp ?? null),
  events.map((e) => e.entity ?? ''),
  PAIR_LIMITS_SQL,
];

/**
 * Applies a batch of usage events in one round trip and a fixed number of statements: `usage_ingest_batch`
 * (a database function) claims the event ids, resolves the limits of the batch's counters at once, locks
 * the counters in (account, entitlement) order (so concurrent batches cannot deadlock), walks each
 * counter's events in the order sent with the single-event rules (blocking limits, counters stopping at 0,
 * threshold events), and writes counters, history, events and each id's outcome with one statement each
 * (a re-sent event answers its first result and changes nothing; the same batch sent twice at once rolls
 * one back and it runs again as duplicates). Threshold events it wrote are then fanned out (one more
 * round trip, when there are any).
 */
export async function ingestUsage(ctx: Ctx, all: IngestEvent[]): Promise<IngestResult[]> {
  if (!all.length) return [];
  // The entitlement that counts entities (the seats) moves only by registering and deleting entities: an event naming
  // it is an `error` of its own and never reaches the batch. Entities of per-entity features and pools are checked by
  // the batch itself, per event.
  const special = new Map(
    (
      await sql<{ id: string }>(ctx.em, `select e.id from entitlements e where e.app_id = $1 and e.counts_entities`, [
        ctx.app.id,
      ])
    ).map((r) => [
      r.id,
      `Entitlement ${r.id} counts the entities registered under the account; register or delete entities instead`,
    ]),
  );
  const events = special.size ? all.filter((e) => !special.has(e.entitlement)) : all;
  const refusedResult = (e: IngestEvent): IngestResult => ({
    id: e.id,
    status: 'error',
    count: null,
    error: special.get(e.entitlement)!,
    duplicate: false,
  });
  if (!events.length) return all.map(refusedResult);
  const run = async (attempt: number): Promise<Row[]> => {
    try {
      return await sql<Row>(ctx.em, INGEST_SQL, ingestParams(ctx.app.id, events));
    } catch (err) {
      const code = (err as { code?: string }).code;
      // Rolled back as a whole, so run it again: the same events sent twice at once (40001: the second sees the
      // first's ids now), a counter's account deleted mid-way (23503), a deadlock (40P01, not expected).
      if ((code === '40001' || code === '40P01' || code === '23503') && attempt < 4) return run(attempt + 1);
      throw err;
    }
  };
  const rows = await run(1);
  if (rows.length === 0 && events.length > 0) throw notFound('App');
  const fired = rows.flatMap((r) => r.events ?? []);
  if (fired.length)
    await publishPending(ctx.deps, fired).catch((err) =>
      ctx.deps.logger.warn({ err, events: fired }, 'usage event publishing deferred to the relay'),
    );
  const results = rows.map((r): IngestResult => ({
    id: r.event_id,
    status: r.status,
    count: r.count === null ? null : Number(r.count),
    error: r.error,
    duplicate: r.duplicate,
  }));
  if (events === all) return results;
  let next = 0;
  return all.map((e) => (special.has(e.entitlement) ? refusedResult(e) : results[next++]));
}
