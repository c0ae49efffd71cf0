import type { EntityManager } from '@mikro-orm/postgresql';
import { effectiveAccess } from '../access/access.service.js';
import type { Ctx } from '../context.js';
import { coalesced } from '../db/coalesce.js';
import { prepared } from '../db/sql.js';
import { badRequest, conflict, notFound, paymentRequired } from '../errors.js';
import { IdempotentReplay, type IdempotencyKey } from '../http/idempotency.js';
import { newId } from '../ids.js';
import { publishPending } from '../events/publish.js';
import { settleOpenCheckouts, upgradeFor } from './upgrade.js';
import { CHANGE_SQL, type ChangeRow } from './usage.sql.js';
import { creditsExhausted } from '../credits/credits.service.js';

export interface UsageChange {
  entitlement: string;
  count: number;
  /** The limit that applied, for threshold events (null = unlimited, 0 when not entitled). */
  max: number | null;
  amount: number;
}

/**
 * CHANGE_SQL, coalesced under load (src/db/coalesce.ts); a batch takes its counters' locks in one order (app,
 * account, entitlement), so two batches cannot deadlock (docs/decisions/0079-hot-statements-coalesce-under-load.md).
 */
export const change = coalesced<ChangeRow>('usage_change', CHANGE_SQL, {
  order: (p) => `${p[0]}\u0000${p[1]}\u0000${p[2]}`,
});

/**
 * Adds (or with a negative amount subtracts) usage. 402 with the upgrade body when a blocking limit would be passed.
 */
const runChange = async (
  ctx: Ctx,
  accountId: string,
  entitlementId: string,
  amount: number,
  key: IdempotencyKey | null | undefined,
  requestId?: string,
  entity = '',
  attempt = 1,
): Promise<ChangeRow> => {
  try {
    // A call with an idempotency key runs alone: its key's conflict aborts its statement (see CHANGE_SQL).
    const run = key ? change.alone : change;
    const [row] = await run(ctx.em, [
      ctx.app.id,
      accountId,
      entitlementId,
      amount,
      newId('event'),
      newId('event'),
      key?.digest ?? null,
      key?.requestHash ?? null,
      null,
      newId('event'),
      requestId ?? null,
      newId('creditGrant'),
      entity,
    ]);
    return row;
  } catch (err) {
    const e = err as { code?: string; constraint?: string; cause?: { constraint?: string } };
    // The credits debit applied but the counter's guard refused under its lock (see CHANGE_SQL): the statement
    // failed whole; run it again, it sees the competing add now.
    if (e.code === '22P02' && String((err as Error).message).includes('credits_race') && attempt < 3)
      return runChange(ctx, accountId, entitlementId, amount, key, requestId, entity, attempt + 1);
    if (e.code === '23505' && (e.constraint ?? e.cause?.constraint) === 'idempotency_keys_pkey')
      throw new IdempotentReplay();
    // The account or entitlement was deleted between the statement's snapshot and its insert.
    if ((err as { code?: string }).code === '23503')
      throw notFound(`Account ${accountId} or entitlement ${entitlementId}`);
    throw err;
  }
};

export async function changeUsage(
  ctx: Ctx,
  accountId: string,
  entitlementId: string,
  amount: number,
  opts: { origin?: string; idempotency?: IdempotencyKey | null; requestId?: string; entity?: string } = {},
): Promise<UsageChange> {
  const entity = opts.entity ?? '';
  let row = await runChange(ctx, accountId, entitlementId, amount, opts.idempotency, opts.requestId, entity);
  // Blocked: the account may just have paid for more. Settle its open checkouts, then try once more.
  if (
    row.count === null &&
    row.type === 'usage' &&
    row.account_exists &&
    !row.entity_refused &&
    (await settleOpenCheckouts(ctx, accountId))
  ) {
    row = await runChange(ctx, accountId, entitlementId, amount, opts.idempotency, opts.requestId, entity);
  }
  if (!row.account_exists) throw notFound(`Account ${accountId}`);
  if (row.type === null) throw notFound(`Entitlement ${entitlementId}`);
  if (row.type === 'boolean')
    throw badRequest(`Entitlement ${entitlementId} is a boolean entitlement; it has no usage counter`);
  if (row.type === 'credits')
    throw badRequest(
      `Entitlement ${entitlementId} is a credits pool; usage entitlements draw from it (grant credits with ` +
        'POST .../credits/grants)',
    );
  if (row.entity_refused === 'counts_entities')
    throw badRequest(
      `Entitlement ${entitlementId} counts the entities registered under the account (its seats): register or ` +
        'delete entities (POST/DELETE .../entities) to move it',
    );
  entityRefusal(row.entity_refused, entitlementId, row.counter_per_entity === true, row.pool_id);
  if (row.entity_refused === 'entity_unknown') throw notFound(`Entity ${entity} under account ${accountId}`);
  const max = row.entitled ? (row.max === null ? null : Number(row.max)) : 0;
  if (row.count === null && row.pool_id && row.credits_refused_if_blocked) {
    throw paymentRequired(
      await creditsExhausted(ctx, {
        accountId,
        entity: row.balance_entity ?? '',
        entitlementId,
        entitlementName: row.name!,
        poolId: row.pool_id,
        amount,
        origin: opts.origin ?? ctx.deps.config.PUBLIC_API_URL ?? '',
      }),
    );
  }
  if (row.count === null) {
    // The statement's own read of the counter is its snapshot, taken before competing adds committed;
    // the guard refused against the newest committed row. A fresh statement sees at least that row, so
    // the body states the usage that blocked the call (or the newer one).
    const usage = await currentCount(
      ctx.em,
      ctx.app.id,
      accountId,
      entitlementId,
      row.counter_per_entity ? entity : '',
    );
    throw paymentRequired(
      await upgradeFor(ctx, {
        accountId,
        entitlementId,
        entitlementName: row.name!,
        usage,
        max: max ?? 0,
        offerId: row.overage_offer_id,
        origin: opts.origin ?? ctx.deps.config.PUBLIC_API_URL ?? '',
      }),
    );
  }
  if (row.events.length) {
    // Fan the threshold events out now; if this fails, the relay finishes it.
    await publishPending(ctx.deps, row.events).catch((err) =>
      ctx.deps.logger.warn({ err, events: row.events }, 'usage event publishing deferred to the relay'),
    );
  }
  return { entitlement: entitlementId, count: Number(row.count), max, amount };
}

