import type { EntityManager } from '@mikro-orm/postgresql';
import {
  reservationExpiryDef,
  reservationExpiryWorkflowId,
  type ReservationExpiryInput,
} from '../../workflows/shared.js';
import type { Ctx } from '../context.js';
import type { Deps } from '../deps.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import { badRequest, conflict, notFound, paymentRequired } from '../errors.js';
import { newId } from '../ids.js';
import { outboxSignal, outboxStart, type TemporalCommand } from '../temporal/outbox.js';
import { iso } from '../time.js';
import { settleOpenCheckouts, upgradeFor } from './upgrade.js';
import { creditsExhausted } from '../credits/credits.service.js';
import { currentCount, entityRefusal } from './usage.service.js';
import { LIMIT_CTES, POOL_CTES } from './usage.sql.js';

/**
 * Reserve: the limit check and the hold in one statement. The counter's `held` grows by the amount
 * when `count + held + amount` fits the limit (re-checked on the row under its lock, as for adds),
 * and the reservation row is written by the same statement. Blocking entitlements refuse what does
 * not fit; `allow` ones always hold. $4 amount, $5 reservation id, $6 seconds until it expires, on the app's clock
 * (its time-to-live plus the test clock's offset: `expires_at` is app time).
 *
 * A feature that draws from a credits pool also holds `amount × cost` on the pool's balance row (`hold`, guarded by
 * `balance - held >= need` as a draw is, and taken before the counter as a draw takes them), unless the pool is
 * unlimited for the account; the counter moves only when the hold did. Should the counter's guard still refuse under
 * its lock, `race` fails the statement whole and the caller runs it again (as CHANGE_SQL does). The reservation keeps
 * the pool and the cost it held at, so its settlement debits what it held.
 */
const RESERVE_SQL = `
with ${LIMIT_CTES},
${POOL_CTES},
lim as (
  select exists (select 1 from layers) as entitled,
         (select max from layers order by layer desc limit 1) as max,
         coalesce((select overage_mode = 'block' from ent), false) as blocking
),
per as (
  select coalesce((select usage_per_entity from ent), false) as counter,
         exists (select 1 from pool where per_entity) as balance
),
refused as (
  select coalesce((select counts_entities from ent), false) as counts_entities,
         case
           when $7::text = '' then case when per.counter or per.balance then 'entity_required' end
           when not (per.counter or per.balance) then 'entity_not_taken'
           when not exists (select 1 from account_entities x where x.app_id = $1 and x.account_id = $2
                              and x.id = $7::text) then 'entity_unknown'
         end as entity,
         case when per.counter then $7::text else '' end as cent,
         case when per.balance then $7::text else '' end as bent
  from per
),
snap as (
  select count + held as taken from usage_counters where app_id = $1 and account_id = $2 and entitlement_id = $3
    and entity_id = (select cent from refused) and exists (select 1 from pool)
),
gate as (
  select not (select counts_entities or entity is not null from refused) and (not lim.blocking or (lim.entitled and
           (lim.max is null or coalesce((select taken from snap), 0) + $4::bigint <= lim.max))) as ok
  from lim
),
hold as (
  update credit_balances b set held = b.held + pool.need, updated_at = now()
  from pool, gate
  where not pool.unlimited and gate.ok
    and b.app_id = $1 and b.account_id = $2 and b.pool_id = pool.id and b.entity_id = (select bent from refused)
    and b.balance - b.held >= pool.need
  returning pool.id, pool.cost
),
up as (
  insert into usage_counters as c (app_id, account_id, entitlement_id, entity_id, count, held, updated_at)
  select $1, $2, $3, (select cent from refused), 0, $4::bigint, now()
  from acc, ent, lim
  where ent.type = 'usage' and not (select counts_entities or entity is not null from refused)
    and (not lim.blocking or (lim.entitled and (lim.max is null or $4::bigint <= lim.max)))
    and (not exists (select 1 from pool where not pool.unlimited) or exists (select 1 from hold))
  on conflict (app_id, account_id, entitlement_id, entity_id) do update
    set held = c.held + $4::bigint, updated_at = now()
    where not (select blocking from lim)
       or ((select entitled from lim) and ((select max from lim) is null or
           c.count + c.held + $4::bigint <= (select max from lim)))
  returning c.count, c.held
),
rsv as (
  insert into usage_reservations (id, app_id, account_id, entitlement_id, amount, status, expires_at, created_at,
    credit_pool_id, credit_cost, entity_id, counter_entity_id)
  select $5, $1, $2, $3, $4::bigint, 'held', now() + make_interval(secs => $6::float8), now(),
         (select id from hold), (select cost from hold),
         case when exists (select 1 from hold) then (select bent from refused) else '' end, (select cent from refused)
  from up
  returning expires_at
)
select (select count(*) from acc) > 0 as account_exists, ent.type, ent.name, ent.overage_offer_id,
       ent.credit_pool_id as pool, lim.entitled, lim.max, (select count from up) as count, (select held from up) as held,
       (select expires_at from rsv) as expires_at,
       (select not unlimited from pool) and (select ok from gate) as credits_refused_if_blocked,
       (select counts_entities from refused) as counts_entities, (select entity from refused) as entity_refused,
       (select counter from per) as counter_per_entity, (select cent from refused) as counter_entity,
       (select bent from refused) as balance_entity,
       case when exists (select 1 from hold) and not exists (select 1 from up)
            then (select ('credits_race:' || h.id)::int from hold h) end as race
from lim left join ent on true`;

