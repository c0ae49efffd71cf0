// Credit top-up packs: the catalog's packs, their checkout, and the orders it makes (issue 42, item 4).
import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { notFound } from '../errors.js';
import type { Caller } from '../http/caller.js';
import { ctxOf, route } from '../http/route.js';
import { callerId } from '../http/schemas.js';
import { asHttpError } from '../payments/payments.service.js';
import { settlePackOrder } from './packs-payments.service.js';
import * as S from './packs.schemas.js';
import * as packs from './packs.service.js';

const tags = ['Credit packs'];

/** An order of the app that the caller may see: a token only its own account's (another's is not found). */
async function orderFor(s: { em: Parameters<typeof packs.findOrder>[0]; caller: Caller }, appId: string, id: string) {
  const o = await packs.findOrder(s.em, appId, id);
  if (s.caller.kind === 'token' && s.caller.accountId !== o.account_id) throw notFound(`Credit pack order ${id}`);
  return o;
}

export const packRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/credit-packs',
    sdk: 'creditPacks.list',
    // The packs on sale are prices, as public as a pricing card: the components offer them to the buyer (the usage
    // meter's "Top up") with the page's publishable key or the account's token.
    auth: ['S', 'P', 'T'],
    tags,
    summary: 'List credit top-up packs (creation order)',
    description:
      'With the secret key every pack, on sale or archived (the filters below); with a publishable key or an account ' +
      'token only the packs on sale (`archived` is taken as `false`).',
    params: appIdParams,
    query: z.object({
      pool: callerId.optional().describe("Only this pool's packs. Omitted: all."),
      archived: z
        .enum(['true', 'false'])
        .transform((v) => v === 'true')
        .optional()
        .describe('`false`: only packs on sale; `true`: only archived ones. Omitted: both.'),
    }),
    response: z.array(S.packSchema),
    handler: (s) =>
      packs.listPacks(
        s.em,
        s.app!.id,
        s.caller.kind === 'publishable' || s.caller.kind === 'token' ? { ...s.query, archived: false } : s.query,
      ),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/credit-packs',
    sdk: 'creditPacks.create',
    auth: ['S'],
    tags,
    summary: 'Define a credit top-up pack',
    description:
      '`amount` credits of `pool` for `price` in `currency`, bought once (a PayPal order) with ' +
      '`POST .../credit-packs/:packId/checkout`. 404 when the app has no entitlement `pool`; 409 `not_a_pool` when ' +
      'it is not a credits pool, 409 when the id is in use; 400 when `amount` is not a positive whole number or ' +
      '`price` is not above 0 in whole cents.',
    params: appIdParams,
    body: S.createPackBody,
    status: 201,
    errors: [404, 409],
    response: S.packSchema,
    handler: (s) => packs.createPack(ctxOf(s), s.body),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/credit-packs/:packId',
    sdk: 'creditPacks.get',
    auth: ['S'],
    tags,
    summary: 'A credit top-up pack',
    params: S.packParams,
    response: S.packSchema,
    handler: (s) => packs.getPack(s.em, s.app!.id, s.params.packId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/credit-packs/:packId/archive',
    sdk: 'creditPacks.archive',
    auth: ['S'],
    tags,
    summary: 'Stop selling a credit pack',
    description:
      'An archived pack gets no new checkouts (409 `pack_archived`) and is not offered in a `credits_exhausted` ' +
      '402; orders already made still complete when paid, and refunds of them still take credits back. Archiving ' +
      'an archived pack answers it again.',
    params: S.packParams,
    response: S.packSchema,
    handler: (s) => packs.archivePack(ctxOf(s), s.params.packId),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/credit-packs/:packId',
    sdk: 'creditPacks.delete',
    auth: ['S'],
    tags,
    summary: 'Delete a credit pack',
    description:
      'Removes it from the catalog. Its orders keep what they sold (pool, credits, price): one paid later is still ' +
      'granted, and a refund still takes back. Deleting the pool deletes its packs.',
    params: S.packParams,
    response: S.packSchema,
    handler: (s) => packs.deletePack(ctxOf(s), s.params.packId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/credit-packs/:packId/checkout',
    throttle: ['public-checkout'],
    sdk: 'creditPacks.checkout',
    auth: ['S', 'P', 'T'],
    mcp: {
      tool: 'create_topup_link',
      about:
        "PayPal's approval page for the pack's price. Nothing is charged until the person approves and PayPal " +
        'confirms the capture; the credits are granted then, once. 409 when the pack is archived or payments are ' +
        'not connected.',
      use: 'Use it when a person ran out of credits and wants a pack: hand them `approve_url`. Returns the order.',
      level: 'W',
      rename: { account: 'namespaceId' },
      spends: async (ctx, params, body) => {
        const b = body as { account: string };
        const pack = await packs.quotePackCheckout(ctx, params.packId, b.account);
        return {
          amount: pack.price,
          currency: pack.currency,
          description:
            `Would make a PayPal order for account ${b.account} to buy credit pack ${pack.id} (${pack.amount} ` +
            `${pack.pool} credits) for ${pack.price} ${pack.currency}, once. Nothing is charged until the person ` +
            'approves and PayPal confirms the capture.',
        };
      },
    },
    tags,
    summary: 'Buy a credit pack: a PayPal order for an account',
    description:
      "Creates a PayPal order for the pack's price and answers it with `approve_url` (send the buyer there). The " +
      'credits are granted once, when PayPal confirms the capture (the order is captured when PayPal reports the ' +
      'approval, when the buyer returns to the hosted return page, or on `POST .../credit-pack-orders/:orderId/' +
      "complete`), never on the buyer's return alone. An account token buys only for its own account (403). 404 " +
      'for an unknown pack or account; 409 `pack_archived`, or when payments are not connected; 502 when PayPal fails.',
    params: S.packParams,
    body: S.packCheckoutBody,
    status: 201,
    errors: [403, 409, 502],
    response: S.packOrderSchema,
    handler: (s) =>
      packs.createPackCheckout(ctxOf(s), s.params.packId, { ...s.body, origin: s.origin, caller: s.caller }),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/credit-pack-orders/:orderId',
    sdk: 'creditPacks.getOrder',
    auth: ['S', 'P', 'T'],
    tags,
    summary: 'A credit pack order',
    description: "An account token sees only its own account's orders (another's is 404).",
    params: S.packOrderParams,
    response: S.packOrderSchema,
    handler: async (s) => packs.presentOrder(await orderFor(s, s.app!.id, s.params.orderId)),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/credit-pack-orders/:orderId/complete',
    sdk: 'creditPacks.complete',
    auth: ['S', 'P', 'T'],
    tags,
    summary: 'Complete a credit pack order after the buyer approved',
    description:
      'Asks PayPal: an approved order is captured, and a capture PayPal reports completed grants the credits ' +
      '(once, however often this is called and whatever notification came first). Answers `created` while the ' +
      'buyer has not approved.',
    params: S.packOrderParams,
    errors: [502],
    response: S.packOrderSchema,
    handler: async (s) => {
      const o = await orderFor(s, s.app!.id, s.params.orderId);
      const now = await settlePackOrder(s.deps, s.app!.id, o.id).catch((err: unknown) => {
        throw asHttpError(err);
      });
      return packs.presentOrder(now ?? o);
    },
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/credit-pack-orders',
    sdk: 'creditPacks.accountOrders',
    auth: ['S', 'T'],
    tags,
    summary: "An account's credit pack orders, newest first",
    description: 'At most the 100 newest. An account token reads only its own account.',
    params: appIdParams.extend({ accountId: z.string().min(1).max(255) }),
    response: z.array(S.packOrderSchema),
    handler: (s) => packs.listAccountOrders(s.em, s.app!.id, s.params.accountId),
  }),
];
