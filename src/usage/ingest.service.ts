import { ACTIVE_EXTRA, ACTIVE_INCENTIVE } from '../access/access.service.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { fanOutPending } from '../webhooks/webhooks.service.js';

/** The most usage events one batch may carry. */
export const INGEST_MAX_EVENTS = 1000;

export interface IngestEvent {
  id: string;
  account: string;
  entitlement: string;
  amount: number;
  timestamp?: string;
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
 * position), as one row of arrays in the order given: the set form of the single-event statement's
 * `LIMIT_CTES` (same layers, same fragments: an incentive's limit over an extra's over the plan's; an
 * entitlement on none of them is not entitled). `usage_ingest_batch` runs it once per batch.
 */
export const PAIR_LIMITS_SQL = `
select array_agg(p.account order by p.k), array_agg(p.entitlement order by p.k), array_agg(a.id is not null order by p.k),
       array_agg(e.type::text order by p.k), array_agg(e.name::text order by p.k),
       array_agg(e.overage_mode::text order by p.k), array_agg(coalesce(l.entitled, false) order by p.k),
       array_agg(l.max order by p.k)
  from unnest($2::text[], $3::text[]) with ordinality as p(account, entitlement, k)
  left join accounts a on a.app_id = $1 and a.id = p.account
  left join entitlements e on e.app_id = $1 and e.id = p.entitlement
  left join lateral (
    select count(*) > 0 as entitled, (array_agg(layers.max order by layers.layer desc))[1] as max from (
      select ie.max, 3 as layer from incentive_entitlements ie
       where ie.app_id = $1 and ie.entitlement_id = p.entitlement and ie.incentive_id = ${ACTIVE_INCENTIVE}
      union all
      select x.max, 2 from account_extras x where x.app_id = $1 and x.account_id = p.account and
        x.kind = 'entitlement' and x.ref_id = p.entitlement and ${ACTIVE_EXTRA}
      union all
      select pe.max, 1 from plan_entitlements pe where pe.app_id = $1 and pe.plan_id = a.plan_id and
        pe.entitlement_id = p.entitlement
    ) layers
  ) l on a.id is not null`;

/** The database call a batch is: one statement, whatever the batch size (also run by the bench as its ceiling). */
export const INGEST_SQL = 'select * from usage_ingest_batch($1, $2, $3, $4, $5, $6::timestamptz[], $7)';

export const ingestParams = (appId: string, events: IngestEvent[]) => [
  appId,
  events.map((e) => e.id),
  events.map((e) => e.account),
  events.map((e) => e.entitlement),
  events.map((e) => e.amount),
  events.map((e) => e.timestamp ?? null),
  PAIR_LIMITS_SQL,
];

/**
 * Applies a batch of usage events in one round trip and a fixed number of statements: `usage_ingest_batch`
 * (a database function) claims the event ids, resolves the limits of the batch's counters at once, locks
 * the counters in (account, entitlement) order (so concurrent batches cannot deadlock), walks each
 * counter's events in the order sent with the single-event rules (blocking limits, counters stopping at 0,
 * threshold events), and writes counters, history, events and each id's outcome with one statement each
 * (a re-sent event answers its first result and changes nothing). A counter row deleted mid-way (its
 * account removed) rolls the batch back and it runs again. Threshold events it wrote are then fanned out
 * (one more round trip, when there are any).
 */
export async function ingestUsage(ctx: Ctx, events: IngestEvent[]): Promise<IngestResult[]> {
  const run = async (attempt: number): Promise<Row[]> => {
    try {
      return await sql<Row>(ctx.em, INGEST_SQL, ingestParams(ctx.app.id, events));
    } catch (err) {
      const code = (err as { code?: string }).code;
      if ((code === '40P01' || code === '23503') && attempt < 4) return run(attempt + 1);
      throw err;
    }
  };
  const rows = await run(1);
  const fired = rows.flatMap((r) => r.events ?? []);
  if (fired.length)
    await fanOutPending(ctx.deps, fired).catch((err) =>
      ctx.deps.logger.warn({ err, events: fired }, 'usage event fan-out deferred to the relay'),
    );
  return rows.map((r) => ({
    id: r.event_id,
    status: r.status,
    count: r.count === null ? null : Number(r.count),
    error: r.error,
    duplicate: r.duplicate,
  }));
}
