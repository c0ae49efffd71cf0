// Reading checkouts (one, a page), an operator completing or expiring one now, and the return page's view of a
// buyer who came back from the provider.
import { WorkflowNotFoundError } from '@temporalio/client';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import type { Deps } from '../deps.js';
import { conflict, notFound } from '../errors.js';
import { newestFirstPage } from '../http/pagination.js';
import { asHttpError } from '../payments/payments.service.js';
import { liveSubscription } from '../subscriptions/subscriptions.service.js';
import { clockOffsetOf } from '../apps/clock.service.js';
import { boundedCall, REQUEST_TEMPORAL_TIMEOUT_MS } from '../temporal/client.js';
import { checkoutDef, checkoutWorkflowId } from '../../workflows/shared.js';
import { Checkout } from './checkouts.entities.js';
import type * as S from './checkouts.schemas.js';
import { presentCheckout } from './checkouts.present.js';

import { checkoutWorkflowStart } from './checkout-creation.service.js';
import { buyerAccountId, checkCheckout, expireCheckout } from './checkout-completion.service.js';

export async function findCheckout(em: EntityManager, appId: string, id: string) {
  const c = await em.findOne(Checkout, { appId, id });
  if (!c) throw notFound(`Checkout ${id}`);
  return c;
}

export async function getCheckout(ctx: Ctx, id: string) {
  return presentCheckout(await findCheckout(ctx.em, ctx.app.id, id));
}

/** The app's checkouts, newest first, a page at a time (keyset on `created_at`, then the id), by offer and status. */
export async function listCheckouts(ctx: Ctx, q: z.output<typeof S.listQuery>) {
  const filters = { app_id: ctx.app.id, offer_id: q.offer, status: q.status };
  const page = await newestFirstPage<Record<string, unknown> & { id: string }>(ctx.em, 'checkouts', '*', filters, q);
  return { data: page.rows.map((row) => presentCheckout(ctx.em.map(Checkout, row))), next_cursor: page.next_cursor };
}

/**
 * Asks the checkout's workflow to check with the provider now and answers the checkout: `created`
 * while the provider is still activating, `completed` once applied (exactly once, however often it
 * is called and whatever notification came first).
 */
export async function completeCheckout(ctx: Ctx, id: string) {
  const c = await findCheckout(ctx.em, ctx.app.id, id);
  if (c.status !== 'created') return presentCheckout(c);
  const wf = ctx.deps.temporal.client.workflow;
  const ask = () =>
    boundedCall(ctx.deps.temporal.connection, COMPLETE_WAIT_MS, () =>
      wf.getHandle(checkoutWorkflowId(id)).executeUpdate(checkoutDef.updates.checkNow),
    );
  // The workflow may have just finished (applied, cancelled or expired the checkout) as the update
  // arrived: then there is nothing to check and nothing to warn about.
  const settled = async () => {
    const now = await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id);
    return now.status === 'created' ? null : now;
  };
  let failure: unknown;
  try {
    await ask();
    return presentCheckout(await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id));
  } catch (err) {
    failure = err;
  }
  const done = await settled();
  if (done) return presentCheckout(done);
  if (failure instanceof WorkflowNotFoundError) {
    // Its start still waits in the outbox (it runs after the answer that created the checkout): start
    // it now with the same command (the outbox row then finds it there), and ask it.
    try {
      await ctx.deps.outbox.carryOut(
        checkoutWorkflowStart(ctx.deps, ctx.app.id, c, await clockOffsetOf(ctx.em, ctx.app.id)),
      );
      await ask();
      return presentCheckout(await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id));
    } catch (err) {
      failure = err;
    }
    const now = await settled();
    if (now) return presentCheckout(now);
  }
  // No answer from the workflow (no worker, Temporal unreachable...): check here, with the same
  // once-only apply; the workflow finds the checkout completed when it runs.
  ctx.deps.logger.warn(
    { err: failure, checkout: id },
    'checkout workflow did not answer; checking with the provider directly',
  );
  await checkCheckout(ctx.deps, { appId: ctx.app.id, checkoutId: id }).catch((e: unknown) => {
    throw asHttpError(e);
  });
  return presentCheckout(await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id));
}

