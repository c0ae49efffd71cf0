import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { ctxOf, MCP_ACCOUNT_ARG, route } from '../http/route.js';
import * as S from './analytics.schemas.js';
import * as analytics from './analytics.service.js';
import { creditTopups } from './credit-topups.service.js';
import { creditsConsumed } from './credits-consumed.service.js';
import { upgradeFunnel } from './upgrades.service.js';

const tags = ['Analytics'];
/** The rule every window over the usage history shares (src/analytics/analytics.service.ts, `refuseUnrolled`). */
const UNROLLED =
  ' A window over more than `ANALYTICS_UNROLLED_ROWS_MAX` (250,000) usage rows the daily roll-up has not reached ' +
  '(a fresh import, usage with past timestamps) answers 503 with `Retry-After` saying when it will be ready, and ' +
  "starts the app's roll-up.";

export const analyticsRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/analytics',
    sdk: 'analytics.summary',
    auth: ['S'],
    mcp: {
      tool: 'get_usage_summary',
      about: '',
      use: 'Returns the window and one row per entitlement.',
      rename: { namespace: MCP_ACCOUNT_ARG },
      level: 'R',
    },
    tags,
    summary: 'Calls and total amount per entitlement',
    description: '`interval`: 7d, 30d, 60d, 6m, year or alltime. `namespace` narrows to one account.' + UNROLLED,
    params: appIdParams,
    query: S.summaryQuery,
    response: S.summarySchema,
    handler: (s) => analytics.summary(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/upgrades',
    sdk: 'analytics.upgrades',
    auth: ['S'],
    tags,
    summary: 'The 402 upgrade funnel: limit reached, link shown, opened, paid',
    description:
      '`interval`: 7d, 30d, 60d, 6m, year or alltime; `entitlement` narrows to one limit. `limit_reached` counts ' +
      '402 answers that offered an upgrade, `link_shown` those with a checkout link, `opened` the provider approval ' +
      'links a 402 made that a buyer opened, `paid` those completed (with their first payments in `revenue`).',
    params: appIdParams,
    query: S.upgradesQuery,
    response: S.upgradesSchema,
    handler: (s) => upgradeFunnel(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/top-namespaces',
    sdk: 'analytics.topAccounts',
    auth: ['S'],
    mcp: {
      tool: 'top_accounts_by_usage',
      about: '',
      use: 'Use it to find the heaviest users (upgrade candidates). Returns the window and the accounts, most usage first.',
      rename: { namespace: MCP_ACCOUNT_ARG },
      level: 'R',
    },
    tags,
    summary: 'Accounts with the most usage',
    description: '`limit` 1 to 100 (default 10); anything else is a 400.' + UNROLLED,
    params: appIdParams,
    query: S.topQuery,
    response: S.topSchema,
    handler: (s) => analytics.topAccounts(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/timeseries',
    sdk: 'analytics.timeseries',
    auth: ['S'],
    mcp: {
      tool: 'get_usage_timeseries',
      use: 'Use it for trends. Returns the window and the buckets.',
      rename: { namespace: MCP_ACCOUNT_ARG },
      level: 'R',
    },
    tags,
    summary: 'Usage over time',
    description: 'Daily buckets up to 60 days, weekly (Monday, UTC) beyond; every bucket is present.' + UNROLLED,
    params: appIdParams,
    query: S.timeseriesQuery,
    response: S.timeseriesSchema,
    handler: (s) => analytics.timeseries(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/credits',
    sdk: 'analytics.credits',
    auth: ['S'],
    tags,
    summary: 'Credits consumed by feature and by pool over time',
    description:
      '`interval`: 7d, 30d, 60d, 6m, year or alltime; `namespace`, `pool` and `feature` narrow it. Read from the ' +
      "credits ledger: `debited` is what the features' draws took (at the cost of the moment of each draw; nothing " +
      'while a pool is unlimited), `refunded` what negative usage gave back, `consumed` the difference; grants, ' +
      'expiries and top-ups are not consumption. Totals, then per pool and per feature, then `points`: daily buckets ' +
      'up to 60 days, weekly (Monday, UTC) beyond, every bucket present, with the features that drew in each. ' +
      "Unknown filters answer zeros. A window longer than the database's statement bound answers 503 with " +
      '`Retry-After`.',
    params: appIdParams,
    query: S.creditsQuery,
    response: S.creditsSchema,
    handler: (s) => creditsConsumed(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/credits/topups',
    sdk: 'analytics.creditTopups',
    auth: ['S'],
    tags,
    summary: 'Top-up revenue: credit pack orders PayPal captured, less refunds, by pack and currency',
    description:
      '`interval`: 7d, 30d, 60d, 6m, year or alltime; `namespace` (the buying account) and `pool` narrow it. Counts ' +
      'only pack orders whose capture PayPal confirmed (an order created or approved but not captured counts ' +
      'nothing), placed in the window by the time of their capture. `captured` is the money captured, `refunded` ' +
      'what PayPal refunded of those captures so far (in part or in full, whenever the refund came), `net` the ' +
      'difference. `data` has one row per pack and currency, `totals` one per currency: amounts in different ' +
      'currencies are never added up. Nothing captured: empty lists.',
    params: appIdParams,
    query: S.topupsQuery,
    response: S.topupsSchema,
    handler: (s) => creditTopups(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/events',
    sdk: 'analytics.events',
    auth: ['S'],
    mcp: {
      tool: 'list_usage_events',
      about: '',
      use: 'Returns the events.',
      rename: { namespace: MCP_ACCOUNT_ARG },
      level: 'R',
    },
    tags,
    summary: 'Usage history, newest first',
    description: '`limit` default 50, at most 200 (larger values give 200).',
    params: appIdParams,
    query: S.eventsQuery,
    response: z.object({ data: z.array(S.usageEventSchema) }),
    handler: (s) => analytics.usageEvents(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/reports',
    sdk: 'reports.list',
    auth: ['S'],
    tags,
    summary: 'Saved reports',
    params: appIdParams,
    response: z.array(S.reportSchema),
    handler: (s) => analytics.listReports(ctxOf(s)),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/analytics/reports',
    sdk: 'reports.create',
    auth: ['S'],
    tags,
    summary: 'Save a report',
    params: appIdParams,
    body: S.createReportBody,
    status: 201,
    response: S.reportSchema,
    handler: (s) => analytics.createReport(ctxOf(s), s.body),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/reports/:id',
    sdk: 'reports.get',
    auth: ['S'],
    tags,
    summary: 'A saved report',
    params: S.reportParams,
    response: S.reportSchema,
    handler: (s) => analytics.getReport(ctxOf(s), s.params.id),
  }),
  route({
    method: 'PATCH',
    path: '/apps/:appId/analytics/reports/:id',
    sdk: 'reports.update',
    auth: ['S'],
    tags,
    summary: 'Update a saved report (merge)',
    params: S.reportParams,
    body: S.updateReportBody,
    response: S.reportSchema,
    handler: (s) => analytics.updateReport(ctxOf(s), s.params.id, s.body),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/analytics/reports/:id',
    sdk: 'reports.delete',
    auth: ['S'],
    tags,
    summary: 'Delete a saved report',
    params: S.reportParams,
    response: S.reportSchema,
    handler: (s) => analytics.deleteReport(ctxOf(s), s.params.id),
  }),
];
