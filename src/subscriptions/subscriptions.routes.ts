import { z } from 'zod';
import {
  changeSchema,
  duePauseSchema,
  untrackedSchema,
  listSubscriptionsQuery,
  quoteSchema,
  subscriptionPageSchema,
  subscriptionSchema,
} from './subscriptions.schemas.js';
import { appIdParams } from '../apps/apps.schemas.js';
import { accountParams } from '../accounts/accounts.schemas.js';
import { limitParam } from '../http/pagination.js';
import { accountId, callerId, httpUrl } from '../http/schemas.js';
import { ctxOf, Reply, route, type Caller } from '../http/route.js';
import type { IntentBody } from './actor-client.js';
import { App } from '../apps/apps.entities.js';
import { CancelSession } from '../cancel-flows/cancel-flows.entities.js';
import { notFound } from '../errors.js';
import * as subs from './subscriptions.service.js';
import { presentQuote, quotePlanChange } from './plan-changes.service.js';
import { returnFromProvider } from './returns.service.js';
import { listUntracked } from './untracked.service.js';
import { askActor } from './actor-client.js';

const tags = ['Subscriptions'];
const sub = subscriptionSchema;
const pauseBody = z.object({
  months: z.number().int().min(1, 'must be between 1 and 12').max(12, 'must be between 1 and 12'),
  reason: z.string().max(500).optional(),
});
const changeBody = z.object({
  plan: callerId.describe('The plan to move to, by its id, for example `team`. A free plan: cancel at the renewal.'),
  interval: z.enum(['month', 'year']).optional().describe('The new billing interval. Omitted: the current one.'),
  replace: z
    .boolean()
    .optional()
    .describe('Replace a change already scheduled for the renewal (it stands until the buyer approves this one).'),
});
const returnUrls = {
  return_url: httpUrl
    .optional()
    .describe("Where the buyer lands after approving. Omitted: the app's checkout_url, else the service's own page."),
  cancel_url: httpUrl.optional().describe('Where the buyer lands after refusing. Omitted: the return URL.'),
};
/** What every intent route says about the account actor (its 409s and its 503). */
const ACTOR =
  " Runs through the account's actor (`account/<app>/<account>` in Temporal), one intent at a time: a conflicting " +
  'intent is a 409 with `reason`, `pending` (what it meets, until when) and `next` (the calls that resolve it); when ' +
  'Temporal does not take it within 5 s, 503 with `Retry-After` and nothing changes. A 503 with `"outcome": ' +
  '"unknown"` was taken (just then, or its answer was not waited for): its outcome is on the account\'s timeline.';
/** The account's actor's answer as a route's (typed by the route's response schema). */
const ask = <T>(
  s: Parameters<typeof ctxOf>[0] & { caller: Caller; requestId: string },
  accountId: string,
  body: IntentBody,
) => askActor(ctxOf(s), accountId, body, { caller: s.caller, requestId: s.requestId }) as Promise<T>;

