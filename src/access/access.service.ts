import type { EntityManager } from '@mikro-orm/postgresql';
import { coalesced } from '../db/coalesce.js';
import { sql } from '../db/sql.js';
import { notFound } from '../errors.js';

/**
 * Effective access in one SQL statement (one round trip on the hottest read path).
 *
 * Layer 1: the account's plan. Layer 2: extras from the offer the account bought through, while they
 * have not ended (`account_extras`). Layer 3: the account's incentive until `incentive_expires_at`.
 * For one entitlement id the highest layer wins. A boolean entitlement the plan does not include is
 * absent. Add-ons of all layers are merged with the account's own.
 */
export const ACTIVE_INCENTIVE =
  'case when a.incentive_id is not null and (a.incentive_expires_at is null or a.incentive_expires_at > now()) ' +
  'then a.incentive_id end';
/**
 * Layer 2 applies while the extras have not ended and the account's subscription is active (not
 * paused, not cancelled). Extras recorded without a subscription (none today) would not apply.
 */
export const ACTIVE_EXTRA = `(x.ends_at is null or x.ends_at > now())
  and exists (select 1 from subscriptions s where s.app_id = x.app_id and s.account_id = x.account_id and s.status =
    'active')`;

/** The effective-access query for the app and account that `app` and `account` name (parameters or columns). */
function effectiveAccessSql(app: string, account: string): string {
  return `
with acc as (
  select a.plan_id, a.offer_id, ${ACTIVE_INCENTIVE} as incentive_id,
    case when ${ACTIVE_INCENTIVE} is not null then a.incentive_expires_at end as incentive_ends_at
  from accounts a where a.app_id = ${app} and a.id = ${account}
),
layers as (
  select pe.entitlement_id as id, pe.max, 1 as layer from plan_entitlements pe join acc on pe.plan_id = acc.plan_id
    where pe.app_id = ${app}
  union all
  select x.ref_id, x.max, 2 from account_extras x where x.app_id = ${app} and x.account_id = ${account} and x.kind =
    'entitlement' and ${ACTIVE_EXTRA}
  union all
  select ie.entitlement_id, ie.max, 3 from incentive_entitlements ie join acc on ie.incentive_id = acc.incentive_id
    where ie.app_id = ${app}
),
eff as (select distinct on (id) id, max, layer from layers order by id, layer desc),
ents as (
  select e.id, e.name, e.type, e.seq, eff.max, coalesce(c.count, 0) as usage, coalesce(c.held, 0) as held,
         e.credit_pool_id as pool, e.credit_cost as cost, e.usage_per_entity as per_entity
  from eff
  join entitlements e on e.app_id = ${app} and e.id = eff.id
  left join usage_counters c on c.app_id = ${app} and c.account_id = ${account} and c.entitlement_id = eff.id
    and c.entity_id = ''
  where e.type = 'usage' or (e.type = 'boolean' and exists (select 1 from layers l where l.layer = 1 and l.id = eff.id))
),
pools as (
  select p.id, p.name, p.seq, p.credit_per_entity as per_entity, eff.id is not null as on_plan, eff.max as granted,
         coalesce(cb.balance, 0) as balance, coalesce(cb.held, 0) as held
  from entitlements p
  left join eff on eff.id = p.id
  left join credit_balances cb on cb.app_id = ${app} and cb.account_id = ${account} and cb.pool_id = p.id and
    cb.entity_id = ''
  where p.app_id = ${app} and p.type = 'credits' and (eff.id is not null or cb.pool_id is not null)
),
adds as (
  select pa.addon_id as id from plan_addons pa join acc on pa.plan_id = acc.plan_id where pa.app_id = ${app}
  union select x.ref_id from account_extras x where x.app_id = ${app} and x.account_id = ${account} and x.kind = 'addon' and
    ${ACTIVE_EXTRA}
  union select ia.addon_id from incentive_addons ia join acc on ia.incentive_id = acc.incentive_id where ia.app_id = ${app}
  union select aa.addon_id from account_addons aa where aa.app_id = ${app} and aa.account_id = ${account}
)
select p.id as plan_id, p.name as plan_name, p.description as plan_description, p.is_free, p.meta, p.private_meta_keys,
       acc.incentive_id, acc.offer_id,
       (select s.status from subscriptions s where s.app_id = ${app} and s.account_id = ${account}) as subscription_status,
       (select coalesce(json_agg(json_build_object('id', id, 'name', name, 'type', type, 'max', max, 'usage', usage,
         'held', held, 'pool', pool, 'cost', cost, 'per_entity', per_entity)
         order by seq), '[]'::json) from ents) as entitlements,
       (select coalesce(json_agg(json_build_object('id', id, 'name', name, 'per_entity', per_entity, 'on_plan', on_plan,
         'granted', granted, 'balance', balance, 'held', held) order by seq), '[]'::json) from pools) as pools,
       (select coalesce(json_agg(id order by id), '[]'::json) from adds) as addons,
       least(acc.incentive_ends_at, (select min(x.ends_at) from account_extras x where x.app_id = ${app} and
         x.account_id = ${account} and x.ends_at is not null and ${ACTIVE_EXTRA})) as changes_at
from acc join plans p on p.app_id = ${app} and p.id = acc.plan_id`;
}