/**
 * Settle: one statement moves the reservation from `held` to $5 (`committed`, `released` or
 * `expired`) and, only when it did, takes its amount off `held` and adds $4 (the committed amount) to
 * `count`, with the history row. The status guard makes every settlement happen once.
 *
 * A reservation that holds credits first locks its pool's balance row (`bal`, before the counter, the order every
 * writer takes them in), then frees its hold and debits `committed × cost` (`unallocated` grows, a `debit` ledger row
 * names the feature and the reservation). A commit goes through only while the balance covers it beside the other
 * holds (`balance - held + own hold >= committed × cost`): grants that expired meanwhile may have taken the credits
 * it held (a hold guards them against other draws, not against expiry); then nothing moves and `credits_short` says
 * why (a 402). $6 the request id for the ledger.
 */
const SETTLE_SQL = `
with x as (
  select credit_pool_id, credit_cost, amount, entity_id from usage_reservations
  where app_id = $1 and account_id = $2 and id = $3 and status = 'held' and credit_pool_id is not null
),
bal as (
  select b.balance, b.held from credit_balances b, x
  where b.app_id = $1 and b.account_id = $2 and b.pool_id = x.credit_pool_id and b.entity_id = x.entity_id
  for update of b
),
covered as (
  select $5 <> 'committed' or coalesce((select bal.balance - bal.held + x.amount * x.credit_cost >=
           $4::bigint * x.credit_cost from bal, x), false) as ok
),
r as (
  update usage_reservations set status = $5, committed = $4::bigint, settled_at = now()
  where app_id = $1 and account_id = $2 and id = $3 and status = 'held' and $4::bigint <= amount
    and (credit_pool_id is null or (select ok from covered))
  returning entitlement_id, amount, credit_pool_id, credit_cost, entity_id, counter_entity_id
),
cb as (
  update credit_balances b set held = greatest(b.held - r.amount * r.credit_cost, 0),
         balance = b.balance - $4::bigint * r.credit_cost, unallocated = b.unallocated + $4::bigint * r.credit_cost,
         updated_at = now()
  from r where r.credit_pool_id is not null
    and b.app_id = $1 and b.account_id = $2 and b.pool_id = r.credit_pool_id and b.entity_id = r.entity_id
  returning b.pool_id
),
ledger as (
  insert into credit_ledger (app_id, account_id, pool_id, entity_id, amount, kind, feature, request_id, created_at)
  select $1, $2, r.credit_pool_id, r.entity_id, -$4::bigint * r.credit_cost, 'debit', r.entitlement_id, coalesce($6::text, $3::text), now()
  from r, cb where $4::bigint > 0
),
up as (
  update usage_counters c set held = greatest(c.held - r.amount, 0), count = c.count + $4::bigint, updated_at = now()
  from r, (select count(*) from cb) as after_balance
  where c.app_id = $1 and c.account_id = $2 and c.entitlement_id = r.entitlement_id
    and c.entity_id = r.counter_entity_id
  returning c.count, c.held
),
hist as (
  insert into usage_events (app_id, account_id, entitlement_id, entity_id, amount, count, created_at)
  select $1, $2, r.entitlement_id, r.counter_entity_id, $4::bigint, up.count, now() from r, up where $4::bigint > 0
)
select (select count(*) from r) > 0 as settled, (select count from up) as count, (select held from up) as held,
       not (select ok from covered) and exists (select 1 from x) as credits_short,
       (select credit_pool_id from x) as pool, (select entity_id from x) as entity`;

