// The test clock of an app that is not live: its time is real time plus an offset that only moves forward. Moving it
// steps through the app's dates in order (a renewal, a payment retry, the end of a grace period or a pause, ...): at
// each, the provider (the stand-in) bills the cycles due by then and notifies, the app's clock moves there, and every
// account actor of the app runs what is due; the dates that step makes (the next renewal, the provider's next retry)
// are looked up again before the next step. Then the reservation and checkout expiry workflows hear of the new time,
// and the call answers once everything due by `to` ran (or 202 after TEST_CLOCK_WAIT_MS, the rest going on).
import { WorkflowNotFoundError, WorkflowUpdateStage } from '@temporalio/client';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { badRequest, conflict } from '../errors.js';
import { connectedProvider, withProvider } from '../payments/payments.service.js';
import { boundedCall } from '../temporal/client.js';
import type { TemporalCommand } from '../temporal/outbox.js';
import {
  accountDef,
  accountWorkflowId,
  checkoutDef,
  checkoutWorkflowId,
  CHECKOUT_TTL_MS,
  reservationExpiryDef,
  reservationExpiryWorkflowId,
} from '../../workflows/shared.js';
import { addMonths, appNow } from './clock.js';
import { clockOffsetOf } from './clock.service.js';
import { clockOf } from '../subscriptions/snapshot.service.js';
import { actorFact } from '../subscriptions/actor-facts.js';
import { checkoutWorkflowStart } from '../checkouts/checkouts.service.js';
import { reservationExpiryCommand } from '../usage/reservations.service.js';

/** How far one call may move the clock: five years. */
export const MAX_ADVANCE_MONTHS = 60;
/** After the answer (a 202), how long the steps still wait for the actors before they only hand them the time. */
const BACKGROUND_WAIT_MS = 40_000;
/** How many of the app's dates one call steps through one by one (past them, one step to `to`). */
const MAX_STEPS = 200;
/** Actors and expiry workflows told at once. */
const PARALLEL = 8;

/** Advances running in this process, per app: a second one for the same app waits its turn with a 409. */
const running = new Map<string, Promise<void>>();

export async function readClock(ctx: Ctx) {
  const offsetMs = await clockOffsetOf(ctx.em, ctx.app.id);
  const clock = await clockOf(ctx.em, { ...ctx.app, clockOffsetMs: offsetMs });
  return {
    now: appNow(clock).toISOString(),
    offset_ms: clock.offsetMs,
    live: clock.live,
  };
}

/**
 * The app's earliest date after `from`, up to `to` (renewals, retries, grace and pause ends, approvals, incentives,
 * credit grants' expiry: a plan's period of credits ends there and the next is granted).
 */
async function nextDate(ctx: Ctx, from: number, to: number): Promise<number | null> {
  const [row] = await sql<{ at: Date | null }>(
    ctx.em,
    `select min(d.at) as at from (
       select renews_at as at from subscriptions where app_id = $1 and status in ('active', 'past_due')
       union all select resume_at from subscriptions where app_id = $1 and status = 'paused'
       union all select cancel_at from subscriptions where app_id = $1 and status = 'active'
       union all select grace_ends_at from subscriptions
         where app_id = $1 and status = 'past_due' and dunning_restore_plan_id is null
       union all select next_payment_retry_at from subscriptions where app_id = $1 and status = 'past_due'
       union all select (pending_change->>'expiresAt')::timestamptz from subscriptions
         where app_id = $1 and pending_change is not null
       union all select incentive_expires_at from accounts where app_id = $1 and incentive_expires_at is not null
       union all select expires_at from credit_grants where app_id = $1 and remaining > 0 and expires_at is not null
     ) d where d.at > $2 and d.at <= $3`,
    [ctx.app.id, new Date(from), new Date(to)],
  );
  return row?.at ? new Date(row.at).getTime() : null;
}

/** The accounts of the app whose actor may have something to run. */
async function actorAccounts(ctx: Ctx): Promise<string[]> {
  const rows = await sql<{ id: string }>(
    ctx.em,
    `select a.id from accounts a left join subscriptions s on s.app_id = a.app_id and s.account_id = a.id
      where a.app_id = $1 and (s.status in ('active', 'paused', 'past_due')
        or (a.incentive_id is not null and a.incentive_expires_at is not null)
        or exists (select 1 from credit_grants g where g.app_id = a.app_id and g.account_id = a.id and g.remaining > 0
                     and g.expires_at is not null)
        or exists (select 1 from plan_entitlements pe join entitlements e on e.app_id = pe.app_id and
                     e.id = pe.entitlement_id and e.type = 'credits'
                   where pe.app_id = a.app_id and pe.plan_id = a.plan_id and pe.max > 0))`,
    [ctx.app.id],
  );
  return rows.map((r) => r.id);
}

