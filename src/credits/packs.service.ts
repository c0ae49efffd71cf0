// Credit top-up packs in the catalog, and their checkout (issue 42, item 4). What happens once PayPal confirms a
// payment or a refund is in packs-payments.service.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { badRequest, conflict, forbidden, isUniqueViolation, missingReference, notFound } from '../errors.js';
import type { Caller } from '../http/caller.js';
import { newId } from '../ids.js';
import { hostedReturnUrl, requireProvider, withProvider } from '../payments/payments.service.js';
import { ISO } from './credits.sql.js';
import type * as S from './packs.schemas.js';

export interface PackRow {
  id: string;
  pool: string;
  amount: string;
  price: string;
  currency: string;
  archived_at: string | null;
  created_at: string;
  updated_at: string;
}

const iso = (col: string) => `to_char(${col} at time zone 'UTC', '${ISO}')`;
const PACK_COLUMNS = `id, pool_id as pool, amount, price, currency, ${iso('archived_at')} as archived_at,
  ${iso('created_at')} as created_at, ${iso('updated_at')} as updated_at`;

export const presentPack = (p: PackRow) => ({
  id: p.id,
  pool: p.pool,
  amount: Number(p.amount),
  price: Number(p.price),
  currency: p.currency,
  archived: p.archived_at !== null,
  archived_at: p.archived_at,
  created_at: p.created_at,
  updated_at: p.updated_at,
});

/** The app's packs in creation order (as catalog lists are), optionally one pool's, optionally without archived ones. */
export async function listPacks(em: EntityManager, appId: string, q: { pool?: string; archived?: boolean } = {}) {
  const rows = await sql<PackRow>(
    em,
    `select ${PACK_COLUMNS} from credit_packs where app_id = $1 and ($2::text is null or pool_id = $2)
       and ($3::boolean is null or (archived_at is not null) = $3) order by created_at, id`,
    [appId, q.pool ?? null, q.archived ?? null],
  );
  return rows.map(presentPack);
}

export async function getPack(em: EntityManager, appId: string, packId: string) {
  const [row] = await sql<PackRow>(em, `select ${PACK_COLUMNS} from credit_packs where app_id = $1 and id = $2`, [
    appId,
    packId,
  ]);
  if (!row) throw notFound(`Credit pack ${packId}`);
  return presentPack(row);
}

/**
 * Defines a pack. Its pool must be a credits entitlement of the app (checked in the insert itself, so an entitlement
 * deleted or retyped meanwhile cannot slip in); an id in use is a 409.
 */
export async function createPack(ctx: Ctx, input: z.output<typeof S.createPackBody>) {
  const [pool] = await sql<{ type: string; per_entity: boolean }>(
    ctx.em,
    'select type, credit_per_entity as per_entity from entitlements where app_id = $1 and id = $2',
    [ctx.app.id, input.pool],
  );
  if (!pool) throw missingReference(`pool: the app has no entitlement ${input.pool}`);
  if (pool.type !== 'credits')
    throw conflict(`pool: entitlement ${input.pool} is of type ${pool.type}, not a credits pool`, {
      reason: 'not_a_pool',
    });
  // A pack's order names an account, not an entity: its credits would have no balance to go to.
  if (pool.per_entity)
    throw conflict(`pool: ${input.pool} is kept per entity; packs top up per-account pools only`, {
      reason: 'not_a_pool',
    });
  try {
    const rows = await sql<PackRow>(
      ctx.em,
      `insert into credit_packs (app_id, id, pool_id, amount, price, currency)
       select $1::text, $2::text, $3::text, $4::bigint, $5::numeric, $6::text
         from entitlements e where e.app_id = $1 and e.id = $3 and e.type = 'credits' and not e.credit_per_entity
       returning ${PACK_COLUMNS}`,
      [ctx.app.id, input.id, input.pool, input.amount, input.price.toFixed(2), input.currency ?? 'USD'],
    );
    if (!rows.length)
      throw conflict(`pool: ${input.pool} is no longer a per-account credits pool`, { reason: 'not_a_pool' });
    return presentPack(rows[0]);
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`Credit pack ${input.id} already exists`);
    throw err;
  }
}

/** Archives a pack: it is no longer sold; orders already made still complete, and their refunds still apply. */
export async function archivePack(ctx: Ctx, packId: string) {
  await sql(
    ctx.em,
    `update credit_packs set archived_at = coalesce(archived_at, now()), updated_at = now()
      where app_id = $1 and id = $2`,
    [ctx.app.id, packId],
  );
  return getPack(ctx.em, ctx.app.id, packId);
}

/**
 * Deletes a pack. Its orders keep what they sold (pool, credits, price), so an order approved meanwhile still
 * completes and a refund still takes back; only the catalog entry goes.
 */
export async function deletePack(ctx: Ctx, packId: string) {
  const [row] = await sql<PackRow>(
    ctx.em,
    `delete from credit_packs where app_id = $1 and id = $2 returning ${PACK_COLUMNS}`,
    [ctx.app.id, packId],
  );
  if (!row) throw notFound(`Credit pack ${packId}`);
  return presentPack(row);
}

