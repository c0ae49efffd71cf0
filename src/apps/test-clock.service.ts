// The test clock of an app that is not live: its time is real time plus an offset that only moves forward. Moving it
// steps through the app's dates in order: at each, the provider (the stand-in, when the app uses it) bills the
// cycles due, then every account actor of the app runs what is due, and the call answers once all of it ran.
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { badRequest, conflict } from '../errors.js';
import { connectedProvider } from '../payments/payments.service.js';
import { boundedCall } from '../temporal/client.js';
import { WorkflowNotFoundError } from '@temporalio/client';
import { accountDef, accountWorkflowId } from '../../workflows/shared.js';
import { appNow } from './clock.js';
import { clockOf } from '../subscriptions/snapshot.service.js';

/** How far one call may move the clock. */
export const MAX_ADVANCE_MS = 5 * 366 * 86_400_000;
/** How long the call waits for everything due to run before it answers 202 (the rest goes on). */
export const ADVANCE_WAIT_MS = 20_000;
/** How many dates one call steps through (more are grouped). */
const MAX_STEPS = 60;

export async function readClock(ctx: Ctx) {
  const [row] = await sql<{ clock_offset_ms: string }>(ctx.em, 'select clock_offset_ms from apps where id = $1', [
    ctx.app.id,
  ]);
  const clock = await clockOf(ctx.em, { ...ctx.app, clockOffsetMs: Number(row?.clock_offset_ms ?? 0) });
  return {
    now: appNow(clock).toISOString(),
    offset_ms: clock.offsetMs,
    live: clock.live,
  };
}

/** The app's dates between two app times (renewals, pause ends, cancellations, dunning, incentive ends, approvals). */
async function datesBetween(ctx: Ctx, from: Date, to: Date): Promise<number[]> {
  const rows = await sql<{ at: Date }>(
    ctx.em,
    `select d.at from (
       select renews_at as at from subscriptions where app_id = $1 and status in ('active', 'past_due')
       union all select resume_at from subscriptions where app_id = $1 and status = 'paused'
       union all select cancel_at from subscriptions where app_id = $1 and status = 'active'
       union all select grace_ends_at from subscriptions where app_id = $1 and status = 'past_due'
       union all select next_payment_retry_at from subscriptions where app_id = $1 and status = 'past_due'
       union all select (pending_change->>'expiresAt')::timestamptz from subscriptions
         where app_id = $1 and pending_change is not null
       union all select incentive_expires_at from accounts where app_id = $1 and incentive_expires_at is not null
     ) d where d.at > $2 and d.at <= $3 order by d.at`,
    [ctx.app.id, from, to],
  );
  const dates = [...new Set(rows.map((r) => new Date(r.at).getTime()))];
  if (dates.length > MAX_STEPS) {
    const every = Math.ceil(dates.length / MAX_STEPS);
    return dates.filter((_, i) => i % every === every - 1);
  }
  return dates;
}

/** The accounts of the app whose actor may have something to run. */
async function actorAccounts(ctx: Ctx): Promise<string[]> {
  const rows = await sql<{ id: string }>(
    ctx.em,
    `select a.id from accounts a left join subscriptions s on s.app_id = a.app_id and s.account_id = a.id
      where a.app_id = $1 and (s.status in ('active', 'paused', 'past_due')
        or (a.incentive_id is not null and a.incentive_expires_at is not null))`,
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

/** One step: the clock moves to `at`, the provider bills what is due by then, each actor runs its dates. */
async function step(ctx: Ctx, at: number, deadline: number) {
  const offset = Math.max(0, at - Date.now());
  await sql(ctx.em, 'update apps set clock_offset_ms = greatest(clock_offset_ms, $2) where id = $1', [
    ctx.app.id,
    offset,
  ]);
  const provider = await connectedProvider(ctx);
  if (provider) {
    const subs = await sql<{ provider_subscription_id: string }>(
      ctx.em,
      `select provider_subscription_id from subscriptions where app_id = $1 and status in ('active', 'paused', 'past_due')`,
      [ctx.app.id],
    );
    if (subs.length)
      await provider.setTestClock(
        subs.map((s) => s.provider_subscription_id),
        new Date(at),
        'advance',
      );
  }
  const temporal = ctx.deps.temporal;
  const to = new Date(at).toISOString();
  await eachLimited(await actorAccounts(ctx), 8, async (accountId) => {
    const left = deadline - Date.now();
    if (left <= 0) return;
    await boundedCall(temporal.connection, left, () =>
      temporal.client.workflow
        .getHandle(accountWorkflowId(ctx.app.id, accountId))
        .executeUpdate(accountDef.updates.advanceClock, { args: [{ offsetMs: offset, to }] }),
    ).catch((err: unknown) => {
      // No actor runs for it (ended: nothing over time), or it did not finish within the wait: the clock still moved.
      if (!(err instanceof WorkflowNotFoundError)) ctx.deps.logger.debug({ err, accountId }, 'test clock: actor slow');
    });
  });
}

/**
 * Moves the app's clock forward to `to`, stepping through its dates. 200 once every timer due by then ran; 202 when
 * that took longer than ADVANCE_WAIT_MS (the steps go on in the background; the clock reaches `to`).
 */
export async function advanceClock(
  ctx: Ctx,
  to: Date,
): Promise<{ status: 200 | 202; body: Awaited<ReturnType<typeof readClock>> & { pending: boolean } }> {
  const clock = await clockOf(ctx.em, ctx.app);
  if (clock.live)
    throw conflict(
      ctx.app.readOnly
        ? 'The demo app has no test clock: its time is real time'
        : 'A live app has no test clock: its payments are live and its time is real time',
      { reason: 'live_app' },
    );
  const now = appNow(clock);
  if (to.getTime() <= now.getTime()) throw badRequest(`to: must be after the clock's now (${now.toISOString()})`);
  if (to.getTime() - now.getTime() > MAX_ADVANCE_MS)
    throw badRequest('to: may be at most five years ahead of the clock');
  const deadline = Date.now() + ADVANCE_WAIT_MS;
  const dates = [...(await datesBetween(ctx, now, to)), to.getTime()];
  const run = (async () => {
    for (const at of [...new Set(dates)]) await step(ctx, at, Math.max(deadline, Date.now() + 60_000));
  })();
  const finished = await Promise.race([
    run.then(() => true),
    new Promise<false>((r) => setTimeout(() => r(false), Math.max(0, deadline - Date.now()))),
  ]);
  if (!finished)
    run.catch((err: unknown) => ctx.deps.logger.warn({ err, app: ctx.app.id }, 'test clock: advance failed'));
  return {
    status: finished ? 200 : 202,
    body: { ...(await readClock({ ...ctx, em: ctx.em.fork() })), pending: !finished },
  };
}
