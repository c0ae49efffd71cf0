// The catalog's plans routes. Plans, their pricing cards and meta, and what they grant (entitlements with limits, add-ons).
import { z } from 'zod';
import { ctxOf, route } from '../http/route.js';
import { appIdParams } from '../apps/apps.schemas.js';
import * as S from './catalog.schemas.js';
import * as catalog from './catalog.service.js';

const plans = ['Plans'];

export const planRoutes = [
  // ---- plans (static paths before /plans/:planId) ----
  route({
    method: 'GET',
    path: '/apps/:appId/plans',
    sdk: 'plans.list',
    auth: ['S'],
    mcp: {
      tool: 'list_plans',
      use: 'Use it first to learn plan ids, limits and add-ons. Returns every plan.',
      level: 'R',
    },
    tags: plans,
    summary: 'List plans (creation order)',
    params: appIdParams,
    response: z.array(S.planSchema),
    handler: (s) => catalog.listPlans(ctxOf(s)),
  }),

  route({
    method: 'GET',
    path: '/apps/:appId/plans/pricing',
    sdk: 'plans.listPricingCards',
    auth: ['S', 'P'],
    mcp: {
      tool: 'list_pricing_cards',
      use: 'Use it to see what buyers are offered and at what price. Returns the cards, each with its plan_id.',
      level: 'R',
    },
    tags: plans,
    summary: 'Pricing cards of the plans that have one',
    params: appIdParams,
    response: z.array(S.pricingCardSchema),
    handler: (s) => catalog.listPricingCards(ctxOf(s)),
  }),

  route({
    method: 'POST',
    path: '/apps/:appId/plans',
    sdk: 'plans.create',
    auth: ['S'],
    mcp: {
      tool: 'create_plan',
      use: 'Attach entitlements and add-ons afterwards. Returns the new plan.',
      level: 'W',
    },
    tags: plans,
    summary: 'Create a plan',
    params: appIdParams,
    body: S.createPlanBody,
    status: 201,
    errors: [409],
    response: S.planSchema,
    handler: (s) => catalog.createPlan(ctxOf(s), s.body),
  }),

  route({
    method: 'GET',
    path: '/apps/:appId/plans/:planId',
    sdk: 'plans.get',
    auth: ['S'],
    mcp: {
      tool: 'get_plan',
      use: 'Returns the plan: its limits, add-ons, pricing card and meta.',
      level: 'R',
    },
    tags: plans,
    summary: 'Get a plan',
    params: S.planParams,
    response: S.planSchema,
    handler: (s) => catalog.getPlan(ctxOf(s), s.params.planId),
  }),

  route({
    method: 'PATCH',
    path: '/apps/:appId/plans/:planId',
    sdk: 'plans.update',
    auth: ['S'],
    mcp: {
      tool: 'update_plan',
      about: '`meta` and `privateMetaKeys`, when sent, replace the old values.',
      use: 'Returns the updated plan.',
      level: 'W',
    },
    tags: plans,
    summary: 'Update a plan (merge)',
    description:
      'Merges the sent fields. `meta` and `privateMetaKeys`, when sent, replace the old values; `pricingCard: ' +
      'null` removes the card.',
    params: S.planParams,
    body: S.updatePlanBody,
    response: S.planSchema,
    handler: (s) => catalog.updatePlan(ctxOf(s), s.params.planId, s.body),
  }),

  route({
    method: 'DELETE',
    path: '/apps/:appId/plans/:planId',
    sdk: 'plans.delete',
    auth: ['S'],
    mcp: {
      tool: 'delete_plan',
      use: 'Returns the deleted plan.',
      level: 'F',
    },
    tags: plans,
    summary: 'Delete a plan',
    description: '409 names what holds it: accounts, live offers, checkouts, changes, pauses.',
    errors: [409],
    params: S.planParams,
    response: S.planSchema,
    handler: (s) => catalog.deletePlan(ctxOf(s), s.params.planId),
  }),

  route({
    method: 'GET',
    path: '/apps/:appId/plans/:planId/pricing',
    sdk: 'plans.getPricingCard',
    auth: ['S', 'P'],
    mcp: { tool: 'get_pricing_card', about: '', use: 'Returns the card.', level: 'R' },
    tags: plans,
    summary: "A plan's pricing card",
    description: '404 when the plan has no pricing card.',
    params: S.planParams,
    response: S.pricingCardSchema,
    handler: (s) => catalog.getPricingCard(ctxOf(s), s.params.planId),
  }),

  route({
    method: 'PATCH',
    path: '/apps/:appId/plans/:planId/meta',
    sdk: 'plans.mergeMeta',
    auth: ['S'],
    mcp: {
      tool: 'merge_plan_meta',
      about: '',
      use: 'Use it to change some meta keys without resending the rest. Returns the plan.',
      level: 'W',
      bodyArg: 'meta',
    },
    tags: plans,
    summary: "Merge keys into a plan's meta",
    description: 'The body is the map of keys to merge; a key sent as null is removed.',
    params: S.planParams,
    body: S.planMetaBody,
    response: S.planSchema,
    handler: (s) => catalog.mergePlanMeta(ctxOf(s), s.params.planId, s.body),
  }),

  route({
    method: 'POST',
    path: '/apps/:appId/plans/:planId/entitlements',
    sdk: 'plans.attachEntitlement',
    auth: ['S'],
    mcp: {
      tool: 'attach_plan_entitlement',
      rename: { id: 'entitlementId' },
      about: '',
      use: "Use it to give a plan's accounts a feature or a usage limit. Returns the plan.",
      level: 'W',
    },
    tags: plans,
    summary: 'Attach an entitlement to a plan',
    description: '`max: null` (or no max) means unlimited.',
    params: S.planParams,
    body: S.limitAttachBody,
    status: 201,
    errors: [409],
    response: S.planSchema,
    handler: (s) => catalog.attachLink(ctxOf(s), 'plan', s.params.planId, 'entitlement', s.body.id, s.body.max ?? null),
  }),

  route({
    method: 'PATCH',
    path: '/apps/:appId/plans/:planId/entitlements/:entitlementId',
    sdk: 'plans.setEntitlementLimit',
    auth: ['S'],
    mcp: {
      tool: 'set_plan_entitlement_limit',
      use: 'Returns the plan.',
      level: 'W',
    },
    tags: plans,
    summary: "Set a plan's limit for an entitlement",
    params: S.planEntitlementParams,
    body: S.limitBody,
    response: S.planSchema,
    handler: (s) => catalog.setLinkLimit(ctxOf(s), 'plan', s.params.planId, s.params.entitlementId, s.body.max),
  }),

  route({
    method: 'DELETE',
    path: '/apps/:appId/plans/:planId/entitlements/:entitlementId',
    sdk: 'plans.detachEntitlement',
    auth: ['S'],
    mcp: {
      tool: 'detach_plan_entitlement',
      use: 'Accounts on the plan lose that entitlement at once. Returns the plan.',
      level: 'F',
    },
    tags: plans,
    summary: 'Detach an entitlement from a plan',
    params: S.planEntitlementParams,
    response: S.planSchema,
    handler: (s) => catalog.detachLink(ctxOf(s), 'plan', s.params.planId, 'entitlement', s.params.entitlementId),
  }),

  route({
    method: 'POST',
    path: '/apps/:appId/plans/:planId/addons',
    sdk: 'plans.attachAddon',
    auth: ['S'],
    mcp: { tool: 'attach_plan_addon', use: 'Returns the plan.', level: 'W', rename: { id: 'addonId' } },
    tags: plans,
    summary: 'Attach an add-on to a plan',
    params: S.planParams,
    body: S.idBody,
    status: 201,
    errors: [409],
    response: S.planSchema,
    handler: (s) => catalog.attachLink(ctxOf(s), 'plan', s.params.planId, 'addon', s.body.id),
  }),

  route({
    method: 'DELETE',
    path: '/apps/:appId/plans/:planId/addons/:addonId',
    sdk: 'plans.detachAddon',
    auth: ['S'],
    mcp: {
      tool: 'detach_plan_addon',
      use: 'Accounts on the plan lose the add-on unless they own it. Returns the plan.',
      level: 'F',
    },
    tags: plans,
    summary: 'Detach an add-on from a plan',
    params: S.planAddonParams,
    response: S.planSchema,
    handler: (s) => catalog.detachLink(ctxOf(s), 'plan', s.params.planId, 'addon', s.params.addonId),
  }),
];