export interface OrderRow {
  id: string;
  app_id: string;
  account_id: string;
  pack_id: string;
  pool_id: string;
  amount: string;
  price: string;
  currency: string;
  status: 'created' | 'completed' | 'cancelled';
  provider_order_id: string | null;
  approve_url: string | null;
  capture_id: string | null;
  grant_id: string | null;
  refunded: string;
  taken_back: string;
  created_at: string;
  completed_at: string | null;
}

export const ORDER_COLUMNS = `id, app_id, account_id, pack_id, pool_id, amount, price, currency, status,
  provider_order_id, approve_url, capture_id, grant_id, refunded, taken_back, ${iso('created_at')} as created_at,
  ${iso('completed_at')} as completed_at`;

export const presentOrder = (o: OrderRow) => ({
  object: 'credit_pack_order' as const,
  id: o.id,
  status: o.status,
  pack: o.pack_id,
  account: o.account_id,
  pool: o.pool_id,
  amount: Number(o.amount),
  price: Number(o.price),
  currency: o.currency,
  approve_url: o.approve_url,
  capture_id: o.capture_id,
  grant: o.grant_id,
  refunded: Number(o.refunded),
  taken_back: Number(o.taken_back),
  created_at: o.created_at,
  completed_at: o.completed_at,
});

/** A pack order of the app (another app's order is not found). */
export async function findOrder(em: EntityManager, appId: string, orderId: string): Promise<OrderRow> {
  const [row] = await sql<OrderRow>(
    em,
    `select ${ORDER_COLUMNS} from credit_pack_orders where app_id = $1 and id = $2`,
    [appId, orderId],
  );
  if (!row) throw notFound(`Credit pack order ${orderId}`);
  return row;
}

/**
 * An account token buys only for its own account (403 otherwise, as a token starting another account's cancel
 * session is refused); keys name any account of their app.
 */
export function refuseOtherAccount(caller: Caller, accountId: string) {
  if (caller.kind === 'token' && caller.accountId !== accountId)
    throw forbidden("An account token buys credits only for its own account: this one's is another");
}

/**
 * What a pack's checkout would charge, with the lookups the checkout makes (the account and the pack of this app,
 * a pack still sold): the MCP tool's spend and dry run, and the checkout's first step.
 */
export async function quotePackCheckout(ctx: Ctx, packId: string, accountId: string) {
  const pack = await getPack(ctx.em, ctx.app.id, packId);
  const [account] = await sql(ctx.em, 'select 1 from accounts where app_id = $1 and id = $2', [ctx.app.id, accountId]);
  if (!account) throw notFound(`Account ${accountId}`);
  if (pack.archived) throw conflict(`Credit pack ${packId} is archived`, { reason: 'pack_archived' });
  return pack;
}

/**
 * `POST /apps/:appId/credit-packs/:packId/checkout`: a PayPal order for the pack's price (our order's id as its
 * `custom_id`), recorded with the terms it sells. Nothing is granted here: the credits come when PayPal confirms the
 * capture (packs-payments.service.ts).
 */
export async function createPackCheckout(
  ctx: Ctx,
  packId: string,
  input: z.output<typeof S.packCheckoutBody> & { origin?: string; caller: Caller },
) {
  refuseOtherAccount(input.caller, input.account);
  const pack = await quotePackCheckout(ctx, packId, input.account);
  const origin = input.origin || ctx.deps.config.PUBLIC_API_URL;
  const ownPage = input.return_url ?? ctx.app.checkoutUrl;
  const returnUrl = ownPage ?? hostedReturnUrl(origin, ctx.app.id, 'approved');
  if (!returnUrl) throw badRequest('return_url: is required (the app has no checkout_url to return to)');
  const cancelUrl = ownPage ?? hostedReturnUrl(origin, ctx.app.id, 'cancelled') ?? returnUrl;
  const { provider } = await requireProvider(ctx);
  const id = newId('creditPackOrder');
  const order = await withProvider(() =>
    provider.createOrder(
      {
        amount: pack.price,
        currency: pack.currency,
        customId: id,
        description: `${pack.amount} ${pack.pool} credits (pack ${pack.id})`.slice(0, 127),
        returnUrl,
        cancelUrl,
      },
      `${id}:order`,
    ),
  );
  const [row] = await sql<OrderRow>(
    ctx.em,
    `insert into credit_pack_orders (id, app_id, account_id, pack_id, pool_id, amount, price, currency, status,
       provider_order_id, approve_url, return_url)
     values ($1, $2, $3, $4, $5, $6, $7, $8, 'created', $9, $10, $11) returning ${ORDER_COLUMNS}`,
    [
      id,
      ctx.app.id,
      input.account,
      pack.id,
      pack.pool,
      pack.amount,
      pack.price.toFixed(2),
      pack.currency,
      order.id,
      order.approveUrl,
      returnUrl,
    ],
  );
  return presentOrder(row);
}

/** The open and finished top-up orders of an account, newest first (at most 100). */
export async function listAccountOrders(em: EntityManager, appId: string, accountId: string) {
  const rows = await sql<OrderRow>(
    em,
    `select ${ORDER_COLUMNS} from credit_pack_orders where app_id = $1 and account_id = $2
      order by created_at desc, id desc limit 100`,
    [appId, accountId],
  );
  return rows.map(presentOrder);
}
