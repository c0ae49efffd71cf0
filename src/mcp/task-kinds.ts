import { ProtocolError, ProtocolErrorCode, type CallToolResult } from '@modelcontextprotocol/server';
import { randomUUID } from 'node:crypto';
import type { Ctx } from '../context.js';
import { AppError } from '../errors.js';
import { ctxOf, Reply, type Scope } from '../http/route.js';
import { clockOffsetOf } from '../apps/clock.service.js';
import { findPlan } from '../catalog/catalog.service.js';
import { settlePackOrder } from '../credits/packs-payments.service.js';
import { findOrder, presentOrder, type OrderRow } from '../credits/packs.service.js';
import type { ICheckout } from '../checkouts/checkouts.entities.js';
import { expireCheckoutNow, findCheckout } from '../checkouts/checkouts.service.js';
import { askActor } from '../subscriptions/actor-client.js';
import type { ISubscription } from '../subscriptions/subscriptions.entities.js';
import { findSubscription } from '../subscriptions/subscriptions.service.js';
import { presentSubscription } from '../subscriptions/subscriptions.present.js';
import { temporalWorkflowUrl } from '../temporal/ui.js';
import { deliveryWithUrl, retryByWorkflow } from '../webhooks/attempts-by-workflow.js';
import { sendTestEvent } from '../webhooks/endpoints.service.js';
import { presentDelivery } from '../webhooks/webhooks.present.js';
import type { testBody } from '../webhooks/webhooks.schemas.js';
import { accountWorkflowId, checkoutWorkflowId, planChangeWorkflowId } from '../../workflows/shared.js';
import type { z } from 'zod';

/**
 * What each task-capable tool's task follows, and how its state is read: a checkout waiting for the buyer
 * (`create_upgrade_link`), a plan change waiting for the buyer's approval (`change_subscription`, through the account
 * actor), a webhook delivery's attempt made by its workflow (`retry_webhook_delivery`, `send_test_event`), a credit
 * pack order waiting for the buyer and PayPal's capture (`create_topup_link`). Every state is read from the record
 * (PostgreSQL) its workflow or the provider's confirmation moves, so any API process answers any task request.
 */

/** What a task id names (signed into it by src/mcp/tasks.ts): the record, and what the first answer said of it. */
export interface TaskRef {
  k: 'checkout' | 'change' | 'delivery' | 'pack_order';
  /** The record's id: `chk_...`, `chg_...`, the delivery's, `cpo_...`. */
  id: string;
  /** The account (a plan change), the endpoint (a delivery). */
  on?: string;
  /** The tool whose call the task is. */
  tool: string;
  /** When the task was made (ISO 8601). */
  at: string;
  /** Terms of the first answer its outcome repeats (a plan change's direction, policy, proration...). */
  x?: Record<string, unknown>;
}

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

export interface TaskState {
  status: TaskStatus;
  statusMessage: string;
  lastUpdatedAt: Date;
  /** The tool call's result once `completed`. */
  result?: CallToolResult;
  pollIntervalMs: number;
  /** While it waits for the buyer: the link to hand them (the tool's first answer's `url` or `approve_url`). */
  link?: string;
  /** The workflows the task is (the first is the one it waits on), with their Temporal UI pages. */
  workflows: { id: string; url: string | null }[];
}

export interface TaskKind {
  /**
   * Runs in place of the route's handler (after its authentication, guards and validation) when the call is a task:
   * the start of the work its workflow then does. Omitted: the route's own handler (it already starts a workflow).
   */
  start?: (s: Scope<Record<string, string>, unknown, unknown>) => Promise<Reply>;
  /** The task the call's answer starts, or null when the answer is already final (no task). */
  seed(answer: Record<string, unknown>, args: Record<string, unknown>): Omit<TaskRef, 'tool' | 'at'> | null;
  /** The task's state now; null when its record is gone (the task is not found). */
  state(ref: TaskRef, ctx: Ctx): Promise<TaskState | null>;
  /** Asks the work to stop (`tasks/cancel`); cooperative: the state says whether it did. Omitted: nothing to stop. */
  cancel?(ref: TaskRef, ctx: Ctx): Promise<void>;
}

