import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { ctxOf, route } from '../http/route.js';
import * as S from './offers.schemas.js';
import * as offers from './offers.service.js';

const tags = ['Offers'];
const offer = z.record(z.string(), z.unknown());

export const offerRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/offers',
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
    auth: ['S'],
    tags,
    summary: 'Create a draft offer',
    description:
      'Shareable: `id` is the slug (normalized). Targeted: `account_id`, and the service picks an unguessable id. ' +
      'Prices per plan, interval and currency; `cycles` bills the offer price that many cycles before the ' +
      'regular price.',
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
    auth: ['S'],
    tags,
    summary: 'Preview unsaved offer fields as a buyer would see them',
    description: 'Validates like create; stores nothing.',
    params: appIdParams,
    body: S.createOfferBody,
    response: offer,
    handler: (s) => offers.draftPreview(ctxOf(s), s.body),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/offers/:offerId',
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
    auth: ['S'],
    tags,
    summary: 'Edit an offer (future purchases only)',
    description: 'For a live offer, new prices get their provider billing plans at once.',
    params: S.offerParams,
    body: S.updateOfferBody,
    response: offer,
    handler: (s) => offers.updateOffer(ctxOf(s), s.params.offerId, s.body),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/offers/:offerId',
    auth: ['S'],
    tags,
    summary: 'Delete an offer (buyers keep price and extras)',
    params: S.offerParams,
    response: offer,
    handler: (s) => offers.deleteOffer(ctxOf(s), s.params.offerId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/offers/:offerId/publish',
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
    auth: ['S'],
    tags,
    summary: 'What each plan grants, and what changes for an account',
    params: S.offerParams,
    body: S.previewBody,
    response: offer,
    handler: (s) => offers.previewOffer(ctxOf(s), s.params.offerId, s.body.account),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/offers/:offerId/stats',
    auth: ['S'],
    tags,
    summary: 'Views, checkouts, conversion, revenue by plan, ref and bump',
    params: S.offerParams,
    response: offer,
    handler: (s) => offers.offerStats(ctxOf(s), s.params.offerId),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/offers/:offerId/public',
    auth: ['S', 'P'],
    tags,
    summary: 'The offer for a checkout page (never 404)',
    description:
      "The offer when it can be bought now (by `account`, for a targeted one), else `fallback`, else the offer's " +
      'own fallback, else regular prices. `source` says which.',
    params: S.offerParams,
    query: S.publicQuery,
    response: offer,
    handler: (s) => offers.publicOffer(ctxOf(s), s.params.offerId, s.query),
  }),
];