/** Runs `fn` over `items`, `n` at a time. */
async function eachLimited<T>(items: T[], n: number, fn: (item: T) => Promise<void>) {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(n, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

/** Moves the app's clock (forward only) and waits until every API process dropped its old app record. */
async function moveClock(ctx: Ctx, at: number) {
  const [row] = await sql<{ change: string }>(
    ctx.em,
    `update apps set clock_offset_ms = greatest(clock_offset_ms, $2) where id = $1
     returning id || ' ' || pg_current_xact_id()::text as change`,
    [ctx.app.id, Math.max(0, Math.round(at - Date.now()))],
  );
  if (row) await ctx.deps.credentials.confirm(row.change);
  return clockOffsetOf(ctx.em, ctx.app.id);
}

/**
 * Hands an actor the app's new time and waits (until `waitUntil`) for every timer due by `to` to run; past
 * `waitUntil` only until it took the time. An actor that is not running (it ended with nothing over time, or was
 * lost) is started first.
 */
async function tellActor(ctx: Ctx, accountId: string, offsetMs: number, to: string, waitUntil: number) {
  const temporal = ctx.deps.temporal;
  const handle = temporal.client.workflow.getHandle(accountWorkflowId(ctx.app.id, accountId));
  const ask = () => {
    const left = waitUntil - Date.now();
    const input = { args: [{ offsetMs, to }] as [{ offsetMs: number; to: string }] };
    return left > 1000
      ? boundedCall(temporal.connection, left, () => handle.executeUpdate(accountDef.updates.advanceClock, input))
      : boundedCall(temporal.connection, 5_000, () =>
          handle.startUpdate(accountDef.updates.advanceClock, { ...input, waitForStage: WorkflowUpdateStage.ACCEPTED }),
        );
  };
  try {
    await ask();
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) {
      ctx.deps.logger.debug({ err, accountId }, 'test clock: an actor did not finish within the wait');
      return;
    }
    await ctx.deps.outbox.carryOut(actorFact(ctx.app.id, accountId, { kind: 'adopted' }));
    await ask().catch((e: unknown) => ctx.deps.logger.debug({ err: e, accountId }, 'test clock: actor slow'));
  }
}

/** One step: the provider bills what is due by `at`, the clock moves there, each actor runs its dates. */
async function step(ctx: Ctx, at: number, waitUntil: number) {
  const provider = await connectedProvider(ctx);
  const subs = await sql<{ account_id: string; provider_subscription_id: string }>(
    ctx.em,
    `select account_id, provider_subscription_id from subscriptions
      where app_id = $1 and status in ('active', 'paused', 'past_due')`,
    [ctx.app.id],
  );
  // The provider first: by the time an actor can see the new time, the cycles due by then are billed and notified.
  const billed =
    provider && subs.length
      ? await withProvider(() =>
          provider.setTestClock(
            subs.map((s) => s.provider_subscription_id),
            new Date(at),
            'advance',
          ),
        )
      : [];
  const offsetMs = await moveClock(ctx, at);
  // What the provider billed reaches each actor before the new time does (its notifications travel through the
  // outbox too, and may come later: reading the provider twice changes nothing).
  const accountOf = new Map(subs.map((s) => [s.provider_subscription_id, s.account_id]));
  for (const b of billed.filter((x) => x.billed > 0 && accountOf.has(x.id)))
    await ctx.deps.outbox
      .carryOut(
        actorFact(ctx.app.id, accountOf.get(b.id)!, {
          kind: 'provider_notified',
          eventType: 'TEST_CLOCK.BILLED',
          notificationId: null,
        }),
      )
      .catch((err: unknown) => ctx.deps.logger.debug({ err }, 'test clock: fact not delivered'));
  const to = new Date(at).toISOString();
  await eachLimited(await actorAccounts(ctx), PARALLEL, (accountId) =>
    tellActor(ctx, accountId, offsetMs, to, waitUntil),
  );
}

/** Tells a waiting workflow the new time, starting it when its start is still on its way (it then starts on it). */
async function tellWaiting(
  ctx: Ctx,
  signal: () => Promise<void>,
  start: () => TemporalCommand,
  result: (() => Promise<unknown>) | null,
  waitUntil: number,
) {
  const connection = ctx.deps.temporal.connection;
  try {
    await boundedCall(connection, 5_000, signal);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) return;
    await ctx.deps.outbox.carryOut(start()).catch(() => undefined);
  }
  const left = waitUntil - Date.now();
  if (result && left > 0) await boundedCall(connection, left, result).catch(() => undefined);
}

/**
 * Reservation and checkout expiry follow the clock: their workflows get the new time, and those whose deadline it
 * passed are waited for (their release or expiry is done when the call answers).
 */
