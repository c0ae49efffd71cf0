// The credits statements off the hot path (the debit itself is in CHANGE_SQL, src/usage/usage.service.ts).
//
// How grants and debits meet
// (docs/decisions/0505-the-debit-is-one-guarded-update-of-the-pools-balance-row.md): a pool's balance row (`credit_balances`) is the one
// row every writer locks. The hot path's debit moves only that row: `balance` down, `unallocated` up. Which grants a
// debit spent is decided later, under the same lock, earliest-expiring first ("settling"), whenever the grants' own
// remainders matter: before an expiry, a reversal at the provider. Reads show each grant's remainder as settling
// would leave it. So `balance = sum(remaining of the live grants) - unallocated` holds after every statement.

/** ISO 8601 with milliseconds in UTC, as `to_char` writes it. */
export const ISO = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';
const iso = (col: string) => `to_char(${col} at time zone 'UTC', '${ISO}')`;

/**
 * Each live grant of the account's pools with its remainder after settling ($1 app, $2 account, $3 one entity's
 * only, or null for all): the pool's
 * `unallocated` debits taken from its grants in expiry order (no expiry last), oldest first among equals.
 */
export const GRANTS_SQL = `
with g as (
  select g.*, b.unallocated, b.balance,
         sum(g.remaining) over (partition by g.pool_id, g.entity_id order by g.expires_at nulls last, g.created_at, g.id)
           as upto
  from credit_grants g
  join credit_balances b on b.app_id = g.app_id and b.account_id = g.account_id and b.pool_id = g.pool_id and
    b.entity_id = g.entity_id
  where g.app_id = $1 and g.account_id = $2 and g.remaining > 0 and ($3::text is null or g.entity_id = $3::text)
)
select g.id, g.pool_id as pool, g.entity_id as entity, g.amount, g.balance,
       g.remaining - least(g.remaining, greatest(0, g.unallocated - (g.upto - g.remaining))) as remaining,
       ${iso('g.expires_at')} as expires_at, g.source, g.reason, ${iso('g.created_at')} as created_at
from g
order by g.pool_id, g.entity_id, g.expires_at nulls last, g.created_at, g.id`;

/**
 * A grant in one statement: the grant, its pool's balance (created at the first grant), its ledger row, with a key
 * the idempotency key and this answer, and `credits.granted` when an endpoint listens.
 * $1 app, $2 account, $3 pool, $4 amount, $5 expires_at, $6 source, $7 reason, $8 grant id, $9 request id,
 * $10 and $11 the idempotency key's digest and request hash (null without a key), $12 an event id, $13 source_ref,
 * $14 period_key (a plan's grant for one period: a second one for the same period grants nothing), $15 workflow id,
 * $16 the entity ('' the account's own): a per-entity pool grants only to an entity registered under the account, a
 * per-account pool only to '' (else nothing is written and `per_entity` / `entity_exists` say why).
 * The balance row is written after the grant (it reads the grant's RETURNING), and both are checked against each
 * other at the end of the statement (the grant's foreign key).
 */
export const GRANT_SQL = `
with acc as (select 1 from accounts where app_id = $1 and id = $2),
pool as (select type, credit_per_entity as per_entity from entitlements where app_id = $1 and id = $3),
who as (
  select exists (select 1 from account_entities x where x.app_id = $1 and x.account_id = $2 and x.id = $16::text)
    as entity_exists
),
g as (
  insert into credit_grants (id, app_id, account_id, pool_id, entity_id, amount, remaining, expires_at, source,
    source_ref, reason, period_key, created_at)
  select $8::text, $1, $2, $3, $16::text, $4::bigint, $4::bigint, $5::timestamptz, $6::text, $13::text, $7::text,
    $14::text, now()
  from acc, pool, who where pool.type = 'credits'
    and case when pool.per_entity then who.entity_exists else $16::text = '' end
  on conflict (app_id, account_id, pool_id, entity_id, period_key) where period_key is not null do nothing
  returning *
),
bal as (
  insert into credit_balances as b (app_id, account_id, pool_id, entity_id, balance, updated_at)
  select $1, $2, $3, $16::text, g.amount, now() from g
  on conflict (app_id, account_id, pool_id, entity_id) do update set balance = b.balance + excluded.balance,
    updated_at = now()
  returning b.balance
),
ledger as (
  insert into credit_ledger (app_id, account_id, pool_id, entity_id, grant_id, amount, kind, request_id,
    idempotency_key, workflow_id, ref, created_at)
  select $1, $2, $3, $16::text, g.id, g.amount, case when $6::text = 'pack' then 'topup' else 'grant' end, $9::text,
    $10::bytea, $15::text, case when $6::text = 'pack' then $13::text end, now()
  from g, bal
),
answer as (
  select jsonb_build_object('id', g.id, 'pool', g.pool_id, 'entity', nullif(g.entity_id, ''), 'amount', g.amount,
           'remaining', g.remaining,
           'expires_at', ${iso('g.expires_at')}, 'source', g.source, 'reason', g.reason,
           'created_at', ${iso('g.created_at')}, 'balance', bal.balance) as body
  from g, bal
),
idem as (
  insert into idempotency_keys (digest, app_id, request_hash, status, body)
  select $10::bytea, $1, $11::bytea, 201, answer.body from answer where $10::bytea is not null
),
ev as (
  insert into events (id, app_id, type, data, created_at, fanout_pending)
  select $12::text, $1, 'credits.granted',
         jsonb_build_object('object', jsonb_build_object('account_id', $2::text, 'entity', nullif($16::text, ''),
           'pool', g.pool_id,
           'grant', answer.body - 'balance', 'balance', bal.balance)), now(), true
  from g, bal, answer
  where exists (select 1 from webhook_endpoints w where w.app_id = $1 and w.enabled
                  and (w.events @> '["*"]'::jsonb or w.events @> '["credits.granted"]'::jsonb))
  returning id
)
select exists (select 1 from acc) as account_exists, (select type from pool) as pool_type,
       (select per_entity from pool) as per_entity, (select entity_exists from who) as entity_exists,
       (select jsonb_build_object('id', g.id, 'pool', g.pool_id, 'entity', g.entity_id, 'amount', g.amount,
          'remaining', g.remaining, 'expires_at', ${iso('g.expires_at')}, 'source', g.source, 'reason', g.reason,
          'created_at', ${iso('g.created_at')}) from g) as "grant",
       (select balance from bal) as balance,
       (select coalesce(array_agg(id), '{}') from ev) as events`;

/**
 * The ledger, newest first ($1 app, $2 account, $3 pool or null, $4 cursor: the last id seen, or null, $5 limit,
 * $6 one entity's rows ('' the account's own) or null for all);
 * one row with `id` null when the account has no entries, none when the account does not exist.
 */
export const LEDGER_SQL = `
select true as account_exists, l.id::text, l.pool_id as pool, nullif(l.entity_id, '') as entity, l.grant_id, l.amount,
       l.kind, l.feature, l.request_id,
       l.workflow_id, l.ref, ${iso('l.created_at')} as created_at
from accounts a
left join lateral (
  select * from credit_ledger l where l.app_id = $1 and l.account_id = $2 and ($3::text is null or l.pool_id = $3)
    and ($4::bigint is null or l.id < $4::bigint) and ($6::text is null or l.entity_id = $6::text)
  order by l.id desc limit $5
) l on true
where a.app_id = $1 and a.id = $2`;
