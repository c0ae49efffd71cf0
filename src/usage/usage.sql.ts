// The usage change's SQL: the limit's layers (LIMIT_CTES), the pool a feature draws from (POOL_CTES), and the one
// statement that applies a change (CHANGE_SQL). Run by src/usage/usage.service.ts (and the reservations, the entities'
// seats, the bench); kept apart so the service reads as what it does.
import { ACTIVE_EXTRA, ACTIVE_INCENTIVE } from '../access/access.service.js';

/**
 * One usage change as ONE statement: resolve the account's limit for the entitlement through the
 * three layers, then a guarded upsert of the counter (`count + n <= limit` re-checked on the row
 * under its lock, so concurrent calls can never pass a blocking limit), then the history row.
 *
 * Params: $1 app, $2 account, $3 entitlement, $4 amount (negative subtracts; counters stop at 0, and
 * the history row records what was applied: a subtraction first locks the counter to read it, so
 * `amount` is the real change and the history sums to the counter; one that changes nothing, or meets
 * no counter, writes no row),
 * $5 and $6 the ids for a `usage.limit_warning` / `usage.limit_reached` event, $7 and $8 the request's
 * idempotency key digest and request hash (null without a key): the key and its 200 answer are written
 * by the statement that applies the change, with no ON CONFLICT, so a second use of the key aborts the
 * whole statement (its change included) with a unique violation, and the caller answers the stored
 * response. A retry can never count twice, and a crash cannot separate the change from its key.
 * $9 the time the history row records (null: now; batch ingest passes an event's own timestamp). An entitlement not on
 * the account's plan (nor its extras or incentive) has a limit of 0.
 *
 * Threshold events: when this change crosses 80% of the limit (or the limit itself) and an enabled
 * endpoint subscribes, the same statement writes the event (its object as `usageEventObject` builds
 * it), marked for fan-out; nothing is computed when no threshold is crossed. So a crash cannot lose
 * one, and the usage path pays nothing when nobody listens.
 */
/** The account, the entitlement and the layers of its limit ($1 app, $2 account, $3 entitlement). */
export const LIMIT_CTES = `acc as (
  select a.plan_id, ${ACTIVE_INCENTIVE} as incentive_id from accounts a where a.app_id = $1 and a.id = $2
),
ent as (select e.type, e.name, e.overage_mode, e.overage_offer_id, e.credit_pool_id, e.credit_cost, e.counts_entities,
    e.usage_per_entity
  from entitlements e where e.app_id = $1 and e.id = $3),
layers as (
  select ie.max, 3 as layer from incentive_entitlements ie join acc on ie.incentive_id = acc.incentive_id where
    ie.app_id = $1 and ie.entitlement_id = $3
  union all
  select x.max, 2 from account_extras x where x.app_id = $1 and x.account_id = $2 and x.kind = 'entitlement' and
    x.ref_id = $3 and ${ACTIVE_EXTRA}
  union all
  select pe.max, 1 from plan_entitlements pe join acc on pe.plan_id = acc.plan_id where pe.app_id = $1 and
    pe.entitlement_id = $3
)`;

/**
 * The credits pool a usage entitlement draws from, with the pool's limit through the same three layers (the credits a
 * plan grants per period; on a layer with `max` null, the pool is unlimited and nothing is debited). Empty for an
 * entitlement that draws nothing, so the plain usage path pays three index lookups that find nothing.
 */
export const POOL_CTES = `pool_layers as (
  select ie.max, 3 as layer from incentive_entitlements ie join acc on ie.incentive_id = acc.incentive_id, ent where
    ie.app_id = $1 and ie.entitlement_id = ent.credit_pool_id
  union all
  select x.max, 2 from account_extras x, ent where x.app_id = $1 and x.account_id = $2 and x.kind = 'entitlement' and
    x.ref_id = ent.credit_pool_id and ${ACTIVE_EXTRA}
  union all
  select pe.max, 1 from plan_entitlements pe join acc on pe.plan_id = acc.plan_id, ent where pe.app_id = $1 and
    pe.entitlement_id = ent.credit_pool_id
),
pool as (
  select ent.credit_pool_id as id, p.name, p.credit_per_entity as per_entity, ent.credit_cost as cost,
         ent.credit_cost * greatest($4::bigint, 0) as need,
         coalesce((select l.max is null from pool_layers l order by l.layer desc limit 1), false) as unlimited,
         (select l.max from pool_layers l order by l.layer desc limit 1) as granted
  from ent join entitlements p on p.app_id = $1 and p.id = ent.credit_pool_id
  where ent.type = 'usage'
)`;