/**
 * Ends a checkout whose buyer has not paid: what the 24-hour expiry does, now (Stripe's "expire a Checkout Session"),
 * so that, say, the plan it sells can be deleted. The provider is asked first, with the same once-only apply as
 * `complete`: a checkout its buyer already approved is completed, not expired (409 naming its status). Then the row
 * moves from `created` to `expired` in one compare-and-set, so a completion racing it wins or loses whole, and the
 * checkout's workflow is nudged to end (it ends at its next check anyway: it finds the row no longer waiting).
 * Expiring an expired checkout answers it again.
 */
export async function expireCheckoutNow(ctx: Ctx, id: string) {
  const c = await findCheckout(ctx.em, ctx.app.id, id);
  if (c.status === 'created') {
    const seen = await checkCheckout(ctx.deps, { appId: ctx.app.id, checkoutId: id }).catch((e: unknown) => {
      throw asHttpError(e);
    });
    // Still waiting here, but approved at the provider (PayPal activates an approved subscription a moment later):
    // the buyer has paid or is about to, so it is not expired. Only a subscription the buyer has not approved yet
    // (or none at all) is.
    if (seen.status === 'created' && c.providerSubscriptionId && seen.providerStatus !== 'APPROVAL_PENDING')
      throw conflict(
        `Checkout ${id} cannot be expired: the provider reports its subscription ${seen.providerStatus}; it ` +
          'completes once the provider activates it',
        { reason: 'approved', provider_status: seen.providerStatus },
      );
    await expireCheckout(ctx.deps, id);
    await boundedCall(ctx.deps.temporal.connection, REQUEST_TEMPORAL_TIMEOUT_MS, () =>
      ctx.deps.temporal.client.workflow.getHandle(checkoutWorkflowId(id)).signal(checkoutDef.signals.providerNotified),
    ).catch(() => undefined);
  }
  const now = await findCheckout(ctx.deps.orm.em.fork(), ctx.app.id, id);
  if (now.status !== 'expired')
    throw conflict(`Checkout ${id} is ${now.status}; only a checkout waiting for its buyer can be expired`, {
      reason: now.status,
    });
  return presentCheckout(now);
}

/** How long `complete` waits for the checkout workflow's answer before checking by itself. */
const COMPLETE_WAIT_MS = 8_000;

export async function returnPageState(
  deps: Deps,
  appId: string,
  query: { subscription_id?: string; outcome?: 'cancelled' },
): Promise<{ appName: string | null; state: 'completed' | 'approved' | 'cancelled' | 'duplicate' }> {
  const [app] = await sql<{ name: string }>(deps.orm.em.fork(), 'select name from apps where id = $1', [appId]);
  const appName = app?.name ?? null;
  if (query.outcome === 'cancelled') return { appName, state: 'cancelled' };
  await nudgeReturnedCheckout(deps, appId, query.subscription_id);
  const em = deps.orm.em.fork();
  const c = query.subscription_id
    ? await em.findOne(Checkout, { appId, providerSubscriptionId: query.subscription_id })
    : null;
  if (c?.status === 'completed') return { appName, state: 'completed' };
  // The buyer already had a live subscription: this one is (or is about to be) cancelled at the provider and what it
  // charged refunded (`checkCheckout`), so "your new plan applies" would not be true.
  if (c && c.providerSubscriptionId) {
    const live = await liveSubscription(em, appId, buyerAccountId(c));
    if (
      (c.status === 'cancelled' && c.refund) ||
      (c.status === 'created' && live && live.providerSubscriptionId !== c.providerSubscriptionId)
    )
      return { appName, state: 'duplicate' };
  }
  return { appName, state: c?.status === 'cancelled' ? 'cancelled' : 'approved' };
}

export async function nudgeReturnedCheckout(deps: Deps, appId: string, providerSubscriptionId: string | undefined) {
  if (!providerSubscriptionId) return;
  const c = await deps.orm.em.fork().findOne(Checkout, { appId, providerSubscriptionId });
  if (!c || c.status !== 'created') return;
  await boundedCall(deps.temporal.connection, REQUEST_TEMPORAL_TIMEOUT_MS, () =>
    deps.temporal.client.workflow.getHandle(checkoutWorkflowId(c.id)).signal(checkoutDef.signals.providerNotified),
  ).catch(() => undefined);
}