const ok = (body: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(body) }],
  structuredContent: body,
  isError: false,
});
/** A tool error as every tool's refusal is shaped (`Error <status>: <message>`, `{ error, status, reason }`). */
const notDone = (status: number, message: string, extra: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text: `Error ${status}: ${message}` }],
  structuredContent: { error: message, status, ...extra },
  isError: true,
});
const workflow = (ctx: Ctx, id: string) => ({ id, url: temporalWorkflowUrl(ctx.deps.config, id) });
/** A record that is not there (the service's 404) is a task that is not found. */
const orNull = (err: unknown): null => {
  if (err instanceof AppError && err.status === 404) return null;
  throw err;
};
/** An error the work's own rules give when it cannot stop any more (already approved, nothing pending): not ours. */
const ignoreRefusal = (err: unknown) => {
  if (!(err instanceof AppError)) throw err;
  // The provider or Temporal did not answer (502, 503): nothing was withdrawn; the client may ask again.
  if (err.status >= 500)
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      `Error ${err.status}: ${err.message}. The task was not cancelled; send tasks/cancel again later.`,
    );
};

/** The link answer of `create_upgrade_link` for a checkout, as the tool answered it. */
async function linkOf(ctx: Ctx, c: ICheckout) {
  const plan = await findPlan(ctx.em, ctx.app.id, c.planId).catch(orNull);
  return {
    account: c.accountId,
    plan: { id: c.planId, name: plan?.name ?? c.planId },
    offer: c.offerId,
    interval: c.interval,
    currency: c.currency,
    price: c.price,
    kind: 'provider_approval' as const,
    url: c.approveUrl ?? '',
    checkout: c.id,
  };
}

/** `create_upgrade_link`: the checkout the provider approval link pays, and its workflow (`checkout/<id>`). */
const checkoutTask: TaskKind = {
  // The app's own pricing page makes no checkout: that answer is final.
  seed: (answer) =>
    answer.kind === 'provider_approval' && typeof answer.checkout === 'string'
      ? { k: 'checkout', id: answer.checkout }
      : null,
  async state(ref, ctx) {
    const c = await findCheckout(ctx.em, ctx.app.id, ref.id).catch(orNull);
    if (!c) return null;
    const base = {
      lastUpdatedAt: c.updatedAt,
      pollIntervalMs: 5_000,
      workflows: [workflow(ctx, checkoutWorkflowId(c.id))],
    };
    const deadline = c.expiresAt ?? new Date(c.createdAt.getTime() + 24 * 3_600_000);
    const link = await linkOf(ctx, c);
    switch (c.status) {
      case 'created':
        return {
          ...base,
          status: 'working',
          link: link.url,
          statusMessage:
            `Waiting for the buyer to approve ${link.plan.name} (${c.price} ${c.currency} per ${c.interval}) at ` +
            `${link.url} until ${deadline.toISOString()}: hand the person this link. Nothing is charged until ` +
            'they approve and the provider confirms.',
        };
      case 'completed': {
        const sub = c.accountId ? await findSubscription(ctx.em, ctx.app.id, c.accountId).catch(orNull) : null;
        return {
          ...base,
          status: 'completed',
          statusMessage: `The buyer approved and paid: account ${c.accountId} is on ${link.plan.name}.`,
          result: ok({ ...link, status: 'completed', subscription: sub ? presentSubscription(sub) : null }),
        };
      }
      case 'expired': {
        // Expired before its deadline (on the app's clock): someone ended it (tasks/cancel, POST .../expire).
        const offset = await clockOffsetOf(ctx.em, ctx.app.id);
        if (c.updatedAt.getTime() + offset < deadline.getTime() - 1_000)
          return {
            ...base,
            status: 'cancelled',
            statusMessage: `Checkout ${c.id} was withdrawn; nothing was charged.`,
          };
        const message = `The buyer did not approve by ${deadline.toISOString()}: checkout ${c.id} expired and nothing was charged.`;
        return {
          ...base,
          status: 'completed',
          statusMessage: message,
          result: notDone(410, message, { reason: 'expired', checkout: c.id }),
        };
      }
      case 'cancelled': {
        const message = `Checkout ${c.id} was cancelled (${c.cancelReason ?? 'by the provider'}).`;
        return {
          ...base,
          status: 'completed',
          statusMessage: message,
          result: notDone(409, message, { reason: 'cancelled', checkout: c.id }),
        };
      }
    }
  },
  async cancel(ref, ctx) {
    const c = await findCheckout(ctx.em, ctx.app.id, ref.id).catch(orNull);
    // A checkout the buyer already approved completes (expireCheckoutNow's 409): that outcome stands.
    if (c?.status === 'created') await expireCheckoutNow(ctx, ref.id).catch(ignoreRefusal);
  },
};

/**
 * `create_topup_link`: the credit pack order the PayPal approval link pays. No workflow moves it: PayPal's
 * notifications, the buyer's return to the hosted page and `POST .../complete` settle it, and so does each `tasks/get`
 * of an order still waiting (the `complete` route's settle: an approved order is captured, a capture PayPal reports
 * completed grants once), so an agent polling the task is not left waiting on a notification that was lost.
 */
