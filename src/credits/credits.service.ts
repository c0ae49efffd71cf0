import type { EntityManager } from '@mikro-orm/postgresql';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { badRequest, notFound } from '../errors.js';
import { publishPending } from '../events/publish.js';
import { IdempotentReplay, type IdempotencyKey } from '../http/idempotency.js';
import { encodeCursor, type Cursor } from '../http/pagination.js';
import { newId } from '../ids.js';
import { upgradeFor, type UpgradeOffer } from '../usage/upgrade.js';
import { GRANT_SQL, GRANTS_SQL, LEDGER_SQL } from './credits.sql.js';
import { effectiveAccess } from '../access/access.service.js';
import { freshAppNow } from '../apps/clock.service.js';
import { actorFact } from '../subscriptions/actor-facts.js';
import { listPacks } from './packs.service.js';
import { entityRule, listEntityRows, requireEntity } from './entities.lookup.js';

/**
 * The 402 of a draw the pool's balance cannot cover (the counter did not move, nothing was debited). `pool.balance`
 * is what can be drawn: the balance less what open reservations hold.
 */
export interface CreditsExhaustedBody {
  error: 'credits_exhausted';
  message: string;
  pool: { id: string; name: string; balance: number };
  /** The entity whose balance fell short, on a per-entity pool. */
  entity?: string;
  entitlement: { id: string; name: string; cost: number; amount: number };
  need: number;
  offer: UpgradeOffer | null;
  packs: { id: string; amount: number; price: number; currency: string; checkout: { method: 'POST'; path: string } }[];
}

/**
 * Builds the credits 402: the pool and its balance now, what the draw needed, the cheapest plan that grants more of
 * the pool (the same upgrade search as `limit_reached`, over the pool's limit) and the packs that top it up.
 */
export async function creditsExhausted(
  ctx: Ctx,
  a: {
    accountId: string;
    /** The entity whose balance it is ('' or absent: the account's own). */
    entity?: string;
    entitlementId: string;
    /** The feature's name (read here when not given). */
    entitlementName?: string;
    poolId: string;
    amount: number;
    origin: string;
  },
): Promise<CreditsExhaustedBody> {
  const [row] = await sql<{
    name: string;
    ename: string;
    cost: string;
    balance: string | null;
    granted: string | null;
  }>(
    ctx.em,
    `select p.name, e.name as ename, e.credit_cost as cost,
            (select greatest(balance - held, 0) from credit_balances b where b.app_id = $1 and b.account_id = $2
               and b.pool_id = p.id and b.entity_id = $4) as balance,
            (select pe.max from plan_entitlements pe join accounts a on a.app_id = pe.app_id and a.plan_id = pe.plan_id
               where pe.app_id = $1 and a.id = $2 and pe.entitlement_id = p.id) as granted
       from entitlements e join entitlements p on p.app_id = e.app_id and p.id = e.credit_pool_id
      where e.app_id = $1 and e.id = $3`,
    [ctx.app.id, a.accountId, a.entitlementId, a.entity ?? ''],
  );
  const cost = Number(row?.cost ?? 0);
  const balance = Number(row?.balance ?? 0);
  const granted = Number(row?.granted ?? 0);
  const need = cost * a.amount;
  const upgrade = await upgradeFor(ctx, {
    accountId: a.accountId,
    entitlementId: a.poolId,
    entitlementName: row?.name ?? a.poolId,
    usage: granted,
    max: granted,
    offerId: null,
    origin: a.origin,
  });
  const name = row?.name ?? a.poolId;
  const entitlementName = a.entitlementName ?? row?.ename ?? a.entitlementId;
  // The pool's packs on sale, cheapest first: each with the route that buys it (the account's token, the publishable
  // or the secret key may call it).
  const packs = (await listPacks(ctx.em, ctx.app.id, { pool: a.poolId, archived: false }))
    .sort((x, y) => x.price - y.price || x.amount - y.amount)
    .map((p) => ({
      id: p.id,
      amount: p.amount,
      price: p.price,
      currency: p.currency,
      checkout: {
        method: 'POST' as const,
        path: `/apps/${encodeURIComponent(ctx.app.id)}/credit-packs/${encodeURIComponent(p.id)}/checkout`,
      },
    }));
  const topUp = packs.length
    ? ` Or buy ${packs[0].amount} ${name} for ${packs[0].price} ${packs[0].currency} (pack ${packs[0].id}).`
    : '';
  const more = upgrade.offer
    ? ` Upgrade to ${upgrade.offer.plan.name} for ${upgrade.offer.new_limit ?? 'unlimited'} ${name} a month` +
      `${upgrade.offer.checkout_url ? `: ${upgrade.offer.checkout_url}` : '.'}`
    : '';
  return {
    error: 'credits_exhausted',
    message:
      `${entitlementName} costs ${cost} ${name} per unit: ${need} needed, ${balance} left` +
      `${a.entity ? ` to ${a.entity}` : ''}.` +
      (more || (topUp ? '' : ' Grant more credits, or add a plan that grants them.')) +
      topUp,
    pool: { id: a.poolId, name, balance },
    ...(a.entity ? { entity: a.entity } : {}),
    entitlement: { id: a.entitlementId, name: entitlementName, cost, amount: a.amount },
    need,
    offer: upgrade.offer,
    packs,
  };
}

