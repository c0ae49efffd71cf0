import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { findAddon, findIncentive, findPlan } from '../catalog/catalog.service.js';
import { Plan } from '../catalog/catalog.entities.js';
import type { Ctx } from '../context.js';
import { flushOrConflict } from '../db/conflict.js';
import { sql } from '../db/sql.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import type { Deps } from '../deps.js';
import { changedFields } from '../events/events.service.js';
import { mintAccountToken } from '../http/account-token.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { pageOf, pageOffset, type PageQuery } from '../http/pagination.js';
import { iso } from '../time.js';
import type { IncentiveExpiryInput } from '../../workflows/shared.js';
import { actorFact } from '../subscriptions/actor-facts.js';
import { Account, AccountAddon, type IAccount } from './accounts.entities.js';
import { Subscription } from '../subscriptions/subscriptions.entities.js';
import { presentSubscription } from '../subscriptions/subscriptions.present.js';
import type * as S from './accounts.schemas.js';
import { presentAccount, presentAccountDetail } from './accounts.present.js';

export type AccountView = ReturnType<typeof presentAccount>;

/**
 * The single-account read: the record with its own add-ons and its subscription (null until the
 * account buys one). Also `data.object` of every account event.
 */
export async function accountDetail(em: EntityManager, a: IAccount) {
  const [addons, sub] = await Promise.all([
    em.find(AccountAddon, { appId: a.appId, accountId: a.id }, { orderBy: { createdAt: 'asc', addonId: 'asc' } }),
    em.findOne(Subscription, { appId: a.appId, accountId: a.id }),
  ]);
  return presentAccountDetail(
    a,
    addons.map((x) => x.addonId),
    sub ? presentSubscription(sub) : null,
  );
}

export type AccountDetail = Awaited<ReturnType<typeof accountDetail>>;

export async function findAccount(em: EntityManager, appId: string, id: string): Promise<IAccount> {
  const a = await em.findOne(Account, { appId, id });
  if (!a) throw notFound(`Account ${id}`);
  return a;
}

/** The app's free plan: the first plan, in creation order, marked `isFree`. */
export async function freePlanOf(em: EntityManager, appId: string) {
  return em.findOne(Plan, { appId, isFree: true }, { orderBy: { seq: 'asc' } });
}

// ---- incentive expiry (the account actor) ----------------------------------------------------------------

interface IncentiveTiming {
  incentiveId: string | null;
  expiresAt: Date | null;
}
const timingOf = (a: IAccount): IncentiveTiming => ({
  incentiveId: a.incentiveId ?? null,
  expiresAt: a.incentiveExpiresAt ?? null,
});

/**
 * After a change of an account's incentive or its expiry: the account's actor, which removes the incentive at its
 * end, hears of it (a fact through the outbox) and re-targets its date, or stops waiting for it.
 */
function scheduleExpiry(
  t: Tx,
  appId: string,
  accountId: string,
  before: IncentiveTiming | null,
  after: IncentiveTiming | null,
) {
  const wasTimed = !!(before?.incentiveId && before.expiresAt);
  const isTimed = !!(after?.incentiveId && after.expiresAt);
  const same =
    wasTimed &&
    isTimed &&
    before!.incentiveId === after!.incentiveId &&
    before!.expiresAt!.getTime() === after!.expiresAt!.getTime();
  if ((wasTimed || isTimed) && !same) t.temporal(actorFact(appId, accountId, { kind: 'account_changed' }));
}

/**
 * An account put on a plan that grants credits: its actor hears of it (a fact through the outbox, starting it) and
 * grants the first period now, then each month at its dates (src/credits/credits-time.service.ts).
 */
async function startCredits(t: Tx, appId: string, accountId: string, before: string | null, plan: string) {
  if (before === plan) return;
  const [grants] = await sql<{ n: string }>(
    t.em,
    `select count(*) as n from plan_entitlements pe join entitlements e on e.app_id = pe.app_id and
       e.id = pe.entitlement_id and e.type = 'credits' where pe.app_id = $1 and pe.plan_id = $2 and pe.max > 0`,
    [appId, plan],
  );
  if (Number(grants?.n ?? 0) > 0) t.temporal(actorFact(appId, accountId, { kind: 'account_changed' }));
}

