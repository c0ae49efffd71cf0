import { z } from 'zod';
import { effectiveAccess } from '../access/access.service.js';
import { appIdParams } from '../apps/apps.schemas.js';
import { planParams, idBody } from '../catalog/catalog.schemas.js';
import { pageQuery } from '../http/pagination.js';
import { audit } from '../http/audit.js';
import { ctxOf, MCP_ACCOUNT_ARG, route } from '../http/route.js';
import * as S from './accounts.schemas.js';
import * as accounts from './accounts.service.js';
import { accountId } from '../http/schemas.js';

const accessQuery = z.object({
  entity: accountId
    .optional()
    .describe(
      'An entity registered under the account, e.g. `u_42`: per-entity counters and pool balances (and so `left` ' +
        "and `can` of the features using them) are that entity's. 404 for an entity not registered under it.",
    ),
});

const tags = ['Accounts'];

export const accountRoutes = [
  // static paths before /namespaces/:accountId
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces',
    sdk: 'accounts.list',
    auth: ['S'],
    mcp: {
      tool: 'list_accounts',
      about: '',
      use: "Use it to find an account's id by name or plan. Returns a page.",
      level: 'R',
      // list_accounts_with_incentive is the tool for accounts with an incentive.
      omit: ['offer', 'has_incentive'],
    },
    tags,
    summary: 'Search accounts (newest first, paged)',
    description:
      '`q` matches the id or the name (case-insensitive substring). `has_incentive` counts only incentives that ' +
      'still apply.',
    params: appIdParams,
    query: S.searchQuery,
    response: S.accountPageSchema,
    handler: (s) => accounts.searchAccounts(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/count',
    sdk: 'accounts.count',
    auth: ['S'],
    mcp: { tool: 'count_accounts', use: 'Returns `{ count }`.', level: 'R' },
    tags,
    summary: 'Number of accounts',
    params: appIdParams,
    response: z.object({ count: z.number() }),
    handler: (s) => accounts.countAccounts(ctxOf(s)),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/with-incentive',
    sdk: 'accounts.listWithIncentive',
    auth: ['S'],
    mcp: {
      tool: 'list_accounts_with_incentive',
      use: 'Use it to see who a promotion reaches. Returns a page.',
      level: 'R',
    },
    tags,
    summary: 'Accounts whose incentive applies (paged)',
    params: appIdParams,
    query: S.withIncentiveQuery,
    response: S.accountPageSchema,
    handler: (s) => accounts.accountsWithIncentive(ctxOf(s), s.query),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces',
    sdk: 'accounts.create',
    auth: ['S'],
    mcp: {
      tool: 'create_account',
      about: 'The id is kept as sent; 409 if it exists.',
      use: 'Use it when a new user or team starts using the product. Returns the account.',
      rename: { id: MCP_ACCOUNT_ARG },
      level: 'W',
    },
    tags,
    summary: 'Create an account',
    description: "The id is kept exactly as sent; 409 if it exists. Without `plan` the app's free plan is used.",
    params: appIdParams,
    body: S.createAccountBody,
    status: 201,
    errors: [409],
    response: S.accountDetailSchema,
    handler: (s) => accounts.createAccount(ctxOf(s), s.body),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId',
    sdk: 'accounts.get',
    auth: ['S'],
    mcp: {
      tool: 'get_account',
      use: 'Returns the account.',
      level: 'R',
    },
    tags,
    summary: 'Get an account with its subscription and own add-ons',
    params: S.accountParams,
    response: S.accountDetailSchema,
    handler: (s) => accounts.getAccount(ctxOf(s), s.params.accountId),
  }),
  route({
    method: 'PATCH',
    path: '/apps/:appId/namespaces/:accountId',
    sdk: 'accounts.update',
    auth: ['S'],
    mcp: {
      tool: 'update_account',
      about: 'It changes the plan without payment (create_upgrade_link charges for one).',
      use: 'Returns the account.',
      level: 'W',
    },
    tags,
    summary: 'Update an account (merge)',
    description:
      'Merges `name, plan, incentive, incentive_expires_at`; changes the plan without payment. A set ' +
      "`incentive_expires_at` schedules the incentive's removal (a Temporal workflow); 409 when the account has no " +
      'incentive to end.',
    params: S.accountParams,
    body: S.updateAccountBody,
    errors: [409],
    response: S.accountDetailSchema,
    handler: (s) => accounts.updateAccount(ctxOf(s), s.params.accountId, s.body),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/namespaces/:accountId',
    sdk: 'accounts.delete',
    auth: ['S'],
    mcp: { tool: 'delete_account', use: 'Returns the deleted account.', level: 'F' },
    tags,
    summary: 'Delete an account and its counters',
    description: 'Usage history stays for analytics.',
    params: S.accountParams,
    response: S.accountDetailSchema,
    handler: (s) => accounts.deleteAccount(ctxOf(s), s.params.accountId),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/namespaces/:accountId/incentive',
    sdk: 'accounts.removeIncentive',
    auth: ['S'],
    mcp: {
      tool: 'remove_account_incentive',
      use: "The account falls back to its plan's limits. Returns the account.",
      level: 'F',
    },
    tags,
    summary: "Remove the account's incentive",
    params: S.accountParams,
    response: S.accountDetailSchema,
    handler: (s) => accounts.removeIncentive(ctxOf(s), s.params.accountId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/token',
    // Signs a token; stores nothing (a read-only app's visitors may read their own account with one). But a token
    // acts for the account (cancel sessions), so in the console it takes a member, as writes do.
    writes: false,
    role: 'member',
    sdk: 'accounts.createToken',
    auth: ['S'],
    tags,
    summary: 'Mint an account token',
    description: '`ttl_seconds` 60 to 86,400 (default 3,600). Regenerating the secret key invalidates every token.',
    params: S.accountParams,
    body: S.tokenBody,
    status: 201,
    errors: [409],
    response: S.tokenSchema,
    handler: async (s) => {
      const token = await accounts.createAccountToken(ctxOf(s), s.params.accountId, s.body.ttl_seconds);
      // A credential handed to a person's browser: logged with who asked (keys' own calls are the backend's).
      if (s.caller.kind === 'person') audit(s, 'account_token_minted', { accountId: s.params.accountId });
      return token;
    },
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/plan',
    sdk: 'access.get',
    auth: ['S', 'P', 'T'],
    mcp: {
      tool: 'get_account_access',
      use:
        'Use it to answer what an account may do now. Returns the ' +
        'entitlements with limits, usage and whether each is allowed.',
      level: 'R',
    },
    tags,
    summary: 'Effective access (private meta removed)',
    params: S.accountParams,
    query: accessQuery,
    response: S.accessSchema,
    handler: (s) =>
      effectiveAccess(s.em, s.app!.id, s.params.accountId, { includePrivateMeta: false, entity: s.query.entity }),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/full-plan',
    sdk: 'access.getPrivate',
    auth: ['S', 'T'],
    mcp: {
      tool: 'get_account_access_private',
      use: 'Returns what get_account_access does, private meta keys included.',
      level: 'R',
    },
    tags,
    summary: 'Effective access with private meta',
    params: S.accountParams,
    query: accessQuery,
    response: S.accessSchema,
    handler: (s) =>
      effectiveAccess(s.em, s.app!.id, s.params.accountId, { includePrivateMeta: true, entity: s.query.entity }),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/addons',
    sdk: 'accounts.grantAddon',
    auth: ['S'],
    tags,
    summary: 'Give the account an add-on of its own',
    params: S.accountParams,
    body: idBody,
    status: 201,
    errors: [409],
    response: S.accountDetailSchema,
    handler: (s) => accounts.grantAddon(ctxOf(s), s.params.accountId, s.body.id),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/namespaces/:accountId/addons/:addonId',
    sdk: 'accounts.revokeAddon',
    auth: ['S'],
    tags,
    summary: 'Remove an add-on the account owns',
    params: S.accountAddonParams,
    response: S.accountDetailSchema,
    handler: (s) => accounts.revokeAddon(ctxOf(s), s.params.accountId, s.params.addonId),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/plans/:planId/namespaces',
    sdk: 'plans.listAccounts',
    auth: ['S'],
    mcp: {
      tool: 'list_plan_accounts',
      use: 'Use it before deleting or changing a plan. Returns a page.',
      level: 'R',
    },
    tags,
    summary: 'Accounts on a plan (paged)',
    params: planParams,
    query: pageQuery,
    response: S.accountPageSchema,
    handler: (s) => accounts.accountsOnPlan(ctxOf(s), s.params.planId, s.query),
  }),
];