const packOrderTask: TaskKind = {
  seed: (answer) =>
    answer.object === 'credit_pack_order' && typeof answer.id === 'string' && answer.status === 'created'
      ? { k: 'pack_order', id: answer.id }
      : null,
  async state(ref, ctx) {
    let o: OrderRow | null = await findOrder(ctx.em, ctx.app.id, ref.id).catch(orNull);
    if (!o) return null;
    if (o.status === 'created')
      // PayPal away (or slow past its bound): the order reads as it is; the next poll asks again.
      o = await settlePackOrder(ctx.deps, ctx.app.id, o.id).then(
        (now) => now ?? o,
        (err: unknown) => {
          ctx.deps.logger.warn({ err, order: ref.id }, 'MCP task: settling a credit pack order failed');
          return o;
        },
      );
    const order = presentOrder(o!);
    const base = {
      lastUpdatedAt: new Date(order.completed_at ?? order.created_at),
      pollIntervalMs: 5_000,
      workflows: [],
    };
    const what = `credit pack ${order.pack} (${order.amount} ${order.pool} credits for ${o!.price} ${order.currency})`;
    switch (o!.status) {
      case 'created':
        return {
          ...base,
          status: 'working',
          ...(order.approve_url ? { link: order.approve_url } : {}),
          statusMessage:
            `Waiting for the buyer to approve ${what} at ${order.approve_url ?? '(the link the call answered)'}: ` +
            'hand the person this link. Nothing is charged until they approve and PayPal confirms the capture; the ' +
            'credits are granted then, once.',
        };
      case 'completed':
        return {
          ...base,
          status: 'completed',
          statusMessage: order.grant
            ? `PayPal confirmed the capture ${order.capture_id}: account ${order.account} was granted ` +
              `${order.amount} ${order.pool} credits (grant ${order.grant}).`
            : `PayPal confirmed the capture ${order.capture_id}, but pool ${order.pool} was deleted since: ` +
              'nothing was granted.',
          result: ok({
            ...order,
            granted: order.grant ? { grant: order.grant, pool: order.pool, amount: order.amount } : null,
          }),
        };
      case 'cancelled': {
        const message = `PayPal voided the order for ${what}: nothing was charged and no credits were granted.`;
        return {
          ...base,
          status: 'completed',
          statusMessage: message,
          result: notDone(409, message, { reason: 'voided', order: order.id }),
        };
      }
    }
  },
  // No cancel: PayPal has no way to withdraw an order its buyer may be approving, and marking ours withdrawn could
  // race a capture already under way (money taken, no credits). tasks/cancel is acknowledged; the link stays payable.
};

/** How a plan change's last outcome reads as the task's. */
const CHANGE_OUTCOMES: Record<
  NonNullable<ISubscription['lastChange']>['outcome'],
  { status: 'completed' | 'cancelled'; error?: [number, string]; says: string }
> = {
  applied: { status: 'completed', says: 'The buyer approved: the change applied.' },
  refused: {
    status: 'completed',
    error: [409, 'refused'],
    says: 'The buyer declined the change at the provider; nothing changed.',
  },
  expired: {
    status: 'completed',
    error: [410, 'expired'],
    says: 'The buyer did not approve in time; nothing changed.',
  },
  cancelled: {
    status: 'completed',
    error: [409, 'subscription_cancelled'],
    says: 'The subscription was cancelled first.',
  },
  withdrawn: { status: 'cancelled', says: 'The change was withdrawn; nothing changed.' },
  replaced: { status: 'cancelled', says: 'A later change replaced it.' },
};

/**
 * `change_subscription`: the plan change the buyer approves at the provider, asked of the account's actor
 * (`account/<app>/<account>`) and waited on by its workflow (`plan-change/<app>/<account>/<change>`).
 */
