import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { cursorPageSchema } from '../http/pagination.js';
import { AppError } from '../errors.js';
import { esc, page } from '../http/html.js';
import { ctxOf, Reply, route, type Caller } from '../http/route.js';
import { offerParams } from '../offers/offers.schemas.js';
import { planParams } from '../catalog/catalog.schemas.js';
import * as S from './checkouts.schemas.js';
import * as checkouts from './checkouts.service.js';
import { settleReturnedPackOrder } from '../credits/packs-payments.service.js';

const tags = ['Checkouts'];

/**
 * `if_subscribed: "change"` starts a change of an existing subscription, which only the account's seller may ask
 * for: the publishable key names no account, and a pending change blocks the account's other changes until it is
 * approved or lapses. 403, as a negative usage amount with the publishable key is.
 */
function refusePublishableChange(caller: Caller, body: { if_subscribed?: string }) {
  if (body.if_subscribed === 'change' && caller.kind === 'publishable')
    throw new AppError(
      403,
      'if_subscribed "change" needs the secret key: the publishable key cannot change an existing subscription ' +
        "(use POST .../subscription/change with the account's token)",
      { reason: 'change_not_allowed' },
    );
}
const checkout = S.checkoutSchema;

export const checkoutRoutes = [
  route({
    method: 'POST',
    path: '/apps/:appId/offers/:offerId/checkout',
    throttle: ['public-checkout'],
    sdk: 'offers.checkout',
    auth: ['S', 'P'],
    tags: ['Offers'],
    summary: 'Start a checkout for an offer',
    description:
      'Prices the selection on the server and creates the provider subscription (and a one-time order for order ' +
      'bumps). 201 with `approve_url` (and `bump_approve_url`). 409 with `reason` when the offer cannot be ' +
      'bought: not_published, archived, expired, not_started, targeted, plan_not_offered, interval_not_offered, ' +
      'bump_not_offered, bump_owned (the account already owns that add-on), offer_changed (edited while the ' +
      'checkout was being created), plan_deleted; already_subscribed (the buyer has a live subscription: change ' +
      'its plan instead, ' +
      'or send `if_subscribed: "change"` to get that plan change here, `object: "plan_change"`, bumps_with_change ' +
      'when it lists bumps); or when the provider is not connected. A bump listed twice is 400.',
    params: offerParams,
    body: S.offerCheckoutBody,
    status: 201,
    errors: [403, 409, 502],
    response: S.checkoutOrChangeSchema,
    handler: (s) => {
      refusePublishableChange(s.caller, s.body);
      return checkouts.createOfferCheckout(ctxOf(s), s.params.offerId, {
        ...s.body,
        origin: s.origin,
        who: { caller: s.caller, requestId: s.requestId },
      });
    },
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/plans/:planId/checkout',
    throttle: ['public-checkout'],
    sdk: 'plans.checkout',
    auth: ['S', 'P'],
    tags: ['Plans'],
    summary: 'Start a checkout for a plan at its regular price',
    description:
      'Monthly when the pricing card has a monthly price (or as `interval` says). 409 `reason: no_price` when the ' +
      'card has no price for it; `plan_deleted` when the plan is deleted meanwhile; `already_subscribed` when the ' +
      'buyer has a live subscription, unless `if_subscribed: "change"` asks for the plan change instead (answered ' +
      'with `object: "plan_change"`).',
    params: planParams,
    body: S.planCheckoutBody,
    status: 201,
    errors: [403, 409, 502],
    response: S.checkoutOrChangeSchema,
    handler: (s) => {
      refusePublishableChange(s.caller, s.body);
      return checkouts.createPlanCheckout(ctxOf(s), s.params.planId, {
        ...s.body,
        origin: s.origin,
        who: { caller: s.caller, requestId: s.requestId },
      });
    },
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/checkouts/return',
    sdk: 'checkouts.returnPage',
    auth: ['N'],
    tags,
    summary: 'Where a buyer lands after the provider when no return page was given',
    description:
      "The page checkouts and plan changes return to when neither the call's `return_url` nor the app's " +
      '`checkout_url` names one (and the links made for a 402): it asks the checkout to complete now and tells the ' +
      'buyer they can go back to the app. `outcome=cancelled` is where a buyer who cancelled at the provider lands.',
    params: appIdParams,
    query: z.object({
      subscription_id: z.string().max(255).optional(),
      token: z.string().max(255).optional(),
      outcome: z.enum(['cancelled']).optional(),
    }),
    replies: { 200: { description: 'A thank-you (or nothing-was-charged) page', contentType: 'text/html' } },
    handler: async (s) => {
      // A credit pack's order comes back with PayPal's `token` (the order id): captured now, granted once PayPal
      // confirms the capture; the buyer's return alone grants nothing.
      const pack =
        s.query.token && !s.query.subscription_id && s.query.outcome !== 'cancelled'
          ? await settleReturnedPackOrder(s.deps, s.params.appId, s.query.token)
          : null;
      const { appName, state } = await checkouts.returnPageState(s.deps, s.params.appId, s.query);
      const app = appName ? esc(appName) : 'the app';
      if (pack)
        return new Reply(
          200,
          pack.status === 'completed'
            ? page('Thank you', `<h1>Thank you</h1>\n<p>Your credits are added. You can return to ${app}.</p>`)
            : page(
                'Thank you',
                `<h1>Thank you</h1>\n<p>Your payment is being confirmed; your credits are added once it is. You can ` +
                  `return to ${app}.</p>`,
              ),
          {},
          'text/html; charset=utf-8',
        );
      const [title, text] =
        state === 'duplicate'
          ? [
              'You already have a subscription',
              `${app} already has a subscription for you, so this second one is cancelled and anything it charged is ` +
                `refunded. To change your plan, do it from ${app}. You can close this page.`,
            ]
          : state === 'cancelled'
            ? ['Checkout cancelled', `Nothing was charged. You can close this page and return to ${app}.`]
            : state === 'completed'
              ? ['Thank you', `Your purchase is complete. You can close this page and return to ${app}.`]
              : [
                  'Thank you',
                  `Your payment was approved; your new plan applies in a moment. You can close this page and return to ${app}.`,
                ];
      return new Reply(200, page(title, `<h1>${esc(title)}</h1>\n<p>${text}</p>`), {}, 'text/html; charset=utf-8');
    },
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/checkouts/:checkoutId/open',
    sdk: 'checkouts.open',
    auth: ['N'],
    tags,
    summary: "A checkout's approval link through the service (its `open_url`)",
    description:
      'Records that the buyer opened it (the offer funnel counts a checkout from then on, or once it completes) and ' +
      "302s to the provider's approval page; a checkout that no longer waits gets a plain page.",
    params: S.checkoutParams,
    replies: {
      302: { description: "To the provider's approval page" },
      200: { description: 'The checkout no longer waits for approval', contentType: 'text/html' },
    },
    errors: [404],
    handler: async (s) => {
      const open = await checkouts.openCheckout(s.deps, s.params.appId, s.params.checkoutId);
      if (open.to) return new Reply(302, null, { Location: open.to, 'Cache-Control': 'no-store' });
      const [title, text] =
        'subscribed' in open && open.subscribed
          ? [
              'You already have a subscription',
              'Nothing was charged. This link was made before you subscribed; to change your plan, do it from the app.',
            ]
          : ['This checkout is no longer waiting for approval', 'You can close this page.'];
      return new Reply(
        200,
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Checkout</title></head><body><main>' +
          `<h1>${title}</h1><p>${text}</p></main></body></html>`,
        { 'Cache-Control': 'no-store' },
        'text/html; charset=utf-8',
      );
    },
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/checkouts',
    sdk: 'checkouts.list',
    auth: ['S'],
    tags,
    summary: 'Checkouts, newest first',
    description: 'Pass `next_cursor` back as `cursor` for the next page (null on the last).',
    params: appIdParams,
    query: S.listQuery,
    response: cursorPageSchema(checkout),
    handler: (s) => checkouts.listCheckouts(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/checkouts/:checkoutId',
    sdk: 'checkouts.get',
    auth: ['S', 'P'],
    tags,
    summary: 'A checkout',
    params: S.checkoutParams,
    response: checkout,
    handler: (s) => checkouts.getCheckout(ctxOf(s), s.params.checkoutId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/checkouts/:checkoutId/complete',
    sdk: 'checkouts.complete',
    auth: ['S', 'P'],
    tags,
    summary: 'Complete a checkout after the buyer approved',
    description:
      'Checks the payment with the provider and applies it exactly once; answers `created` while the provider is ' +
      'still activating (call again shortly).',
    params: S.checkoutParams,
    response: checkout,
    handler: (s) => checkouts.completeCheckout(ctxOf(s), s.params.checkoutId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/checkouts/:checkoutId/expire',
    sdk: 'checkouts.expire',
    auth: ['S'],
    tags,
    summary: 'Expire a checkout its buyer has not paid',
    description:
      'What the 24-hour expiry does, now: the buyer can no longer complete it, and what it sells can be deleted. The ' +
      'provider is asked first: an approved checkout is completed instead (409 with `reason: "completed"`). A buyer ' +
      'approving at the provider afterwards is reported by the reconciler, as after the 24-hour expiry.',
    errors: [409],
    params: S.checkoutParams,
    response: checkout,
    handler: (s) => checkouts.expireCheckoutNow(ctxOf(s), s.params.checkoutId),
  }),
];