async function moveExpiries(ctx: Ctx, offsetMs: number, to: number, waitUntil: number) {
  const wf = ctx.deps.temporal.client.workflow;
  const reservations = await sql<{
    id: string;
    account_id: string;
    entitlement_id: string;
    amount: string;
    expires_at: Date;
  }>(
    ctx.em,
    `select id, account_id, entitlement_id, amount, expires_at from usage_reservations
      where app_id = $1 and status = 'held'`,
    [ctx.app.id],
  );
  await eachLimited(reservations, PARALLEL, async (r) => {
    const handle = wf.getHandle(reservationExpiryWorkflowId(ctx.app.id, r.id));
    await tellWaiting(
      ctx,
      () => handle.signal(reservationExpiryDef.signals.clockMoved, offsetMs),
      () =>
        reservationExpiryCommand({
          appId: ctx.app.id,
          accountId: r.account_id,
          entitlementId: r.entitlement_id,
          reservationId: r.id,
          amount: Number(r.amount),
          expiresAt: new Date(r.expires_at).toISOString(),
          offsetMs,
        }),
      new Date(r.expires_at).getTime() <= to ? () => handle.result() : null,
      waitUntil,
    );
  });
  const checkouts = await sql<{
    id: string;
    account_id: string | null;
    offer_id: string | null;
    plan_id: string;
    created_at: Date;
    expires_at: Date | null;
  }>(
    ctx.em,
    `select id, account_id, offer_id, plan_id, created_at, expires_at from checkouts where app_id = $1 and status = 'created'`,
    [ctx.app.id],
  );
  await eachLimited(checkouts, PARALLEL, async (c) => {
    const handle = wf.getHandle(checkoutWorkflowId(c.id));
    const expiresAt = c.expires_at
      ? new Date(c.expires_at)
      : new Date(new Date(c.created_at).getTime() + CHECKOUT_TTL_MS);
    await tellWaiting(
      ctx,
      () => handle.signal(checkoutDef.signals.clockMoved, offsetMs),
      () =>
        checkoutWorkflowStart(
          ctx.deps,
          ctx.app.id,
          {
            id: c.id,
            accountId: c.account_id,
            offerId: c.offer_id,
            planId: c.plan_id,
            createdAt: new Date(c.created_at),
            expiresAt,
          },
          offsetMs,
        ),
      expiresAt.getTime() <= to ? () => handle.result() : null,
      waitUntil,
    );
  });
}

/**
 * Moves the app's clock forward to `to`, stepping through its dates. 200 once every timer due by then ran; 202 when
 * that took longer than TEST_CLOCK_WAIT_MS (the steps go on in the background: the clock reaches `to` within a
 * minute). Live apps and the demo: 409; `to` not after the clock's now, or more than five years ahead: 400; another
 * advance of the same app still running: 409.
 */
export async function advanceClock(
  ctx: Ctx,
  to: Date,
): Promise<{ status: 200 | 202; body: Awaited<ReturnType<typeof readClock>> & { pending: boolean } }> {
  const clock = await clockOf(ctx.em, { ...ctx.app, clockOffsetMs: await clockOffsetOf(ctx.em, ctx.app.id) });
  if (clock.live)
    throw conflict(
      ctx.app.readOnly
        ? 'The demo app has no test clock: its time is real time'
        : 'A live app has no test clock: its payments are live and its time is real time',
      { reason: 'live_app' },
    );
  const now = appNow(clock);
  if (to.getTime() <= now.getTime()) throw badRequest(`to: must be after the clock's now (${now.toISOString()})`);
  if (to.getTime() > addMonths(now, MAX_ADVANCE_MONTHS).getTime())
    throw badRequest(`to: may be at most five years after the clock's now (${now.toISOString()})`);
  if (running.has(ctx.app.id))
    throw conflict("The app's test clock is being moved by another call; try again once it is done", {
      reason: 'advancing',
    });
  const answerBy = Date.now() + ctx.deps.config.TEST_CLOCK_WAIT_MS;
  const waitUntil = answerBy + BACKGROUND_WAIT_MS;
  // Its own entity manager: the steps may go on after the request's is gone.
  const bg: Ctx = { ...ctx, em: ctx.deps.orm.em.fork() };
  const target = to.getTime();
  const run = (async () => {
    let cur = now.getTime();
    for (let steps = 0; cur < target; steps++) {
      const at = (steps < MAX_STEPS ? await nextDate(bg, cur, target) : null) ?? target;
      await step(bg, at, waitUntil);
      cur = at;
    }
    await moveExpiries(bg, await clockOffsetOf(bg.em, ctx.app.id), target, waitUntil);
  })().finally(() => running.delete(ctx.app.id));
  running.set(ctx.app.id, run);
  const finished = await Promise.race([
    run.then(() => true),
    new Promise<false>((r) => setTimeout(() => r(false), Math.max(0, answerBy - Date.now()))),
  ]);
  if (!finished)
    run.catch((err: unknown) => ctx.deps.logger.warn({ err, app: ctx.app.id }, 'test clock: advance failed'));
  return {
    status: finished ? 200 : 202,
    body: { ...(await readClock({ ...ctx, em: ctx.em.fork() })), pending: !finished },
  };
}