interface ReservationRow {
  app_id: string;
  id: string;
  account_id: string;
  entitlement_id: string;
  amount: string;
  status: 'held' | 'committed' | 'released' | 'expired';
  committed: string | null;
  expires_at: Date | string;
  created_at: Date | string;
  settled_at: Date | string | null;
}

export interface ReservationView {
  id: string;
  account: string;
  entitlement: string;
  amount: number;
  status: ReservationRow['status'];
  committed: number | null;
  expires_at: string;
  created_at: string;
  settled_at: string | null;
  workflow_id: string | null;
}

const present = (r: ReservationRow): ReservationView => ({
  id: r.id,
  account: r.account_id,
  entitlement: r.entitlement_id,
  amount: Number(r.amount),
  status: r.status,
  committed: r.committed === null ? null : Number(r.committed),
  expires_at: iso(new Date(r.expires_at))!,
  created_at: iso(new Date(r.created_at))!,
  settled_at: r.settled_at === null ? null : iso(new Date(r.settled_at)),
  workflow_id: reservationExpiryWorkflowId(r.app_id, r.id),
});

export const RESERVATION_DEFAULT_TTL_S = 300;
export const RESERVATION_MAX_TTL_S = 86_400;

/** The expiry workflow's start (also used by the reconciler to restart one whose workflow is gone). */
export function reservationExpiryCommand(input: ReservationExpiryInput): TemporalCommand {
  return outboxStart(reservationExpiryDef, reservationExpiryWorkflowId(input.appId, input.reservationId), input, {
    searchAttributes: { AppId: input.appId, AccountId: input.accountId },
    summary: `Reservation expiry: ${input.amount} ${input.entitlementId} of account ${input.accountId}`,
    details:
      `Releases reservation **${input.reservationId}** (${input.amount} of **${input.entitlementId}**, account ` +
      `**${input.accountId}**) at ${input.expiresAt} unless it is committed or released first.`,
  });
}

async function findReservation(em: EntityManager, appId: string, accountId: string, id: string) {
  const [row] = await sql<ReservationRow>(
    em,
    `select app_id, id, account_id, entitlement_id, amount, status, committed, expires_at, created_at, settled_at
       from usage_reservations where app_id = $1 and account_id = $2 and id = $3`,
    [appId, accountId, id],
  );
  return row ?? null;
}

/** How many reservations a list answers at most (newest first). */
export const RESERVATION_LIST_LIMIT = 50;

/**
 * An account's reservations, newest first (the held ones and the latest settled): what the console's account page
 * shows, each with its expiry workflow. 404 for an unknown account.
 */
export async function listReservations(
  ctx: Ctx,
  accountId: string,
  status?: ReservationView['status'],
): Promise<ReservationView[]> {
  const rows = await sql<ReservationRow & { account_exists: boolean }>(
    ctx.em,
    `select a.account_exists, r.app_id, r.id, r.account_id, r.entitlement_id, r.amount, r.status, r.committed,
            r.expires_at, r.created_at, r.settled_at
       from (select exists (select 1 from accounts where app_id = $1 and id = $2) as account_exists) a
       left join lateral (
         select * from usage_reservations
          where app_id = $1 and account_id = $2 and ($3::text is null or status = $3)
          order by created_at desc, id desc limit ${RESERVATION_LIST_LIMIT}
       ) r on true`,
    [ctx.app.id, accountId, status ?? null],
  );
  if (!rows[0]?.account_exists) throw notFound(`Account ${accountId}`);
  return rows.filter((r) => r.id !== null).map(present);
}

export async function getReservation(ctx: Ctx, accountId: string, id: string): Promise<ReservationView> {
  const row = await findReservation(ctx.em, ctx.app.id, accountId, id);
  if (!row) throw notFound(`Reservation ${id}`);
  return present(row);
}

