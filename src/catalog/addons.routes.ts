// The catalog's addons routes. Add-ons: extras an account holds beside its plan.
import { z } from 'zod';
import { ctxOf, route } from '../http/route.js';
import { appIdParams } from '../apps/apps.schemas.js';
import * as S from './catalog.schemas.js';
import * as catalog from './catalog.service.js';

const addons = ['Add-ons'];

export const addonRoutes = [
  // ---- add-ons ----
  route({
    method: 'GET',
    path: '/apps/:appId/addons',
    sdk: 'addons.list',
    auth: ['S'],
    mcp: { tool: 'list_addons', use: 'Use it to learn add-on ids. Returns every add-on.', level: 'R' },
    tags: addons,
    summary: 'List add-ons (creation order)',
    params: appIdParams,
    response: z.array(S.addonSchema),
    handler: (s) => catalog.listAddons(ctxOf(s)),
  }),

  route({
    method: 'POST',
    path: '/apps/:appId/addons',
    sdk: 'addons.create',
    auth: ['S'],
    mcp: {
      tool: 'create_addon',
      use: 'Use it to add something sold or granted beside plans. Returns the new add-on.',
      level: 'W',
    },
    tags: addons,
    summary: 'Create an add-on',
    params: appIdParams,
    body: S.createAddonBody,
    status: 201,
    errors: [409],
    response: S.addonSchema,
    handler: (s) => catalog.createAddon(ctxOf(s), s.body),
  }),

  route({
    method: 'GET',
    path: '/apps/:appId/addons/:addonId',
    sdk: 'addons.get',
    auth: ['S'],
    mcp: { tool: 'get_addon', use: 'Returns the add-on.', level: 'R' },
    tags: addons,
    summary: 'Get an add-on',
    params: S.addonParams,
    response: S.addonSchema,
    handler: (s) => catalog.getAddon(ctxOf(s), s.params.addonId),
  }),

  route({
    method: 'PATCH',
    path: '/apps/:appId/addons/:addonId',
    sdk: 'addons.update',
    auth: ['S'],
    mcp: { tool: 'update_addon', use: 'Returns the updated add-on.', level: 'W' },
    tags: addons,
    summary: 'Update an add-on',
    params: S.addonParams,
    body: S.updateAddonBody,
    response: S.addonSchema,
    handler: (s) => catalog.updateAddon(ctxOf(s), s.params.addonId, s.body),
  }),

  route({
    method: 'DELETE',
    path: '/apps/:appId/addons/:addonId',
    sdk: 'addons.delete',
    auth: ['S'],
    mcp: { tool: 'delete_addon', use: 'Returns the deleted add-on.', level: 'F' },
    tags: addons,
    summary: 'Delete an add-on',
    description: '409 while plans, incentives, accounts, live offers or open checkouts hold it.',
    errors: [409],
    params: S.addonParams,
    response: S.addonSchema,
    handler: (s) => catalog.deleteAddon(ctxOf(s), s.params.addonId),
  }),
];
