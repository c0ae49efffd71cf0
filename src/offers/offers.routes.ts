import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { ctxOf, MCP_ACCOUNT_ARG, route } from '../http/route.js';
import * as S from './offers.schemas.js';
import * as offers from './offers.service.js';
import * as views from './offer-views.service.js';

const tags = ['Offers'];
const offer = S.offerSchema;

export const offerRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/offers',
    sdk: 'offers.list',
    auth: ['S'],
    tags,
    summary: 'Offers with live status and completed redemptions',
    params: appIdParams,
    response: z.array(offer),
    handler: (s) => offers.listOffers(ctxOf(s)),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/offers',
    sdk: 'offers.create',
    auth: ['S'],
    tags,
    summary: 'Create a draft offer',
    description:
      'Shareable: `id` is the slug (normalized). Targeted: `account_id`, and the service picks an unguessable id. ' +
      'Prices per plan, interval and currency; `cycles` bills the offer price that many cycles before the ' +
      'regular price (409 when the plan has none in that interval and currency). A plan, add-on, entitlement or ' +
      'fallback that does not exist is a 404 naming the field.',
    params: appIdParams,
    body: S.createOfferBody,
    status: 201,
    errors: [409],
    response: offer,
    handler: (s) => offers.createOffer(ctxOf(s), s.body),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/offers/draft-preview',
    // Stores nothing.
    writes: false,
    sdk: 'offers.previewDraft',
    auth: ['S'],
    tags,
    summary: 'Preview unsaved offer fields as a buyer would see them',
    description: 'Validates like create; stores nothing.',
    params: appIdParams,
    body: S.createOfferBody,
    errors: [409],
    response: S.publicOfferSchema,
    handler: (s) => views.draftPreview(ctxOf(s), s.body),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/offers/:offerId',
    sdk: 'offers.get',
    auth: ['S'],
    tags,
    summary: 'An offer',
    params: S.offerParams,
    response: offer,
    handler: (s) => offers.getOffer(ctxOf(s), s.params.offerId),
  }),
  route({
    method: 'PATCH',
    path: '/apps/:appId/offers/:offerId',
    sdk: 'offers.update',
    auth: ['S'],
    tags,
    summary: 'Edit an offer (future purchases only)',
    description:
      'For a live offer, new prices get their provider billing plans at once. 409 for intro `cycles` on a plan ' +
      'without a regular price in that interval and currency to continue at.',
    params: S.offerParams,
    body: S.updateOfferBody,
    errors: [409],
    response: offer,
    handler: (s) => offers.updateOffer(ctxOf(s), s.params.offerId, s.body),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/offers/:offerId',
    sdk: 'offers.delete',
    auth: ['S'],
    tags,
    summary: 'Delete an offer (buyers keep price and extras)',
    description:
      'In the same transaction, offers falling back to it lose their fallback and entitlements whose 402 upgrade ' +
      'it was lose their `overage.offer_id` (the upgrade then uses regular prices).',
    params: S.offerParams,
    response: offer,
    handler: (s) => offers.deleteOffer(ctxOf(s), s.params.offerId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/offers/:offerId/publish',
    sdk: 'offers.publish',
    auth: ['S'],
    tags,
    summary: 'Publish: create the provider billing plans and make the offer active',
    description:
      '409 when the payment provider is not connected or the offer is archived; 502 when the provider fails.',
    params: S.offerParams,
    errors: [409, 502],
    response: offer,
    handler: (s) => offers.publishOffer(ctxOf(s), s.params.offerId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/offers/:offerId/archive',
    sdk: 'offers.archive',
    auth: ['S'],
    tags,
    summary: 'Archive: no new purchases',
    params: S.offerParams,
    response: offer,
    handler: (s) => offers.archiveOffer(ctxOf(s), s.params.offerId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/offers/:offerId/preview',
    // Stores nothing.
    writes: false,
    sdk: 'offers.preview',
    auth: ['S'],
    tags,
    summary: 'What each plan grants, and what changes for an account',
    params: S.offerParams,
    body: S.previewBody,
    response: S.offerPreviewSchema,
    handler: (s) => views.previewOffer(ctxOf(s), s.params.offerId, s.body.account),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/offers/:offerId/stats',
    sdk: 'offers.stats',
    auth: ['S'],
    tags,
    summary: 'Views, checkouts, conversion, revenue by plan, ref and bump',
    params: S.offerParams,
    response: S.offerStatsSchema,
    handler: (s) => views.offerStats(ctxOf(s), s.params.offerId),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/offers/:offerId/public',
    sdk: 'offers.getPublic',
    auth: ['S', 'P'],
    mcp: {
      tool: 'get_offer',
      level: 'R',
      about:
        'When it cannot be bought now (by `namespaceId`, if targeted): `fallback`, its own fallback, else the ' +
        'regular prices; `source` says which.',
      use:
        'Use it to show what a person can buy: the pricing table. Returns the plans and prices; ' +
        'create_upgrade_link makes the link to pay.',
      rename: { account: MCP_ACCOUNT_ARG },
      omit: ['ref'],
    },
    tags,
    summary: 'The offer for a checkout page (never 404)',
    description:
      "The offer when it can be bought now (by `account`, for a targeted one), else `fallback`, else the offer's " +
      'own fallback, else regular prices. `source` says which. With `account`, bumps for add-ons that account ' +
      'already owns are left out.',
    params: S.offerParams,
    query: S.publicQuery,
    response: S.publicOfferSchema,
    handler: (s) => views.publicOffer(ctxOf(s), s.params.offerId, s.query),
  }),
];