/**
 * One usage change as ONE statement (see above), and for an entitlement that draws from a credits pool the debit in
 * the same statement: `debit` takes `amount x cost` from the pool's balance row only while `balance - held >= need`
 * (`held`: what open reservations hold, src/usage/reservations.service.ts)
 * (PostgreSQL re-checks that condition on the newest row after waiting for its lock, so concurrent draws can never
 * take it below zero; a CHECK holds it too), and only when the feature's own blocking limit lets the call count;
 * the counter moves only when the debit did (`up` reads `debit`, so it runs after it). Should the counter's guard
 * still refuse under its lock (a competing add of the same counter committed meanwhile), `race` fails the whole
 * statement (nothing of it applies) and the caller runs it again. Locks are taken in one order, the pool's balance
 * row before the counter (a refund locks the balance in `held_pool` before `cur` locks the counter), so a draw and a
 * refund cannot deadlock. A negative amount on a drawing entitlement refunds
 * what it took off the counter times the cost as a `refund` grant that does not expire. Every change is a ledger row;
 * which grants a debit spent is settled later, earliest-expiring first
 * (docs/decisions/0506-which-grants-a-debit-spent-is-settled-later-not-in-the.md).
 * `credits.low` (the balance fell under 10% of the pool's grant per period) and `credits.depleted` (it reached 0)
 * are written as the threshold events are.
 *
 * Params beyond the usage ones: $10 an event id for a credits event, $11 the request id (for the ledger), $12 the
 * id of a refund grant, $13 the entity ('' none): a per-entity feature (`usage_per_entity`) moves that entity's
 * counter (`who.cent`; the limit is the account's, applied to each entity's counter), and a feature drawing from a
 * per-entity pool draws from that entity's balance (`who.bent`), the entity registered under the account; `who`
 * refuses the call (nothing moves, `entity_refused` says why) when the feature or its pool needs an entity and none is
 * named, one is named for anything else, or it is not registered, and for the entitlement that counts entities (its
 * counter moves only by registering and deleting them).
 */
