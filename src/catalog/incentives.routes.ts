// The catalog's incentives routes. Incentives: time-bound overrides of what a plan grants, applied to accounts.
import { z } from 'zod';
import { ctxOf, route } from '../http/route.js';
import { appIdParams } from '../apps/apps.schemas.js';
import * as S from './catalog.schemas.js';
import * as catalog from './catalog.service.js';

const incs = ['Incentives'];

export const incentiveRoutes = [
  // ---- incentives ----
  route({
    method: 'GET',
    path: '/apps/:appId/incentives',
    sdk: 'incentives.list',
    auth: ['S'],
    mcp: {
      tool: 'list_incentives',
      use: 'Use it to learn incentive ids and what each grants. Returns every incentive.',
      level: 'R',
    },
    tags: incs,
    summary: 'List incentives (creation order)',
    params: appIdParams,
    response: z.array(S.incentiveSchema),
    handler: (s) => catalog.listIncentives(ctxOf(s)),
  }),

  route({
    method: 'POST',
    path: '/apps/:appId/incentives',
    sdk: 'incentives.create',
    auth: ['S'],
    mcp: {
      tool: 'create_incentive',
      use:
        'Use it to grant extra limits or add-ons on top of a plan (a promotion, a trial); apply it to ' +
        'accounts with update_account. Returns the new incentive.',
      level: 'W',
    },
    tags: incs,
    summary: 'Create an incentive',
    params: appIdParams,
    body: S.createIncentiveBody,
    status: 201,
    errors: [409],
    response: S.incentiveSchema,
    handler: (s) => catalog.createIncentive(ctxOf(s), s.body),
  }),

  route({
    method: 'GET',
    path: '/apps/:appId/incentives/:incentiveId',
    sdk: 'incentives.get',
    auth: ['S'],
    mcp: { tool: 'get_incentive', use: 'Returns the incentive with its overrides and add-ons.', level: 'R' },
    tags: incs,
    summary: 'Get an incentive',
    params: S.incentiveParams,
    response: S.incentiveSchema,
    handler: (s) => catalog.getIncentive(ctxOf(s), s.params.incentiveId),
  }),

  route({
    method: 'PATCH',
    path: '/apps/:appId/incentives/:incentiveId',
    sdk: 'incentives.update',
    auth: ['S'],
    mcp: {
      tool: 'update_incentive',
      about: '',
      use: 'Returns the updated incentive.',
      level: 'W',
    },
    tags: incs,
    summary: 'Update an incentive (merge)',
    description: '`entitlements` and `addons`, when sent, replace the lists.',
    params: S.incentiveParams,
    body: S.updateIncentiveBody,
    response: S.incentiveSchema,
    handler: (s) => catalog.updateIncentive(ctxOf(s), s.params.incentiveId, s.body),
  }),

  route({
    method: 'DELETE',
    path: '/apps/:appId/incentives/:incentiveId',
    sdk: 'incentives.delete',
    auth: ['S'],
    mcp: { tool: 'delete_incentive', use: 'Remove it from accounts first. Returns the deleted incentive.', level: 'F' },
    tags: incs,
    summary: 'Delete an incentive',
    description: '409 while accounts have it.',
    errors: [409],
    params: S.incentiveParams,
    response: S.incentiveSchema,
    handler: (s) => catalog.deleteIncentive(ctxOf(s), s.params.incentiveId),
  }),

  route({
    method: 'POST',
    path: '/apps/:appId/incentives/:incentiveId/entitlements',
    sdk: 'incentives.attachEntitlement',
    auth: ['S'],
    mcp: {
      tool: 'attach_incentive_entitlement',
      rename: { id: 'entitlementId' },
      use: 'Use it to raise a limit for accounts with the incentive. Returns the incentive.',
      level: 'W',
    },
    tags: incs,
    summary: 'Add an entitlement override to an incentive',
    params: S.incentiveParams,
    body: S.limitAttachBody,
    status: 201,
    errors: [409],
    response: S.incentiveSchema,
    handler: (s) =>
      catalog.attachLink(ctxOf(s), 'incentive', s.params.incentiveId, 'entitlement', s.body.id, s.body.max ?? null),
  }),

  route({
    method: 'PATCH',
    path: '/apps/:appId/incentives/:incentiveId/entitlements/:entitlementId',
    sdk: 'incentives.setEntitlementLimit',
    auth: ['S'],
    mcp: { tool: 'set_incentive_entitlement_limit', use: 'Returns the incentive.', level: 'W' },
    tags: incs,
    summary: "Set an incentive override's limit",
    params: S.incentiveEntitlementParams,
    body: S.limitBody,
    response: S.incentiveSchema,
    handler: (s) =>
      catalog.setLinkLimit(ctxOf(s), 'incentive', s.params.incentiveId, s.params.entitlementId, s.body.max),
  }),

  route({
    method: 'DELETE',
    path: '/apps/:appId/incentives/:incentiveId/entitlements/:entitlementId',
    sdk: 'incentives.detachEntitlement',
    auth: ['S'],
    mcp: {
      tool: 'detach_incentive_entitlement',
      use: "Accounts with the incentive fall back to their plan's limit. Returns the incentive.",
      level: 'F',
    },
    tags: incs,
    summary: 'Remove an entitlement override from an incentive',
    params: S.incentiveEntitlementParams,
    response: S.incentiveSchema,
    handler: (s) =>
      catalog.detachLink(ctxOf(s), 'incentive', s.params.incentiveId, 'entitlement', s.params.entitlementId),
  }),

  route({
    method: 'POST',
    path: '/apps/:appId/incentives/:incentiveId/addons',
    sdk: 'incentives.attachAddon',
    auth: ['S'],
    mcp: { tool: 'attach_incentive_addon', use: 'Returns the incentive.', level: 'W', rename: { id: 'addonId' } },
    tags: incs,
    summary: 'Add an add-on to an incentive',
    params: S.incentiveParams,
    body: S.idBody,
    status: 201,
    errors: [409],
    response: S.incentiveSchema,
    handler: (s) => catalog.attachLink(ctxOf(s), 'incentive', s.params.incentiveId, 'addon', s.body.id),
  }),

  route({
    method: 'DELETE',
    path: '/apps/:appId/incentives/:incentiveId/addons/:addonId',
    sdk: 'incentives.detachAddon',
    auth: ['S'],
    mcp: { tool: 'detach_incentive_addon', use: 'Returns the incentive.', level: 'F' },
    tags: incs,
    summary: 'Remove an add-on from an incentive',
    params: S.incentiveAddonParams,
    response: S.incentiveSchema,
    handler: (s) => catalog.detachLink(ctxOf(s), 'incentive', s.params.incentiveId, 'addon', s.params.addonId),
  }),
];
