// Entities under an account (issue 42 item 5): a user, a workspace, a project, registered explicitly. Each holds its
// own balance in every per-entity pool, and registering one takes a seat: the usage entitlement that counts entities
// moves +1 in the same transaction, refused past a blocking limit (docs/billing.md, "Team plans").
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import { conflict, notFound, paymentRequired } from '../errors.js';
import { publishPending } from '../events/publish.js';
import { freshAppNow } from '../apps/clock.service.js';
import { actorFact } from '../subscriptions/actor-facts.js';
import { upgradeFor } from '../usage/upgrade.js';
import { LIMIT_CTES } from '../usage/usage.sql.js';
import { COLUMNS, listEntityRows, type EntityRow } from './entities.lookup.js';
import { grantEntityPeriods } from './credits-time.service.js';

/** `GET …/entities`: 404 for an unknown account. */
export async function listEntities(ctx: Ctx, accountId: string) {
  const [acc] = await sql<{ ok: boolean }>(
    ctx.em,
    'select exists (select 1 from accounts where app_id = $1 and id = $2) as ok',
    [ctx.app.id, accountId],
  );
  if (!acc?.ok) throw notFound(`Account ${accountId}`);
  return { data: await listEntityRows(ctx.em, ctx.app.id, accountId) };
}

/**
 * The seat of a new entity ($1 app, $2 account, $3 the entitlement that counts entities): +1 on its counter, guarded
 * as a usage add is (`count + held + 1 <= limit` re-checked on the row under its lock, so concurrent registrations
 * never pass a blocking limit), and its history row. `count` null: refused.
 */
const SEAT_ADD_SQL = `
with ${LIMIT_CTES},
lim as (
  select exists (select 1 from layers) as entitled,
         (select max from layers order by layer desc limit 1) as max,
         coalesce((select overage_mode = 'block' from ent), false) as blocking
),
up as (
  insert into usage_counters as c (app_id, account_id, entitlement_id, count, updated_at)
  select $1, $2, $3, 1, now() from acc, ent, lim
  where ent.type = 'usage' and (not lim.blocking or (lim.entitled and (lim.max is null or 1 <= lim.max)))
  on conflict (app_id, account_id, entitlement_id, entity_id) do update set count = c.count + 1, updated_at = now()
    where not (select blocking from lim)
       or ((select entitled from lim) and ((select max from lim) is null or
           c.count + c.held + 1 <= (select max from lim)))
  returning c.count
),
hist as (
  insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
  select $1, $2, $3, 1, up.count, now() from up
)
select ent.name, ent.overage_offer_id, lim.entitled, lim.max, (select count from up) as count,
       (select count + held from usage_counters where app_id = $1 and account_id = $2 and entitlement_id = $3
         and entity_id = '') as taken
from lim left join ent on true`;

/** A deleted entity's seat back ($1 app, $2 account, $3 the entitlement): -1, never below 0, and its history row. */
const SEAT_REMOVE_SQL = `
with up as (
  update usage_counters c set count = c.count - 1, updated_at = now()
  where c.app_id = $1 and c.account_id = $2 and c.entitlement_id = $3 and c.entity_id = '' and c.count > 0
  returning c.count
)
insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
select $1, $2, $3, -1, up.count, now() from up`;

/** Thrown inside the registration's transaction (rolling it back) when the seats limit refuses the entity. */
class SeatRefused extends Error {
  constructor(readonly seat: { id: string; name: string; offerId: string | null; max: number; taken: number }) {
    super('seat refused');
  }
}

/**
 * `POST …/entities`: registers the entity and takes its seat in one transaction (the seats counter's row lock orders
 * concurrent registrations), and gives it the plan's grant of each per-entity pool for the period under way (the
 * account's periods, credits-time.service.ts). 404 unknown account, 409 an id already registered, 402 (the
 * `limit_reached` body, as a usage add past a blocking limit) when no seat is left.
 */