interface ReserveRow {
  account_exists: boolean;
  type: 'usage' | 'boolean' | 'credits' | null;
  pool: string | null;
  name: string | null;
  overage_offer_id: string | null;
  entitled: boolean;
  max: string | null;
  count: string | null;
  held: string | null;
  expires_at: Date | string | null;
  /** A refusal (null count) is the pool's: it was not unlimited and the feature's own limit let the call count. */
  credits_refused_if_blocked: boolean | null;
  /** Refused whole: the entitlement counts entities, or the entity (or its absence) does not fit (as CHANGE_SQL's). */
  counts_entities: boolean | null;
  entity_refused: 'entity_required' | 'entity_not_taken' | 'entity_unknown' | null;
  /** The entitlement keeps a counter per entity; the counter and the balance the call names ('' the account's). */
  counter_per_entity: boolean | null;
  counter_entity: string | null;
  balance_entity: string | null;
}

/** Holds `amount` of a usage entitlement until `ttlSeconds` pass: 402 with the usual body when it does not fit. */
export async function reserveUsage(
  ctx: Ctx,
  accountId: string,
  entitlementId: string,
  amount: number,
  ttlSeconds: number,
  opts: { origin?: string; entity?: string } = {},
): Promise<ReservationView> {
  const entity = opts.entity ?? '';
  const attempt = () =>
    inTransaction(ctx.deps, ctx.em.fork(), async (t) => {
      const id = newId('reservation');
      // The app's clock (a test clock moved forward): the record behind the credential is current, since moving the
      // clock waits for every API process to drop the old one.
      const offsetMs = Number(ctx.app.clockOffsetMs ?? 0);
      const [row] = await sql<ReserveRow>(t.em, RESERVE_SQL, [
        ctx.app.id,
        accountId,
        entitlementId,
        amount,
        id,
        ttlSeconds + offsetMs / 1000,
        entity,
      ]);
      if (row.count !== null && row.expires_at !== null) {
        const expiresAt = new Date(row.expires_at).toISOString();
        t.temporal(
          reservationExpiryCommand({
            appId: ctx.app.id,
            accountId,
            entitlementId,
            reservationId: id,
            amount,
            expiresAt,
            ...(offsetMs ? { offsetMs } : {}),
          }),
        );
      }
      return { row, id };
    });
  // The hold applied but the counter's guard refused under its lock (see RESERVE_SQL): run it again.
  const run = async (n = 1): Promise<Awaited<ReturnType<typeof attempt>>> =>
    attempt().catch((err: unknown) => {
      if (String((err as Error).message).includes('credits_race') && n < 3) return run(n + 1);
      return fkToNotFound(accountId, entitlementId)(err);
    });
  let { row, id } = await run();
  if (
    row.count === null &&
    row.type === 'usage' &&
    row.account_exists &&
    !row.counts_entities &&
    !row.entity_refused &&
    (await settleOpenCheckouts(ctx, accountId))
  )
    ({ row, id } = await run());
  if (!row.account_exists) throw notFound(`Account ${accountId}`);
  if (row.type === null) throw notFound(`Entitlement ${entitlementId}`);
  if (row.type === 'boolean')
    throw badRequest(`Entitlement ${entitlementId} is a boolean entitlement; it has no usage`);
  if (row.type === 'credits')
    throw badRequest(`Entitlement ${entitlementId} is a credits pool; usage entitlements draw from it`);
  if (row.counts_entities)
    throw badRequest(
      `Entitlement ${entitlementId} counts the entities registered under the account; it is not reserved`,
    );
  entityRefusal(row.entity_refused, entitlementId, row.counter_per_entity === true, row.pool);
  if (row.entity_refused === 'entity_unknown') throw notFound(`Entity ${entity} under account ${accountId}`);
  // The pool's balance (less what other reservations hold) cannot cover `amount × cost`: nothing was held.
  if (row.count === null && row.pool && row.credits_refused_if_blocked)
    throw paymentRequired(
      await creditsExhausted(ctx, {
        accountId,
        entity: row.balance_entity ?? '',
        entitlementId,
        entitlementName: row.name!,
        poolId: row.pool,
        amount,
        origin: opts.origin ?? ctx.deps.config.PUBLIC_API_URL ?? '',
      }),
    );
  if (row.count === null) {
    const max = row.entitled ? (row.max === null ? null : Number(row.max)) : 0;
    throw paymentRequired(
      await upgradeFor(ctx, {
        accountId,
        entitlementId,
        entitlementName: row.name!,
        usage: await currentCount(ctx.em, ctx.app.id, accountId, entitlementId, row.counter_entity ?? ''),
        max: max ?? 0,
        offerId: row.overage_offer_id,
        origin: opts.origin ?? ctx.deps.config.PUBLIC_API_URL ?? '',
      }),
    );
  }
  return getReservation(ctx, accountId, id);
}