const changeTask: TaskKind = {
  seed: (answer, args) => {
    const pending = (answer.pending_change ?? null) as { id?: string } | null;
    if (!pending?.id || typeof args.namespaceId !== 'string') return null;
    const { direction, policy, effective, proration, effective_at } = answer;
    return {
      k: 'change',
      id: pending.id,
      on: args.namespaceId,
      x: { direction, policy, effective, proration, effective_at },
    };
  },
  async state(ref, ctx) {
    const s = await findSubscription(ctx.em, ctx.app.id, ref.on!).catch(orNull);
    if (!s) return null;
    const base = {
      lastUpdatedAt: s.updatedAt,
      pollIntervalMs: 5_000,
      workflows: [
        workflow(ctx, planChangeWorkflowId(ctx.app.id, ref.on!, ref.id)),
        workflow(ctx, accountWorkflowId(ctx.app.id, ref.on!)),
      ],
    };
    const now = { ...presentSubscription(s), approve_url: null, revision_approve_url: null, ...ref.x };
    if (s.pendingChange?.id === ref.id) {
      const p = s.pendingChange;
      const url = p.proration?.approveUrl ?? p.approveUrl ?? undefined;
      return {
        ...base,
        status: 'working',
        ...(url ? { link: url } : {}),
        statusMessage:
          `Waiting for the buyer to approve the change to plan ${p.planName ?? p.plan} at ` +
          `${url ?? '(the link the call answered)'}` +
          `${p.expiresAt ? ` until ${p.expiresAt}` : ''}: hand the person this link. Nothing changes until they approve.`,
      };
    }
    if (s.scheduledChange?.id === ref.id)
      return {
        ...base,
        status: 'completed',
        statusMessage: `The buyer approved: the change applies at the renewal (${s.scheduledChange.plan}).`,
        result: ok(now),
      };
    const last = s.lastChange?.id === ref.id ? CHANGE_OUTCOMES[s.lastChange.outcome] : null;
    if (!last)
      return {
        ...base,
        status: 'completed',
        statusMessage: `Change ${ref.id} has ended; the subscription as it is now.`,
        result: ok(now),
      };
    if (last.status === 'cancelled') return { ...base, status: 'cancelled', statusMessage: last.says };
    return {
      ...base,
      status: 'completed',
      statusMessage: last.says,
      result: last.error ? notDone(last.error[0], last.says, { reason: last.error[1], change: ref.id }) : ok(now),
    };
  },
  async cancel(ref, ctx) {
    const s = await findSubscription(ctx.em, ctx.app.id, ref.on!).catch(orNull);
    // Only a change still waiting for the buyer is withdrawn; one approved for the renewal stands (undoing it needs
    // the buyer's approval again: POST .../subscription/change/withdraw).
    if (s?.pendingChange?.id !== ref.id) return;
    await askActor(ctx, ref.on!, { kind: 'withdraw_change' }, { requestId: randomUUID() }).catch(ignoreRefusal);
  },
};

/** `retry_webhook_delivery`, `send_test_event`: one attempt of the delivery, made by its workflow (its id). */
const deliveryTask = (start: TaskKind['start']): TaskKind => ({
  start,
  seed: (answer) =>
    typeof answer.id === 'string' && typeof answer.endpoint_id === 'string'
      ? { k: 'delivery', id: answer.id, on: answer.endpoint_id }
      : null,
  async state(ref, ctx) {
    const found = await deliveryWithUrl(ctx, ref.on!, ref.id);
    if (!found) return null;
    const d = found.delivery;
    const base = { lastUpdatedAt: d.updatedAt, pollIntervalMs: 1_000, workflows: [workflow(ctx, d.id)] };
    if (d.status === 'pending') {
      return {
        ...base,
        status: 'working',
        statusMessage: `Sending ${d.eventType} to ${found.url ?? d.endpointId} (attempt ${d.attempts + 1}).`,
      };
    }
    // As the route answers: the delivery with its result, failed or not (a failed attempt is no tool error).
    return {
      ...base,
      status: 'completed',
      statusMessage:
        d.status === 'succeeded'
          ? `Delivered on attempt ${d.attempts}${d.responseStatus ? ` (HTTP ${d.responseStatus})` : ''}.`
          : `The attempt failed: ${d.error ?? 'no answer'}.`,
      result: ok(presentDelivery(d) as Record<string, unknown>),
    };
  },
  // No cancel: the one attempt is under way (10 s at most) and a request sent cannot be called back.
});

/**
 * The tools that answer as a task when the client declares the Tasks extension. A tool whose outcome waits on a
 * person or on time is one line here.
 */
export const TASK_TOOLS: Record<string, TaskKind> = {
  create_upgrade_link: checkoutTask,
  create_topup_link: packOrderTask,
  change_subscription: changeTask,
  retry_webhook_delivery: deliveryTask(async (s) => {
    const p = s.params;
    return new Reply(200, await retryByWorkflow(ctxOf(s), p.webhookId, p.deliveryId));
  }),
  send_test_event: deliveryTask(
    async (s) =>
      new Reply(200, await sendTestEvent(ctxOf(s), s.params.webhookId, s.body as z.output<typeof testBody>, true)),
  ),
};