/**
 * The committed counter now, with the amounts reserved on it (0 when it has no row), read by a
 * statement of its own: what a 402 reports as used.
 */
export async function currentCount(
  em: EntityManager,
  appId: string,
  accountId: string,
  entitlementId: string,
  entity = '',
) {
  const [row] = await prepared<{ count: string }>(
    em,
    'usage_current',
    'select count + held as count from usage_counters where app_id = $1 and account_id = $2 and entitlement_id = $3 ' +
      'and entity_id = $4',
    [appId, accountId, entitlementId, entity],
  );
  return Number(row?.count ?? 0);
}

/**
 * The counter of one usage entitlement (a per-entity one's: the named entity's): 404 for an unknown account,
 * entitlement or entity, 400 for a boolean one, for a per-entity one without `entity`, or an entity given to another.
 */
export async function readUsage(
  em: EntityManager,
  appId: string,
  accountId: string,
  entitlementId: string,
  entity = '',
) {
  const [row] = await prepared<{
    account_exists: boolean;
    type: string | null;
    per_entity: boolean | null;
    entity_exists: boolean;
    count: string | null;
  }>(
    em,
    'usage_read',
    `select exists (select 1 from accounts where app_id = $1 and id = $2) as account_exists,
            (select type from entitlements where app_id = $1 and id = $3) as type,
            (select usage_per_entity from entitlements where app_id = $1 and id = $3) as per_entity,
            $4::text = '' or exists (select 1 from account_entities x where x.app_id = $1 and x.account_id = $2
              and x.id = $4::text) as entity_exists,
            (select count from usage_counters where app_id = $1 and account_id = $2 and entitlement_id = $3
              and entity_id = $4::text) as count`,
    [appId, accountId, entitlementId, entity],
  );
  if (!row.account_exists) throw notFound(`Account ${accountId}`);
  if (row.type === null) throw notFound(`Entitlement ${entitlementId}`);
  if (row.type === 'boolean')
    throw badRequest(`Entitlement ${entitlementId} is a boolean entitlement; it has no usage counter`);
  if (row.per_entity && entity === '')
    throw conflict(`entity: ${entitlementId} keeps its usage per entity; name the entity`, {
      reason: 'entity_required',
    });
  if (!row.per_entity && entity !== '')
    throw conflict(`entity: ${entitlementId} keeps its usage per account; it takes no entity`, {
      reason: 'entity_not_taken',
    });
  if (!row.entity_exists) throw notFound(`Entity ${entity} under account ${accountId}`);
  return { entitlement: entitlementId, ...(entity ? { entity } : {}), count: Number(row.count ?? 0) };
}

/**
 * The 409s of an entity missing (`entity_required`), or given to what takes none (`entity_not_taken`): a schema-valid
 * call the entitlement's shape refuses. The 404 of an unknown entity is the caller's.
 */
export function entityRefusal(
  refused: string | null,
  entitlementId: string,
  counterPerEntity: boolean,
  poolId: string | null,
) {
  if (refused === 'entity_required')
    throw conflict(
      `entity: ${entitlementId} ` +
        `${counterPerEntity ? 'keeps its usage per entity' : `draws from pool ${poolId}, kept per entity`}; ` +
        'name the entity',
      { reason: 'entity_required' },
    );
  if (refused === 'entity_not_taken')
    throw conflict(
      `entity: ${entitlementId} keeps its usage per account and ` +
        `${poolId ? `draws from pool ${poolId}, kept per account` : 'draws from no per-entity pool'}; ` +
        'it takes no entity',
      { reason: 'entity_not_taken' },
    );
}

/** `{ <entitlement>: count }` for every usage entitlement the account has (plan, extras, incentive). */
export async function readAllUsage(
  em: EntityManager,
  appId: string,
  accountId: string,
): Promise<Record<string, number>> {
  const access = await effectiveAccess(em, appId, accountId, { includePrivateMeta: false });
  const out: Record<string, number> = {};
  for (const e of access.entitlements) if (e.type === 'usage') out[e.id] = e.usage;
  return out;
}
