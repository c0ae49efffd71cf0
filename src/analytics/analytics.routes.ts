import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { ctxOf, route } from '../http/route.js';
import * as S from './analytics.schemas.js';
import * as analytics from './analytics.service.js';

const tags = ['Analytics'];

export const analyticsRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/analytics',
    auth: ['S'],
    tags,
    summary: 'Calls and total amount per entitlement',
    description: '`interval`: 7d, 30d, 60d, 6m, year or alltime. `namespace` narrows to one account.',
    params: appIdParams,
    query: S.summaryQuery,
    response: S.summarySchema,
    handler: (s) => analytics.summary(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/top-namespaces',
    auth: ['S'],
    tags,
    summary: 'Accounts with the most usage',
    description: '`limit` 1 to 100 (default 10); anything else is a 400.',
    params: appIdParams,
    query: S.topQuery,
    response: S.topSchema,
    handler: (s) => analytics.topAccounts(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/timeseries',
    auth: ['S'],
    tags,
    summary: 'Usage over time',
    description: 'Daily buckets up to 60 days, weekly (Monday, UTC) beyond; every bucket is present.',
    params: appIdParams,
    query: S.timeseriesQuery,
    response: S.timeseriesSchema,
    handler: (s) => analytics.timeseries(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/analytics/events',
    auth: ['S'],
    tags,
    summary: 'Usage history, newest first',
    description: '`limit` default 50, at most 200 (larger values give 200).',
    params: appIdParams,
    query: S.eventsQuery,
    response: z.object({ data: z.array(S.usageEventSchema) }),
    handler: (s) => analytics.usageEvents(ctxOf(s), s.query),
  }),
  route({ method: 'GET', path: '/apps/:appId/analytics/reports', auth: ['S'], tags, summary: 'Saved reports', params: appIdParams, response: z.array(S.reportSchema), handler: (s) => analytics.listReports(ctxOf(s)) }),
  route({ method: 'POST', path: '/apps/:appId/analytics/reports', auth: ['S'], tags, summary: 'Save a report', params: appIdParams, body: S.createReportBody, status: 201, response: S.reportSchema, handler: (s) => analytics.createReport(ctxOf(s), s.body) }),
  route({ method: 'GET', path: '/apps/:appId/analytics/reports/:id', auth: ['S'], tags, summary: 'A saved report', params: S.reportParams, response: S.reportSchema, handler: (s) => analytics.getReport(ctxOf(s), s.params.id) }),
  route({ method: 'PATCH', path: '/apps/:appId/analytics/reports/:id', auth: ['S'], tags, summary: 'Update a saved report (merge)', params: S.reportParams, body: S.updateReportBody, response: S.reportSchema, handler: (s) => analytics.updateReport(ctxOf(s), s.params.id, s.body) }),
  route({ method: 'DELETE', path: '/apps/:appId/analytics/reports/:id', auth: ['S'], tags, summary: 'Delete a saved report', params: S.reportParams, response: S.reportSchema, handler: (s) => analytics.deleteReport(ctxOf(s), s.params.id) }),
];