interface GrantRow {
  id: string;
  pool: string;
  entity: string;
  amount: string;
  remaining: string;
  expires_at: string | null;
  source: 'plan' | 'api' | 'pack' | 'refund' | 'rollover';
  reason: string | null;
  created_at: string;
}

const presentGrant = (g: GrantRow) => ({
  id: g.id,
  pool: g.pool,
  entity: g.entity || null,
  amount: Number(g.amount),
  remaining: Number(g.remaining),
  expires_at: g.expires_at,
  source: g.source,
  reason: g.reason,
  created_at: g.created_at,
});

/**
 * `GET …/credits`: each pool the account has a balance in or gets from its plan (as effective access lists them),
 * with its live grants and what is left of each (the debits not yet taken from particular grants taken
 * earliest-expiring first, as settling will: credits.sql.ts). A per-entity pool's `balance` and `held` are its
 * entities' sums, and `entities` lists each entity's; with `entity`, only the per-entity pools, each with that
 * entity's balance and grants (404 for an entity not registered under the account).
 */
export async function readCredits(em: EntityManager, appId: string, accountId: string, q: { entity?: string } = {}) {
  const access = await effectiveAccess(em, appId, accountId, { includePrivateMeta: false });
  const entity = q.entity ?? null;
  if (entity !== null) await requireEntity(em, appId, accountId, entity);
  // The balance comes with the grants, from one statement's snapshot, so the two always agree (a pool without live
  // grants has nothing to spend).
  const grants = await sql<GrantRow & { balance: string }>(em, GRANTS_SQL, [appId, accountId, entity]);
  const balances = await sql<{ pool_id: string; entity_id: string; balance: string; held: string }>(
    em,
    `select pool_id, entity_id, balance, held from credit_balances
      where app_id = $1 and account_id = $2 and ($3::text is null or entity_id = $3) order by pool_id, entity_id`,
    [appId, accountId, entity],
  );
  const registered = entity === null ? await listEntityRows(em, appId, accountId) : [];
  const pools = entity === null ? access.credits : access.credits.filter((p) => p.per_entity);
  return {
    data: pools.map((p) => {
      const key = (e: string) => (p.per_entity ? (entity === null ? e !== '' : e === entity) : e === '');
      const own = balances.filter((b) => b.pool_id === p.id && key(b.entity_id));
      return {
        pool: p.id,
        name: p.name,
        per: p.per_entity ? ('entity' as const) : ('account' as const),
        ...(entity !== null ? { entity } : {}),
        // From the grants' snapshot for one balance; a per-entity pool's total is its balances' sum.
        balance:
          p.per_entity && entity === null
            ? own.reduce((sum, b) => sum + Number(b.balance), 0)
            : Number(grants.find((g) => g.pool === p.id && key(g.entity))?.balance ?? 0),
        held: own.reduce((sum, b) => sum + Number(b.held), 0),
        granted_per_period: p.granted_per_period,
        unlimited: p.unlimited,
        grants: grants
          .filter((g) => g.pool === p.id && key(g.entity))
          .map((g) => {
            const { pool: _pool, ...rest } = presentGrant(g);
            return rest;
          }),
        ...(p.per_entity && entity === null ? { entities: entityBalances(registered, own) } : {}),
      };
    }),
  };
}

/**
 * Each entity of a per-entity pool: the registered ones (0 until granted) and those deleted since that still hold a
 * balance (`registered: false`: nothing draws from it, nothing is granted to it), in id order.
 */
function entityBalances(
  registered: { id: string; name: string | null }[],
  own: { entity_id: string; balance: string; held: string }[],
) {
  const ids = [...new Set([...registered.map((r) => r.id), ...own.map((b) => b.entity_id)])].sort();
  return ids.map((id) => {
    const r = registered.find((x) => x.id === id);
    const b = own.find((x) => x.entity_id === id);
    return {
      entity: id,
      name: r?.name ?? null,
      registered: r !== undefined,
      balance: Number(b?.balance ?? 0),
      held: Number(b?.held ?? 0),
    };
  });
}

/**
 * `POST …/credits/grants`: one statement adds a grant, its balance and its ledger row, and with an `Idempotency-Key`
 * the key and this answer (so a retry answers the same grant and never grants twice, even across a crash), and the
 * `credits.granted` event when an endpoint listens.
 */