/**
 * Emits `account.updated` (changed fields in `previous`) and the specific events for a plan or
 * incentive change.
 */
function emitAccountChange(t: Tx, appId: string, before: AccountDetail, after: AccountDetail) {
  const { updated_at: _u1, ...b } = before;
  const { updated_at: _u2, ...a } = after;
  const previous = changedFields(b as Record<string, unknown>, a as Record<string, unknown>);
  if (Object.keys(previous).length === 0) return;
  t.emit(appId, 'account.updated', { object: after, previous });
  if ('plan' in previous) t.emit(appId, 'account.plan_changed', { object: after, previous: { plan: before.plan } });
  if ('incentive' in previous) {
    t.emit(appId, after.incentive ? 'account.incentive_applied' : 'account.incentive_removed', {
      object: after,
      previous: { incentive: before.incentive },
    });
  }
}

// ---- CRUD -------------------------------------------------------------------------------------------

export function createAccount(ctx: Ctx, input: z.output<typeof S.createAccountBody>) {
  return inTransaction(ctx.deps, ctx.em, async (t) => {
    let planId = input.plan;
    if (planId === undefined) {
      const free = await freePlanOf(t.em, ctx.app.id);
      if (!free) throw badRequest('plan: is required (the app has no free plan to default to)');
      planId = free.id;
    } else await findPlan(t.em, ctx.app.id, planId);
    if (input.incentive) await findIncentive(t.em, ctx.app.id, input.incentive);
    if (input.incentive_expires_at && !input.incentive) throw badRequest('incentive_expires_at: needs an incentive');
    const account = t.em.create(Account, {
      appId: ctx.app.id,
      id: input.id,
      name: input.name ?? null,
      planId,
      incentiveId: input.incentive ?? null,
      incentiveExpiresAt: input.incentive ? (input.incentive_expires_at ?? null) : null,
      offerId: null,
    });
    await flushOrConflict(t.em, `Account ${input.id} already exists`);
    const view = await accountDetail(t.em, account);
    t.emit(ctx.app.id, 'account.created', { object: view });
    scheduleExpiry(t, ctx.app.id, account.id, null, timingOf(account));
    await startCredits(t, ctx.app.id, account.id, null, account.planId);
    return view;
  });
}

export async function getAccount(ctx: Ctx, id: string) {
  return accountDetail(ctx.em, await findAccount(ctx.em, ctx.app.id, id));
}

/**
 * Runs a change to an account in one transaction (the row locked, so concurrent changes queue up),
 * then emits its events and queues its workflow commands.
 */