/** Effective access of one account: `$1` the app, `$2` the account. */
export const EFFECTIVE_ACCESS_SQL = effectiveAccessSql('$1', '$2');

/**
 * The same for a batch of accounts in one statement (the set form that `coalesced` sends under load): `$1` the apps,
 * `$2` the accounts, as arrays of equal length; each answer row carries `run`, its pair's place from 1.
 */
export const EFFECTIVE_ACCESS_SET_SQL = `
select q.run, r.* from unnest($1::text[], $2::text[]) with ordinality as q(app_id, account_id, run)
cross join lateral (${effectiveAccessSql('q.app_id', 'q.account_id')}) r`;

interface AccessRow {
  plan_id: string;
  plan_name: string;
  plan_description: string | null;
  is_free: boolean;
  meta: Record<string, unknown>;
  private_meta_keys: string[];
  incentive_id: string | null;
  offer_id: string | null;
  subscription_status: 'active' | 'paused' | 'past_due' | 'cancelled' | null;
  entitlements: {
    id: string;
    name: string;
    type: 'usage' | 'boolean';
    max: number | null;
    usage: number;
    held?: number;
    pool?: string | null;
    cost?: number | null;
    per_entity?: boolean;
  }[];
  pools: PoolRow[];
  addons: string[];
  changes_at: Date | string | null;
}

interface PoolRow {
  id: string;
  name: string;
  per_entity: boolean;
  /** Credits held by open reservations: not drawable until they settle. */
  held?: number | string;
  /** On a layer of the account's access (its plan, extras, incentive): `granted` is then its limit there. */
  on_plan: boolean;
  granted: number | null;
  balance: number;
}

/** A credits pool as effective access shows it. */
export interface PoolEntry {
  id: string;
  name: string;
  type: 'credits';
  balance: number;
  /** Credits the account's plan grants per period; null when unlimited (draws are never refused) or not on it. */
  granted_per_period: number | null;
  /** The pool is unlimited for this account (its plan has it with `max: null`). */
  unlimited: boolean;
  per_entity: boolean;
}

export interface AccessEntry {
  id: string;
  feature: string;
  name: string;
  type: 'usage' | 'boolean';
  usage: number;
  max: number | null;
  left: number | null;
  can: boolean;
  /** A feature that draws from a credits pool: the pool and the credits one unit costs (absent otherwise). */
  credits?: { pool: string; cost: number };
  /** A usage entitlement counted per entity (present only then): `usage` is the entity's when one is asked for. */
  per_entity?: true;
}

export interface EffectiveAccess {
  plan: { id: string; name: string; description: string | null; isFree: boolean; meta: Record<string, unknown> };
  incentive: string | null;
  offer: string | null;
  /**
   * The status of the account's subscription, null when it has none: whether `GET .../subscription` has one to show
   * (the drop-in components read it only then, so a customer without one costs no 404).
   */
  subscription_status: 'active' | 'paused' | 'past_due' | 'cancelled' | null;
  addons: string[];
  entitlements: AccessEntry[];
  /**
   * When this answer next changes by time alone (the incentive's or an offer extra's end), null when nothing ends:
   * until then only a change to the records (which the change stream carries) changes it.
   */
  changes_at: string | null;
  /** Each credits pool the account has (on its plan, or with a balance), with its balance. */
  credits: PoolEntry[];
  /** The entity asked for (`?entity=`): per-entity counters and balances are its own. Absent otherwise. */
  entity?: string;
}

export function accessEntry(e: {
  id: string;
  name: string;
  type: 'usage' | 'boolean';
  max: number | null;
  usage: number;
  /** Amounts reserved and not yet committed or released: they count against `left` and `can`. */
  held?: number;
}): AccessEntry {
  if (e.type === 'boolean')
    return { id: e.id, feature: e.id, name: e.name, type: 'boolean', usage: 0, max: null, left: null, can: true };
  const usage = Number(e.usage);
  const max = e.max === null ? null : Number(e.max);
  const taken = usage + Number(e.held ?? 0);
  return {
    id: e.id,
    feature: e.id,
    name: e.name,
    type: 'usage',
    usage,
    max,
    left: max === null ? null : Math.max(0, max - taken),
    can: max === null || taken < max,
  };
}

/** EFFECTIVE_ACCESS_SQL, coalesced under load (src/db/coalesce.ts): a batch goes as EFFECTIVE_ACCESS_SET_SQL. */
export const access = coalesced<AccessRow>('effective_access', EFFECTIVE_ACCESS_SQL, {
  set: {
    text: EFFECTIVE_ACCESS_SET_SQL,
    params: (lists) => [lists.map((p) => p[0]), lists.map((p) => p[1])],
  },
});

