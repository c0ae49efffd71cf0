// The catalog's entitlements routes. Entitlements: features and metered quantities, attached to plans and incentives.
import { z } from 'zod';
import { ctxOf, route } from '../http/route.js';
import { appIdParams } from '../apps/apps.schemas.js';
import * as S from './catalog.schemas.js';
import * as catalog from './catalog.service.js';

const ents = ['Entitlements'];

export const entitlementRoutes = [
  // ---- entitlements ----
  route({
    method: 'GET',
    path: '/apps/:appId/entitlements',
    sdk: 'entitlements.list',
    auth: ['S'],
    mcp: {
      tool: 'list_entitlements',
      use: 'Use it to learn entitlement ids and types. Returns every entitlement.',
      level: 'R',
    },
    tags: ents,
    summary: 'List entitlements (creation order)',
    params: appIdParams,
    response: z.array(S.entitlementSchema),
    handler: (s) => catalog.listEntitlements(ctxOf(s)),
  }),

  route({
    method: 'POST',
    path: '/apps/:appId/entitlements',
    sdk: 'entitlements.create',
    auth: ['S'],
    mcp: {
      tool: 'create_entitlement',
      use: 'Use it to add a feature or a metered quantity; then attach it to plans. Returns the new entitlement.',
      level: 'W',
    },
    tags: ents,
    summary: 'Create an entitlement',
    params: appIdParams,
    body: S.createEntitlementBody,
    status: 201,
    errors: [409],
    response: S.entitlementSchema,
    handler: (s) => catalog.createEntitlement(ctxOf(s), s.body),
  }),

  route({
    method: 'GET',
    path: '/apps/:appId/entitlements/:entitlementId',
    sdk: 'entitlements.get',
    auth: ['S'],
    mcp: { tool: 'get_entitlement', use: 'Returns the entitlement with its type and overage rule.', level: 'R' },
    tags: ents,
    summary: 'Get an entitlement',
    params: S.entitlementParams,
    response: S.entitlementSchema,
    handler: (s) => catalog.getEntitlement(ctxOf(s), s.params.entitlementId),
  }),

  route({
    method: 'PATCH',
    path: '/apps/:appId/entitlements/:entitlementId',
    sdk: 'entitlements.update',
    auth: ['S'],
    mcp: {
      tool: 'update_entitlement',
      about: 'The type cannot change.',
      use: 'Returns the updated entitlement.',
      level: 'W',
    },
    tags: ents,
    summary: 'Update an entitlement (name, description, overage)',
    description:
      '`overage.mode: block` makes a usage call that would pass the limit return 402. The type cannot change.',
    params: S.entitlementParams,
    body: S.updateEntitlementBody,
    response: S.entitlementSchema,
    handler: (s) => catalog.updateEntitlement(ctxOf(s), s.params.entitlementId, s.body),
  }),

  route({
    method: 'DELETE',
    path: '/apps/:appId/entitlements/:entitlementId',
    sdk: 'entitlements.delete',
    auth: ['S'],
    mcp: {
      tool: 'delete_entitlement',
      use: 'Returns the deleted entitlement.',
      level: 'F',
    },
    tags: ents,
    summary: 'Delete an entitlement',
    description: '409 while it is on a plan or an incentive. Its counters are deleted; usage history stays.',
    errors: [409],
    params: S.entitlementParams,
    response: S.entitlementSchema,
    handler: (s) => catalog.deleteEntitlement(ctxOf(s), s.params.entitlementId),
  }),
];