export const subscriptionRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/subscriptions',
    sdk: 'subscriptions.list',
    auth: ['S'],
    tags,
    summary: "The app's subscriptions, newest first (cursor pages)",
    description:
      "Each item is the account's subscription view (as `GET .../namespaces/:accountId/subscription`) with its " +
      '`account_id`; a paused one carries `pause.resume_at`. Without `status`, the subscriptions that have not ended ' +
      '(active and paused), as Stripe lists them; `status=all` for every one. `plan` keeps those of one paid plan. ' +
      'Pass `next_cursor` back as `cursor` for the next page (null on the last).',
    params: appIdParams,
    query: listSubscriptionsQuery,
    response: subscriptionPageSchema,
    handler: (s) => subs.listSubscriptions(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/subscriptions/untracked',
    sdk: 'subscriptions.untracked',
    auth: ['S'],
    tags,
    summary: 'Live provider subscriptions offerkit made but does not track (found by the reconciler)',
    description:
      "Each was made through a checkout and is live at the provider without being an account's tracked " +
      "subscription: `cancelled` when it duplicated the account's live subscription (the reconciler cancelled it at " +
      'the provider), `reported` otherwise (for example approved after its checkout expired). Newest first, at most ' +
      '500. Each one also emits `subscription.untracked`.',
    params: appIdParams,
    response: z.object({ data: z.array(untrackedSchema) }),
    handler: (s) => listUntracked(ctxOf(s)),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/subscription/change/quote',
    sdk: 'subscriptions.quote',
    auth: ['S', 'T'],
    // Stores nothing: a read for roles, the read-only demo and MCP levels.
    writes: false,
    mcp: {
      tool: 'quote_subscription_change',
      level: 'R',
      about: 'Asks nobody and changes nothing.',
      use:
        'Use it before change_subscription to tell the person what they will pay now and from when (amount_due_now, ' +
        'price, effective_at), and pass its proration_date to change_subscription so the charge equals the quote.',
    },
    tags,
    summary: 'What a plan change would charge now and from when, without asking the provider',
    description:
      "Takes the change's body and answers what the change would be: the new price and interval, `amount_due_now` " +
      '(the prorated difference an upgrade charges when the buyer approves, under `prorate_now`), when it applies ' +
      '(`effective_at`), its direction and policy, and `proration_date`: send that back with the change (within 30 ' +
      'minutes) and the provider is asked for exactly `amount_due_now`. The same 409s as the change (`same_plan`, ' +
      '`no_price`, `change_pending`, `change_scheduled`, ...); a free plan answers `cancels_at_renewal: true`.',
    params: accountParams,
    body: changeBody,
    errors: [409],
    response: quoteSchema,
    handler: (s) => presentQuote(ctxOf(s), s.params.accountId, s.body),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/subscription/change',
    sdk: 'subscriptions.change',
    // An account token may change its own account's plan (the drop-in pricing table and paywall hold one); the
    // publishable key may not, as it names no account.
    auth: ['S', 'T'],
    mcp: {
      tool: 'change_subscription',
      level: 'W',
      openWorld: true,
      about:
        'By default (`plan_change_policy`) an upgrade applies at once, charging the prorated difference, a ' +
        'downgrade at `renews_at`; a free plan cancels at the renewal. 409 `same_plan`, `change_pending`, ' +
        '`change_scheduled` (pass `replace: true`), or `no_price`.',
      use:
        'Use it when a subscribed account wants another plan or interval (create_upgrade_link is for one ' +
        'without a subscription); quote it first with quote_subscription_change. Returns the change with the ' +
        'approve_url to hand the person.',
      spends: async (ctx, params, body) => {
        const q = await quotePlanChange(ctx, params.accountId, body as { plan: string; interval?: 'month' | 'year' });
        return {
          amount: q.price,
          currency: q.currency,
          description:
            `Would ask the payment provider (not asked in a dry run) to move account ${params.accountId} from plan ` +
            `${q.s.planId} to ${q.plan.id} at ${q.price} ${q.currency} per ${q.interval} (a ${q.direction}, ` +
            `policy ${q.policy}` +
            (q.proration.amount > 0 ? `, ${q.proration.amount} ${q.currency} prorated now` : '') +
            '), and answer the approve_url to hand the person. Nothing changes until they approve it.',
        };
      },
    },
    tags,
    summary: 'Change to another plan or interval (approved by the buyer at the provider)',
    description:
      'The way to move a subscribed account to another plan (a second checkout is a 409); also with an account ' +
      "token for its own account (the drop-in components). The app's " +
      '`plan_change_policy` decides per direction (by price per month): `prorate_now` (upgrades by default) applies ' +
      'at once when the buyer approves, charging the difference for the rest of the cycle as a one-time order; ' +
      '`at_renewal` (downgrades by default) keeps the current plan until `renews_at`; `no_proration` applies at once ' +
      'without charging a difference. PayPal bills the new price from the next cycle (the subscription is revised). ' +
      'Send the buyer to `approve_url`; nothing changes until the provider reports the approval ' +
      '(`subscription.changed`, or `subscription.change_scheduled` for a change at the renewal). A free plan is a ' +
      'cancellation at the end of the period (`subscription.cancel_scheduled`), then that plan. Quote it first ' +
      '(`.../change/quote`) and pass its `proration_date` to be charged exactly the quoted amount.' +
      ACTOR,
    params: accountParams,
    body: changeBody.extend({
      ...returnUrls,
      proration_date: z.iso
        .datetime({ offset: true })
        .optional()
        .describe("A quote's `proration_date` (at most 30 minutes old): the prorated amount is the quote's."),
    }),
    errors: [409, 502, 503],
    response: changeSchema,
    handler: (s) =>
      ask(s, s.params.accountId, {
        kind: 'change',
        plan: s.body.plan,
        ...(s.body.interval ? { interval: s.body.interval } : {}),
        ...(s.body.replace ? { replace: true } : {}),
        ...(s.body.proration_date ? { prorationDate: s.body.proration_date } : {}),
        ...(s.body.return_url ? { returnUrl: s.body.return_url } : {}),
        ...(s.body.cancel_url ? { cancelUrl: s.body.cancel_url } : {}),
        origin: s.origin,
      }),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/subscription/change/withdraw',
    sdk: 'subscriptions.withdrawChange',
    auth: ['S', 'T'],
    tags,
    summary: 'Withdraw a change waiting for approval, or one scheduled for the renewal',
    description:
      'A change still waiting for the buyer is dropped now (`subscription.change_dropped`, reason `withdrawn`). One ' +
      'the buyer already approved for the renewal needs the provider moved back to the current plan: the answer ' +
      'carries that `approve_url`, and the scheduled change stands until the buyer approves it. 409 `no_change`.' +
      ACTOR,
    params: accountParams,
    body: z.object(returnUrls),
    errors: [409, 502, 503],
    response: subscriptionSchema.extend({ approve_url: z.string().nullable() }),
    handler: (s) =>
      ask(s, s.params.accountId, {
        kind: 'withdraw_change',
        ...(s.body.return_url ? { returnUrl: s.body.return_url } : {}),
        ...(s.body.cancel_url ? { cancelUrl: s.body.cancel_url } : {}),
        origin: s.origin,
      }),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/plan-changes/:changeId/return',
    sdk: 'subscriptions.changeReturn',
    auth: ['N'],
    tags,
    summary: 'Where the provider sends a buyer back from approving (or refusing) a plan change',
    description:
      'Checks the provider at once: an approved change applies (a cancel flow save counts from then on); a refused ' +
      'one (PayPal\'s "Cancel and return") is dropped unless the provider reports it approved, and a save goes back ' +
      "to `open`. Then 303 to the app's return or cancel page given with the change (a plain page when none).",
    params: appIdParams.extend({ changeId: z.string().min(1).max(64) }),
    query: z.object({
      account: accountId,
      outcome: z.enum(['approved', 'refused']),
      // Added by the provider; passed on to the app's page (a component there recognizes its buyer coming back).
      subscription_id: z.string().max(255).optional(),
      ba_token: z.string().max(255).optional(),
    }),
    replies: {
      303: { description: "To the app's return (approved) or cancel (refused) page" },
      200: { description: 'A plain page when the change names no page to go back to', contentType: 'text/html' },
    },
    handler: async (s) => {
      const r = await returnFromProvider(s.deps, s.params.appId, s.params.changeId, s.query.account, s.query.outcome);
      if (r.location) {
        const to = new URL(r.location);
        for (const k of ['subscription_id', 'ba_token'] as const) if (s.query[k]) to.searchParams.set(k, s.query[k]);
        return new Reply(303, null, { Location: to.toString(), 'Cache-Control': 'no-store' });
      }
      return new Reply(
        200,
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Plan change</title></head><body><main>' +
          `<h1>${
            r.outcome === 'applied'
              ? 'Your plan change is applied'
              : r.outcome === 'scheduled'
                ? 'Your plan change applies at the renewal'
                : r.outcome === 'pending'
                  ? 'Your plan change is being confirmed'
                  : 'Nothing was changed'
          }</h1>` +
          '<p>You can close this page.</p></main></body></html>',
        {},
        'text/html; charset=utf-8',
      );
    },
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/subscription/sync',
    sdk: 'subscriptions.sync',
    auth: ['S'],
    tags,
    summary: 'Re-read the subscription from the provider and apply what changed',
    description: 'Serialized with the other intents of the account.' + ACTOR,
    params: accountParams,
    errors: [409, 502, 503],
    response: sub,
    handler: (s) => ask(s, s.params.accountId, { kind: 'sync' }),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/subscription',
    sdk: 'subscriptions.get',
    auth: ['S', 'T'],
    tags,
    summary: "The account's subscription (404 when none)",
    params: accountParams,
    response: sub,
    handler: (s) => subs.getSubscription(ctxOf(s), s.params.accountId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/subscription/cancel',
    sdk: 'subscriptions.cancel',
    auth: ['S'],
    tags,
    summary: 'Cancel at the provider (now, or at the end of the paid period); the account moves to the free plan',
    description:
      '`at: "now"` (the default): cancelled at the provider, the account moves to the free plan if the app has one ' +
      '(`subscription.cancelled`). `at: "period_end"`: billing stops at the provider now, the plan stays until ' +
      '`renews_at` (`cancel_at`, `subscription.cancel_scheduled`), then it is cancelled; undo it before then with ' +
      '`.../subscription/resume`. A change waiting or scheduled is dropped (`subscription.change_dropped`).' +
      ACTOR,
    params: accountParams,
    body: z.object({
      reason: z.string().max(500).optional(),
      at: z.enum(['now', 'period_end']).optional().describe('When the cancellation applies (default `now`).'),
    }),
    errors: [409, 502, 503],
    response: sub,
    handler: (s) =>
      ask(s, s.params.accountId, {
        kind: 'cancel',
        at: s.body.at ?? 'now',
        ...(s.body.reason ? { reason: s.body.reason } : {}),
      }),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/subscription/pause',
    sdk: 'subscriptions.pause',
    auth: ['S'],
    tags,
    summary: 'Pause billing for 1 to 12 months',
    description:
      "Suspends billing at the provider, moves the account to the free plan if any; the account's actor resumes it " +
      "at `resume_at` (on the app's clock). A change scheduled for the renewal stays and applies at the first " +
      'renewal after the pause; one waiting for approval is a 409 `change_pending`.' +
      ACTOR,
    params: accountParams,
    body: pauseBody,
    errors: [409, 502, 503],
    response: sub,
    handler: (s) =>
      ask(s, s.params.accountId, {
        kind: 'pause',
        months: s.body.months,
        ...(s.body.reason ? { reason: s.body.reason } : {}),
      }),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/subscription/resume',
    sdk: 'subscriptions.resume',
    auth: ['S'],
    tags,
    summary: 'End a pause now (or undo a cancellation at the end of the period)',
    description:
      'A paused subscription bills again and gets its plan back (`subscription.resumed`); one cancelled at the end ' +
      'of its period bills again as before (`subscription.cancel_undone`). 409 `not_paused` otherwise.' +
      ACTOR,
    params: accountParams,
    errors: [409, 502, 503],
    response: sub,
    handler: (s) => ask(s, s.params.accountId, { kind: 'resume' }),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/subscription/retry-payment',
    sdk: 'subscriptions.retryPayment',
    auth: ['S'],
    tags,
    summary: "Charge a past-due subscription's outstanding balance now",
    description:
      'For a subscription whose renewal payment failed (`past_due`): asks the provider to charge what is owed now ' +
      '(PayPal: capture the outstanding balance), then reads the outcome: a payment that succeeds recovers it ' +
      '(`subscription.recovered`), one that fails counts as another failure. 409 `not_past_due`.' +
      ACTOR,
    params: accountParams,
    errors: [409, 502, 503],
    response: sub,
    handler: (s) => ask(s, s.params.accountId, { kind: 'retry_payment' }),
  }),
  route({
    method: 'GET',
    path: '/pauses/due',
    sdk: 'pauses.listDue',
    auth: ['A'],
    tags,
    summary: 'Pauses whose resume time has passed (for an external scheduler)',
    query: z.object({ limit: limitParam(100, 1000) }),
    response: z.object({ data: z.array(duePauseSchema) }),
    handler: (s) => subs.duePauses(s.em, s.query.limit),
  }),
  route({
    method: 'POST',
    path: '/pauses/apply',
    sdk: 'pauses.apply',
    auth: ['A'],
    tags,
    summary: 'Pause a subscription (for an external workflow)',
    body: pauseBody.extend({ app_id: z.string().min(1), account_id: accountId, session_id: z.string().optional() }),
    errors: [409, 502, 503],
    response: sub,
    handler: async (s) => {
      const app = await s.em.findOne(App, { id: s.body.app_id });
      if (!app) throw notFound(`App ${s.body.app_id}`);
      let reason = s.body.reason;
      // A pause an external workflow applies for a cancel session names that session (in the
      // reason, and so in the pause workflow's details in the Temporal UI).
      if (s.body.session_id) {
        const session = await s.em.findOne(CancelSession, {
          id: s.body.session_id,
          appId: app.id,
          accountId: s.body.account_id,
        });
        if (!session) throw notFound(`Cancel session ${s.body.session_id} of account ${s.body.account_id}`);
        reason = `${reason ?? 'Paused'} (cancel flow ${session.flowId}, session ${session.id})`;
      }
      return askActor(
        { em: s.em, deps: s.deps, app },
        s.body.account_id,
        { kind: 'pause', months: s.body.months, ...(reason ? { reason } : {}) },
        { caller: s.caller, requestId: s.requestId },
      ) as Promise<z.input<typeof sub>>;
    },
  }),
  route({
    method: 'POST',
    path: '/pauses/resume',
    sdk: 'pauses.resume',
    auth: ['A'],
    tags,
    summary: 'Resume a paused subscription now (once, whichever path comes first)',
    body: z.object({ app_id: z.string().min(1), account_id: accountId }),
    errors: [409, 502, 503],
    response: sub,
    handler: async (s) => {
      const app = await s.em.findOne(App, { id: s.body.app_id });
      if (!app) throw notFound(`App ${s.body.app_id}`);
      return askActor(
        { em: s.em, deps: s.deps, app },
        s.body.account_id,
        { kind: 'resume' },
        { caller: s.caller, requestId: s.requestId },
      ) as Promise<z.input<typeof sub>>;
    },
  }),
];