export function changeAccount(
  ctx: Pick<Ctx, 'em' | 'deps'> & { app: { id: string } },
  id: string,
  change: (t: Tx, account: IAccount) => Promise<void>,
  opts: {
    alsoEmit?: (t: Tx, after: AccountDetail) => void;
    /** Set by the expiry workflow's own removal, which must not signal that workflow back. */
    byExpiryWorkflow?: boolean;
  } = {},
) {
  return inTransaction(ctx.deps, ctx.em, async (t) => {
    const account = await t.em.findOne(Account, { appId: ctx.app.id, id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!account) throw notFound(`Account ${id}`);
    const before = await accountDetail(t.em, account);
    const timing = timingOf(account);
    await change(t, account);
    await t.em.flush();
    const after = await accountDetail(t.em, account);
    emitAccountChange(t, ctx.app.id, before, after);
    opts.alsoEmit?.(t, after);
    if (!opts.byExpiryWorkflow) scheduleExpiry(t, ctx.app.id, id, timing, timingOf(account));
    await startCredits(t, ctx.app.id, id, before.plan, account.planId);
    return after;
  });
}

export function updateAccount(ctx: Ctx, id: string, input: z.output<typeof S.updateAccountBody>) {
  return changeAccount(ctx, id, async (t, account) => {
    if (input.name !== undefined) account.name = input.name;
    if (input.plan !== undefined) account.planId = (await findPlan(t.em, ctx.app.id, input.plan)).id;
    if (input.incentive !== undefined) {
      if (input.incentive !== null) await findIncentive(t.em, ctx.app.id, input.incentive);
      account.incentiveId = input.incentive;
    }
    if (input.incentive_expires_at !== undefined) account.incentiveExpiresAt = input.incentive_expires_at;
    if (!account.incentiveId) {
      // Removed in the same body: the body is wrong (the document says so); the account has none: its state is.
      if (input.incentive_expires_at)
        throw input.incentive === null
          ? badRequest('incentive_expires_at: needs an incentive')
          : conflict('incentive_expires_at: the account has no incentive to end (give `incentive` too)');
      account.incentiveExpiresAt = null; // an expiry without an incentive means nothing
    }
  });
}

export function removeIncentive(ctx: Ctx, id: string) {
  return changeAccount(ctx, id, async (_t, account) => {
    account.incentiveId = null;
    account.incentiveExpiresAt = null;
  });
}

/** Deletes the account with its counters and own add-ons; usage history stays for analytics. */
export function deleteAccount(ctx: Ctx, id: string) {
  return inTransaction(ctx.deps, ctx.em, async (t) => {
    const account = await findAccount(t.em, ctx.app.id, id);
    const view = await accountDetail(t.em, account);
    const billed = await t.em.findOne(Subscription, { appId: ctx.app.id, accountId: id }, { fields: ['status'] });
    await t.em.nativeDelete(Account, { appId: ctx.app.id, id });
    t.emit(ctx.app.id, 'account.deleted', { object: view });
    // Its actor (if it has one) hears of it and ends: the account has nothing over time any more.
    if ((billed && billed.status !== 'cancelled') || account.incentiveExpiresAt)
      t.temporal(actorFact(ctx.app.id, id, { kind: 'account_changed' }));
    return view;
  });
}

/**
 * Called by the account actor at `expiresAt`: removes the incentive only if the account still has exactly that
 * incentive and expiry (a later change re-targets the actor instead).
 */
export async function expireAccountIncentive(deps: Deps, input: IncentiveExpiryInput): Promise<{ removed: boolean }> {
  const ctx = { em: deps.orm.em.fork(), deps, app: { id: input.appId } };
  let removed = false;
  try {
    await changeAccount(
      ctx,
      input.accountId,
      async (_t, account) => {
        if (
          account.incentiveId !== input.incentiveId ||
          account.incentiveExpiresAt?.getTime() !== Date.parse(input.expiresAt)
        )
          return;
        account.incentiveId = null;
        account.incentiveExpiresAt = null;
        removed = true;
      },
      { byExpiryWorkflow: true },
    );
  } catch (err) {
    if ((err as { status?: number }).status === 404) return { removed: false }; // account deleted meanwhile
    throw err;
  }
  return { removed };
}

// ---- own add-ons -------------------------------------------------------------------------------------

/** Gives the account an add-on of its own; emits `account.addon_granted` (and `account.updated`). */
export function grantAddon(ctx: Ctx, id: string, addonId: string, source = 'api') {
  return changeAccount(
    ctx,
    id,
    async (t, account) => {
      await findAddon(t.em, ctx.app.id, addonId);
      const inserted = await sql(
        t.em,
        'insert into account_addons (app_id, account_id, addon_id, source) values ($1, $2, $3, $4) on conflict do ' +
          'nothing returning 1',
        [ctx.app.id, account.id, addonId, source],
      );
      if (inserted.length === 0) throw conflict(`Account ${id} already owns add-on ${addonId}`);
    },
    {
      alsoEmit: (t, after) => t.emit(ctx.app.id, 'account.addon_granted', { object: after, addon_id: addonId, source }),
    },
  );
}

export function revokeAddon(ctx: Ctx, id: string, addonId: string) {
  return changeAccount(ctx, id, async (t, account) => {
    const removed = await sql(
      t.em,
      'delete from account_addons where app_id = $1 and account_id = $2 and addon_id = $3 returning 1',
      [ctx.app.id, account.id, addonId],
    );
    if (removed.length === 0) throw notFound(`Add-on ${addonId} of account ${id}`);
  });
}

// ---- tokens --------------------------------------------------------------------------------------------

export async function createAccountToken(ctx: Ctx, id: string, ttlSeconds: number) {
  await findAccount(ctx.em, ctx.app.id, id);
  const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + ttlSeconds * 1000);
  return {
    account_id: id,
    token: mintAccountToken(ctx.app.id, id, ctx.app.apiKey, expiresAt),
    expires_at: iso(expiresAt)!,
  };
}