export async function registerEntity(
  ctx: Ctx,
  accountId: string,
  input: { id: string; name?: string | null },
  origin: string,
): Promise<EntityRow> {
  const now = await freshAppNow(ctx.em, ctx.app.id);
  const done = await inTransaction(ctx.deps, ctx.em, async (t) => {
    // The account's row lock orders its registrations: the one after sees the seats, and the per-entity period the
    // one before started (so all entities share the account's dates), committed. A key-share lock (a usage insert's
    // foreign key) does not wait on it.
    const [ins] = await sql<{ account_exists: boolean; entity: EntityRow | null; seat: string | null }>(
      t.em,
      `with acc as (select 1 from accounts where app_id = $1 and id = $2 for no key update),
       ins as (
         insert into account_entities (app_id, account_id, id, name, created_at)
         select $1, $2, $3, $4, now() from acc
         on conflict do nothing
         returning ${COLUMNS}
       )
       select exists (select 1 from acc) as account_exists,
              (select row_to_json(ins) from ins) as entity,
              (select id from entitlements where app_id = $1 and counts_entities) as seat`,
      [ctx.app.id, accountId, input.id, input.name ?? null],
    );
    if (!ins.account_exists) throw notFound(`Account ${accountId}`);
    if (!ins.entity) throw conflict(`Entity ${input.id} is already registered under account ${accountId}`);
    if (ins.seat) {
      const [s] = await sql<{
        name: string | null;
        overage_offer_id: string | null;
        entitled: boolean;
        max: string | null;
        count: string | null;
        taken: string | null;
      }>(t.em, SEAT_ADD_SQL, [ctx.app.id, accountId, ins.seat]);
      if (s.count === null)
        throw new SeatRefused({
          id: ins.seat,
          name: s.name ?? ins.seat,
          offerId: s.overage_offer_id,
          max: s.entitled && s.max !== null ? Number(s.max) : 0,
          taken: Number(s.taken ?? 0),
        });
    }
    const pools = await sql<{ pool: string; max: string }>(
      t.em,
      `select pe.entitlement_id as pool, pe.max
         from accounts a
         join plan_entitlements pe on pe.app_id = a.app_id and pe.plan_id = a.plan_id
         join entitlements e on e.app_id = pe.app_id and e.id = pe.entitlement_id and e.type = 'credits'
        where a.app_id = $1 and a.id = $2 and pe.max > 0 and e.credit_per_entity
        order by pe.entitlement_id`,
      [ctx.app.id, accountId],
    );
    const events: string[] = [];
    for (const p of pools)
      events.push(
        ...(await grantEntityPeriods(t.em, ctx.app.id, accountId, p.pool, Number(p.max), now, input.id, null)),
      );
    // The grants' expiries (and, for the account's first entity, its first period's end) are dates of the actor.
    if (pools.length) t.temporal(actorFact(ctx.app.id, accountId, { kind: 'account_changed' }));
    return { entity: ins.entity, events, refused: null };
  }).catch((err: unknown) => {
    if (err instanceof SeatRefused) return { entity: null, events: [], refused: err.seat };
    throw err;
  });
  if (done.refused || !done.entity) {
    const seat = done.refused!;
    throw paymentRequired(
      await upgradeFor(ctx, {
        accountId,
        entitlementId: seat.id,
        entitlementName: seat.name,
        usage: seat.taken,
        max: seat.max,
        offerId: seat.offerId,
        origin,
      }),
    );
  }
  if (done.events.length)
    await publishPending(ctx.deps, done.events).catch((err) =>
      ctx.deps.logger.warn({ err, events: done.events }, 'credits event publishing deferred to the relay'),
    );
  return done.entity;
}

/**
 * `DELETE …/entities/:entityId`: unregisters it and gives its seat back, in one transaction. Its balances, grants and
 * ledger stay (the ledger still adds up; nothing draws from or is granted to them); registered again under the same
 * id it finds them, and no second plan grant for the same period.
 */
export async function deleteEntity(ctx: Ctx, accountId: string, entityId: string): Promise<EntityRow> {
  return inTransaction(ctx.deps, ctx.em, async (t) => {
    const [row] = await sql<{ account_exists: boolean; entity: EntityRow | null; seat: string | null }>(
      t.em,
      `with del as (
         delete from account_entities where app_id = $1 and account_id = $2 and id = $3 returning ${COLUMNS}
       )
       select exists (select 1 from accounts where app_id = $1 and id = $2) as account_exists,
              (select row_to_json(del) from del) as entity,
              (select id from entitlements where app_id = $1 and counts_entities) as seat`,
      [ctx.app.id, accountId, entityId],
    );
    if (!row.account_exists) throw notFound(`Account ${accountId}`);
    if (!row.entity) throw notFound(`Entity ${entityId} under account ${accountId}`);
    if (row.seat) await sql(t.em, SEAT_REMOVE_SQL, [ctx.app.id, accountId, row.seat]);
    return row.entity;
  });
}