export async function grantCredits(
  ctx: Ctx,
  accountId: string,
  input: { pool: string; amount: number; expires_at?: string | null; reason?: string | null; entity?: string },
  opts: { requestId?: string; idempotency?: IdempotencyKey | null; source?: 'api' } = {},
) {
  if (input.expires_at && new Date(input.expires_at).getTime() <= (await freshAppNow(ctx.em, ctx.app.id)).getTime())
    throw badRequest('expires_at: must be in the future (on the app\u2019s clock)');
  type Row = {
    account_exists: boolean;
    pool_type: string | null;
    per_entity: boolean | null;
    entity_exists: boolean;
    grant: GrantRow | null;
    balance: string | null;
    events: string[];
  };
  const rows = await sql<Row>(ctx.em, GRANT_SQL, [
    ctx.app.id,
    accountId,
    input.pool,
    input.amount,
    input.expires_at ?? null,
    opts.source ?? 'api',
    input.reason ?? null,
    newId('creditGrant'),
    opts.requestId ?? null,
    opts.idempotency?.digest ?? null,
    opts.idempotency?.requestHash ?? null,
    newId('event'),
    null,
    null,
    null,
    input.entity ?? '',
  ]).catch((err: unknown) => {
    const e = err as { code?: string; constraint?: string; cause?: { constraint?: string } };
    if (e.code === '23505' && (e.constraint ?? e.cause?.constraint) === 'idempotency_keys_pkey')
      throw new IdempotentReplay();
    throw err;
  });
  const row = rows[0];
  if (!row?.account_exists) throw notFound(`Account ${accountId}`);
  if (row.pool_type === null) throw notFound(`Credits pool ${input.pool}`);
  if (row.pool_type !== 'credits')
    throw badRequest(`pool: entitlement ${input.pool} is of type ${row.pool_type}, not a credits pool`);
  entityRule(input.pool, row.per_entity === true, input.entity, row.entity_exists, accountId);
  if (row.events.length)
    await publishPending(ctx.deps, row.events).catch((err) =>
      ctx.deps.logger.warn({ err, events: row.events }, 'credits event publishing deferred to the relay'),
    );
  // A grant that expires is a date of the account's actor: it hears of it (and starts, if it was not running). Should
  // Temporal be away, the actor still finds the date at its next wake-up (any fact, timer or test clock step).
  if (input.expires_at)
    await ctx.deps.outbox
      .carryOut(actorFact(ctx.app.id, accountId, { kind: 'account_changed' }))
      .catch((err: unknown) =>
        ctx.deps.logger.warn({ err, accountId }, 'credits: the actor will find the expiry later'),
      );
  return { ...presentGrant(row.grant!), balance: Number(row.balance) };
}

export const LEDGER_PAGE = 100;

/** `GET …/credits/ledger`: the account's ledger, newest first, a page at a time (`cursor`: the last id seen). */
export async function readLedger(
  em: EntityManager,
  appId: string,
  accountId: string,
  q: { pool?: string; cursor?: Cursor; limit?: number; entity?: string },
) {
  const limit = q.limit ?? 50;
  // The ledger is ordered by its sequence: a cursor of another list (an id that is no sequence number) names nothing.
  if (q.cursor && !/^\d{1,18}$/.test(q.cursor.id)) throw badRequest('cursor: is not a next_cursor this list answered');
  const rows = await sql<{
    account_exists: boolean;
    id: string | null;
    pool: string;
    grant_id: string | null;
    amount: string;
    kind: 'grant' | 'debit' | 'expiry' | 'refund' | 'reversal' | 'topup';
    feature: string | null;
    request_id: string | null;
    workflow_id: string | null;
    ref: string | null;
    entity: string | null;
    created_at: string;
  }>(em, LEDGER_SQL, [appId, accountId, q.pool ?? null, q.cursor?.id ?? null, limit + 1, q.entity ?? null]);
  if (!rows.length || !rows[0].account_exists) throw notFound(`Account ${accountId}`);
  // An entity deleted since keeps its rows: its ledger is still read (404 only for an id that never held credits).
  if (q.entity !== undefined && rows.every((r) => r.id === null)) await requireEntity(em, appId, accountId, q.entity);
  const entries = rows.filter((r) => r.id !== null);
  const page = entries.slice(0, limit);
  return {
    data: page.map((r) => ({
      id: r.id!,
      pool: r.pool,
      entity: r.entity,
      grant: r.grant_id,
      amount: Number(r.amount),
      kind: r.kind,
      feature: r.feature,
      request_id: r.request_id,
      workflow_id: r.workflow_id,
      ref: r.ref,
      created_at: r.created_at,
    })),
    next_cursor:
      entries.length > limit
        ? encodeCursor({ at: page[page.length - 1].created_at, id: page[page.length - 1].id! })
        : null,
  };
}