/** `/plan` (private meta keys removed) or `/full-plan` (everything). 404 when the account is missing. */
export async function effectiveAccess(
  em: EntityManager,
  appId: string,
  accountId: string,
  opts: { includePrivateMeta: boolean; entity?: string },
): Promise<EffectiveAccess> {
  const rows = await access(em, [appId, accountId]);
  if (!rows[0]) throw notFound(`Account ${accountId}`);
  const entity = opts.entity;
  const row = entity === undefined ? rows[0] : await forEntity(em, appId, accountId, entity, rows[0]);
  const meta = { ...(row.meta ?? {}) };
  if (!opts.includePrivateMeta) for (const key of row.private_meta_keys ?? []) delete meta[key];
  return {
    plan: { id: row.plan_id, name: row.plan_name, description: row.plan_description, isFree: row.is_free, meta },
    incentive: row.incentive_id,
    offer: row.offer_id,
    subscription_status: row.subscription_status,
    addons: row.addons,
    ...withCredits(row, entity !== undefined),
    changes_at: row.changes_at === null ? null : new Date(row.changes_at).toISOString(),
    ...(entity !== undefined ? { entity } : {}),
  };
}

/**
 * Effective access for one entity (`?entity=`): the per-entity counters and pool balances of the answer become the
 * entity's (0 where it has none yet); 404 for an entity not registered under the account. A second statement, run
 * only when an entity is asked for, so the hot read without one stays one statement.
 */
async function forEntity(
  em: EntityManager,
  appId: string,
  accountId: string,
  entity: string,
  row: AccessRow,
): Promise<AccessRow> {
  const [own] = await sql<{
    registered: boolean;
    counters: { id: string; count: number; held: number }[];
    balances: { id: string; balance: number; held: number }[];
  }>(
    em,
    `select exists (select 1 from account_entities x where x.app_id = $1 and x.account_id = $2 and x.id = $3)
              as registered,
            (select coalesce(json_agg(json_build_object('id', c.entitlement_id, 'count', c.count, 'held', c.held)),
               '[]'::json) from usage_counters c where c.app_id = $1 and c.account_id = $2 and c.entity_id = $3)
              as counters,
            (select coalesce(json_agg(json_build_object('id', b.pool_id, 'balance', b.balance, 'held', b.held)),
               '[]'::json) from credit_balances b where b.app_id = $1 and b.account_id = $2 and b.entity_id = $3)
              as balances`,
    [appId, accountId, entity],
  );
  if (!own.registered) throw notFound(`Entity ${entity} under account ${accountId}`);
  // New objects: a coalesced answer may be shared with other callers.
  return {
    ...row,
    entitlements: row.entitlements.map((e) => {
      if (!e.per_entity) return e;
      const c = own.counters.find((x) => x.id === e.id);
      return { ...e, usage: Number(c?.count ?? 0), held: Number(c?.held ?? 0) };
    }),
    pools: (row.pools ?? []).map((p) => {
      if (!p.per_entity) return p;
      const b = own.balances.find((x) => x.id === p.id);
      return { ...p, balance: Number(b?.balance ?? 0), held: Number(b?.held ?? 0) };
    }),
  };
}

/**
 * Pools and drawing features: a feature that draws `can` be used while its own limit allows and the pool's balance
 * covers one unit (or the pool is unlimited for the account). Without an entity, a per-entity feature or pool cannot
 * say (whose counter or balance would decide is not known): `can` is false there.
 */
function withCredits(row: AccessRow, forEntity: boolean): { entitlements: AccessEntry[]; credits: PoolEntry[] } {
  const credits: PoolEntry[] = (row.pools ?? []).map((p) => ({
    id: p.id,
    name: p.name,
    type: 'credits',
    balance: Number(p.balance),
    granted_per_period: p.on_plan && p.granted !== null ? Number(p.granted) : null,
    unlimited: p.on_plan && p.granted === null,
    per_entity: p.per_entity,
  }));
  const byId = new Map(credits.map((p) => [p.id, p]));
  const held = new Map((row.pools ?? []).map((p) => [p.id, Number(p.held ?? 0)]));
  const entitlements = row.entitlements.map((e) => {
    const plain = accessEntry(e);
    const entry: AccessEntry = e.per_entity
      ? { ...plain, can: plain.can && forEntity, per_entity: true as const }
      : plain;
    if (!e.pool) return entry;
    const cost = Number(e.cost);
    const pool = byId.get(e.pool);
    const covered =
      pool !== undefined &&
      (pool.unlimited || ((!pool.per_entity || forEntity) && pool.balance - (held.get(pool.id) ?? 0) >= cost));
    return { ...entry, can: entry.can && covered, credits: { pool: e.pool, cost } };
  });
  return { entitlements, credits };
}