const fkToNotFound = (accountId: string, entitlementId: string) => (err: unknown) => {
  if ((err as { code?: string }).code === '23503' || (err as { cause?: { code?: string } }).cause?.code === '23503')
    throw notFound(`Account ${accountId} or entitlement ${entitlementId}`);
  throw err;
};

/**
 * Moves a held reservation to `committed` (adding `amount`, at most the reserved one, to the counter),
 * `released` or `expired` (adding nothing). Returns null when it was no longer held. The expiry
 * workflow is told in the same transaction, through the outbox.
 */
export async function settleReservation(
  deps: Pick<Deps, 'outbox' | 'events' | 'config'>,
  em: EntityManager,
  s: {
    appId: string;
    accountId: string;
    id: string;
    status: 'committed' | 'released' | 'expired';
    amount: number;
    requestId?: string;
  },
): Promise<boolean> {
  return (await settleWithCredits(deps, em, s)).settled;
}

/** `settleReservation`, also saying whether a commit was refused because the pool no longer covers it. */
async function settleWithCredits(
  deps: Pick<Deps, 'outbox' | 'events' | 'config'>,
  em: EntityManager,
  s: Parameters<typeof settleReservation>[2],
): Promise<{ settled: boolean; credits_short: boolean; pool: string | null; entity: string | null }> {
  return inTransaction(deps, em, async (t) => {
    const [row] = await sql<{ settled: boolean; credits_short: boolean; pool: string | null; entity: string | null }>(
      t.em,
      SETTLE_SQL,
      [s.appId, s.accountId, s.id, s.amount, s.status, s.requestId ?? null],
    );
    if (row.settled && s.status !== 'expired')
      t.temporal(
        outboxSignal(
          reservationExpiryDef,
          reservationExpiryWorkflowId(s.appId, s.id),
          reservationExpiryDef.signals.settled,
          s.status,
        ),
      );
    return row;
  });
}

/**
 * POST .../commit and .../release: 404 unknown, 409 more than reserved (the reservation's amount decides, not the
 * request alone) or no longer held.
 */
export async function finishReservation(
  ctx: Ctx,
  accountId: string,
  id: string,
  status: 'committed' | 'released',
  amount: number,
  opts: { requestId?: string } = {},
): Promise<ReservationView> {
  const before = await findReservation(ctx.em, ctx.app.id, accountId, id);
  if (!before) throw notFound(`Reservation ${id}`);
  if (amount > Number(before.amount)) throw conflict(`amount: at most the reserved amount (${Number(before.amount)})`);
  const {
    settled: done,
    credits_short,
    pool,
    entity,
  } = await settleWithCredits(ctx.deps, ctx.em.fork(), {
    appId: ctx.app.id,
    accountId,
    id,
    status,
    amount,
    requestId: opts.requestId,
  });
  // Grants that expired meanwhile took credits it held, and the pool no longer covers the commit: it stays held (a
  // smaller commit, or a release, still settles it).
  if (!done && credits_short && pool)
    throw paymentRequired(
      await creditsExhausted(ctx, {
        accountId,
        entity: entity ?? '',
        entitlementId: before.entitlement_id,
        poolId: pool,
        amount,
        origin: ctx.deps.config.PUBLIC_API_URL ?? '',
      }),
    );
  const after = (await findReservation(ctx.em.fork(), ctx.app.id, accountId, id))!;
  if (!done) throw conflict(`Reservation ${id} is ${after.status}, no longer held`, { reservation: present(after) });
  return present(after);
}

/** The expiry workflow's activity: releases the hold if the reservation is still held (idempotent). */
export async function expireReservation(deps: Deps, input: ReservationExpiryInput): Promise<{ expired: boolean }> {
  const expired = await settleReservation(deps, deps.orm.em.fork(), {
    appId: input.appId,
    accountId: input.accountId,
    id: input.reservationId,
    status: 'expired',
    amount: 0,
  });
  return { expired };
}