// ---- lists -----------------------------------------------------------------------------------------------

// On the app's clock ($1 is the app): an incentive whose end a test clock passed is over, even before the account's
// actor removes it.
const ACTIVE = `incentive_id is not null and (incentive_expires_at is null or incentive_expires_at >
  now() + make_interval(secs => (select clock_offset_ms from apps where id = $1) / 1000.0))`;

async function pageAccounts(em: EntityManager, appId: string, where: string[], params: unknown[], q: PageQuery) {
  const clause = ['app_id = $1', ...where].join(' and ');
  const all = [appId, ...params];
  const [rows, total] = await Promise.all([
    sql<{ app_id: string; id: string }>(
      em,
      `select app_id, id from accounts where ${clause} order by created_at desc, id limit ${q.per_page} offset
        ${pageOffset(q)}`,
      all,
    ),
    sql<{ n: string }>(em, `select count(*) as n from accounts where ${clause}`, all),
  ]);
  const accounts = rows.length ? await em.find(Account, { appId, id: { $in: rows.map((r) => r.id) } }) : [];
  const byId = new Map(accounts.map((a) => [a.id, a]));
  return pageOf(
    rows.map((r) => presentAccount(byId.get(r.id)!)),
    Number(total[0].n),
    q,
  );
}

/** Search, newest first: `q` matches the id or the name (case-insensitive substring). */
export function searchAccounts(ctx: Ctx, q: z.output<typeof S.searchQuery>) {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (cond: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(cond(`$${params.length + 1}`));
  };
  if (q.q) add((n) => `(id ilike ${n} or name ilike ${n})`, `%${q.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  if (q.plan) add((n) => `plan_id = ${n}`, q.plan);
  if (q.incentive) add((n) => `incentive_id = ${n}`, q.incentive);
  if (q.offer) add((n) => `offer_id = ${n}`, q.offer);
  if (q.has_incentive !== undefined) where.push(q.has_incentive ? `(${ACTIVE})` : `not (${ACTIVE})`);
  return pageAccounts(ctx.em, ctx.app.id, where, params, q);
}

/** Accounts whose incentive currently applies (expired ones are left out even before removal). */
export function accountsWithIncentive(ctx: Ctx, q: z.output<typeof S.withIncentiveQuery>) {
  return q.incentive
    ? pageAccounts(ctx.em, ctx.app.id, [ACTIVE, 'incentive_id = $2'], [q.incentive], q)
    : pageAccounts(ctx.em, ctx.app.id, [ACTIVE], [], q);
}

export async function accountsOnPlan(ctx: Ctx, planId: string, q: PageQuery) {
  await findPlan(ctx.em, ctx.app.id, planId);
  return pageAccounts(ctx.em, ctx.app.id, ['plan_id = $2'], [planId], q);
}

export async function countAccounts(ctx: Ctx) {
  const rows = await sql<{ n: string }>(ctx.em, 'select count(*) as n from accounts where app_id = $1', [ctx.app.id]);
  return { count: Number(rows[0].n) };
}