export const CHANGE_SQL = `
with ${LIMIT_CTES},
${POOL_CTES},
per as (
  select coalesce((select usage_per_entity from ent), false) as counter,
         exists (select 1 from pool where per_entity) as balance
),
who as (
  select case
    when coalesce((select counts_entities from ent), false) then 'counts_entities'
    when $13::text = '' then case when per.counter or per.balance then 'entity_required' end
    when not (per.counter or per.balance) then 'entity_not_taken'
    when not exists (select 1 from account_entities x where x.app_id = $1 and x.account_id = $2 and x.id = $13::text)
      then 'entity_unknown'
  end as refused,
  case when per.counter then $13::text else '' end as cent,
  case when per.balance then $13::text else '' end as bent
  from per
),
held_pool as (
  select 1 from credit_balances b, pool
  where $4::bigint < 0 and b.app_id = $1 and b.account_id = $2 and b.pool_id = pool.id and b.entity_id = (select bent from who)
  for update of b
),
cur as (
  select count from usage_counters where app_id = $1 and account_id = $2 and entitlement_id = $3
    and entity_id = (select cent from who) and $4::bigint < 0 and (select count(*) from held_pool) >= 0
  for update
),
snap as (
  select count + held as taken from usage_counters where app_id = $1 and account_id = $2 and entitlement_id = $3
    and entity_id = (select cent from who) and exists (select 1 from pool) and $4::bigint > 0
),
lim as (
  select exists (select 1 from layers) as entitled,
         (select max from layers order by layer desc limit 1) as max,
         coalesce((select overage_mode = 'block' from ent), false) and $4::bigint > 0 as blocking,
         (select count from cur) as old
),
gate as (
  select (select refused from who) is null and (not lim.blocking or (lim.entitled and (lim.max is null or
           coalesce((select taken from snap), 0) + $4::bigint <= lim.max))) as ok
  from lim
),
debit as (
  update credit_balances b set balance = b.balance - pool.need, unallocated = b.unallocated + pool.need,
         updated_at = now()
  from pool, gate
  where $4::bigint > 0 and not pool.unlimited and gate.ok
    and b.app_id = $1 and b.account_id = $2 and b.pool_id = pool.id and b.entity_id = (select bent from who)
    and b.balance - b.held >= pool.need
  returning b.balance + pool.need as prev, b.balance as balance
),
up as (
  insert into usage_counters as c (app_id, account_id, entitlement_id, entity_id, count, updated_at)
  select $1, $2, $3, (select cent from who), greatest($4::bigint, 0), now()
  from acc, ent, lim
  where ent.type = 'usage' and (select refused from who) is null
    and ($4::bigint >= 0 or lim.old is not null)
    and (not lim.blocking or (lim.entitled and (lim.max is null or $4::bigint <= lim.max)))
    and ($4::bigint <= 0 or not exists (select 1 from pool where not pool.unlimited) or exists (select 1 from debit))
  on conflict (app_id, account_id, entitlement_id, entity_id) do update
    set count = greatest(c.count + $4::bigint, 0), updated_at = now()
    where not (select blocking from lim)
       or ((select entitled from lim) and ((select max from lim) is null or
           c.count + c.held + $4::bigint <= (select max from lim)))
  returning c.count
),
applied as (
  select up.count, case when $4::bigint < 0 then up.count - lim.old else $4::bigint end as amount from up, lim
),
hist as (
  insert into usage_events (app_id, account_id, entitlement_id, entity_id, amount, count, created_at)
  select $1, $2, $3, (select cent from who), applied.amount, applied.count, coalesce($9::timestamptz, now())
  from applied
  where applied.amount <> 0
),
refund as (
  select pool.id, -applied.amount * pool.cost as credits from pool, applied
  where $4::bigint < 0 and applied.amount < 0 and not pool.unlimited
),
refund_balance as (
  insert into credit_balances as b (app_id, account_id, pool_id, entity_id, balance, updated_at)
  select $1, $2, refund.id, (select bent from who), refund.credits, now() from refund
  on conflict (app_id, account_id, pool_id, entity_id) do update set balance = b.balance + excluded.balance,
    updated_at = now()
  returning b.balance
),
refund_grant as (
  insert into credit_grants (id, app_id, account_id, pool_id, entity_id, amount, remaining, source, source_ref,
    created_at)
  select $12::text, $1, $2, refund.id, (select bent from who), refund.credits, refund.credits, 'refund', $3, now()
  from refund, refund_balance
),
ledger as (
  insert into credit_ledger (app_id, account_id, pool_id, entity_id, grant_id, amount, kind, feature, request_id,
    idempotency_key, created_at)
  select $1, $2, pool.id, (select bent from who), null, -pool.need, 'debit', $3, $11::text, $7::bytea, now()
  from debit, pool
  union all
  select $1, $2, refund.id, (select bent from who), $12::text, refund.credits, 'refund', $3, $11::text, $7::bytea, now()
  from refund, refund_balance
),
crossing as (
  select up.count as new, up.count - $4::bigint as prev, lim.max, ent.name as ename
  from up, lim, ent where $4::bigint > 0 and lim.entitled and lim.max > 0
),
marks as (
  select $5::text as id, 'usage.limit_warning' as type, c.* from crossing c where c.prev * 100 < c.max * 80 and c.new
    * 100 >= c.max * 80
  union all
  select $6::text, 'usage.limit_reached', c.* from crossing c where c.prev < c.max and c.new >= c.max
),
ev as (
  insert into events (id, app_id, type, data, created_at, fanout_pending)
  select m.id, $1, m.type,
         jsonb_build_object('object', jsonb_build_object('account_id', $2::text, 'entitlement_id', $3::text, 'entitlement_name', m.ename,
           'entity', nullif((select cent from who), ''), 'usage', m.new, 'max', m.max,
           'left', greatest(m.max - m.new, 0), 'percent', m.new * 100 / m.max)),
         now(), true
  from marks m
  where exists (select 1 from webhook_endpoints w where w.app_id = $1 and w.enabled
                  and (w.events @> '["*"]'::jsonb or w.events @> jsonb_build_array(m.type)))
  returning id
),
cmarks as (
  select case when d.balance = 0 then 'credits.depleted' else 'credits.low' end as type, d.prev, d.balance
  from debit d, pool
  where d.balance = 0 or (pool.granted > 0 and d.prev * 10 >= pool.granted and d.balance * 10 < pool.granted)
),
cev as (
  insert into events (id, app_id, type, data, created_at, fanout_pending)
  select $10::text, $1, m.type,
         jsonb_build_object('object', jsonb_build_object('account_id', $2::text, 'entity', nullif((select bent from who), ''),
           'pool', pool.id,
           'pool_name', pool.name, 'balance', m.balance, 'previous_balance', m.prev, 'granted_per_period',
           pool.granted, 'feature', $3::text)),
         now(), true
  from cmarks m, pool
  where exists (select 1 from webhook_endpoints w where w.app_id = $1 and w.enabled
                  and (w.events @> '["*"]'::jsonb or w.events @> jsonb_build_array(m.type)))
  returning id
),
idem as (
  insert into idempotency_keys (digest, app_id, request_hash, status, body)
  select $7::bytea, $1, $8::bytea, 200, jsonb_build_object('entitlement', $3::text, 'count', coalesce(up.count, 0))
  from acc, ent, lim left join up on true
  where $7::bytea is not null and ent.type = 'usage' and (select refused from who) is null
    and (up.count is not null or (lim.old is null and $4::bigint < 0))
)
select (select count(*) from acc) > 0 as account_exists,
       ent.type, ent.name, ent.overage_mode, ent.overage_offer_id,
       lim.entitled, lim.max, lim.blocking,
       case when ent.type = 'usage' and (select count(*) from acc) > 0 and $4::bigint < 0 and lim.old is null
              and (select refused from who) is null then 0
            else (select count from up) end as count,
       (select refused from who) as entity_refused, (select counter from per) as counter_per_entity,
       (select bent from who) as balance_entity,
       (select coalesce(array_agg(id), '{}') from ev) || (select coalesce(array_agg(id), '{}') from cev) as events,
       (select id from pool) as pool_id,
       (select not unlimited from pool) and $4::bigint > 0 and (select ok from gate) as credits_refused_if_blocked,
       case when exists (select 1 from debit) and not exists (select 1 from up)
            then (select ('credits_race:' || d.balance)::int from debit d) end as race
from lim left join ent on true`;

/** What CHANGE_SQL answers. */
export interface ChangeRow {
  account_exists: boolean;
  type: 'usage' | 'boolean' | 'credits' | null;
  name: string | null;
  overage_mode: 'allow' | 'block' | null;
  overage_offer_id: string | null;
  entitled: boolean;
  max: string | null;
  blocking: boolean;
  count: string | null;
  events: string[];
  /** The pool the entitlement draws from (null: none). */
  pool_id: string | null;
  /** A refusal (null count) is the pool's: it was not unlimited and the feature's own limit let the call count. */
  credits_refused_if_blocked: boolean | null;
  /** Why the entity (or its absence) refused the call; null when it did not. */
  entity_refused: 'counts_entities' | 'entity_required' | 'entity_not_taken' | 'entity_unknown' | null;
  /** The entitlement keeps one counter per entity (`per: "entity"`). */
  counter_per_entity: boolean | null;
  /** The balance a drawing feature's call names ('' the account's own). */
  balance_entity: string | null;
}
