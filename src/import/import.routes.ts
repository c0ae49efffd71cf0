import { appIdParams } from '../apps/apps.schemas.js';
import { ctxOf, route } from '../http/route.js';
import { FUTURE_SKEW_MINUTES, HISTORY_YEARS } from '../http/schemas.js';
import { importBody, importResultSchema } from './import.schemas.js';
import { importData } from './import.service.js';

export const importRoutes = [
  route({
    method: 'POST',
    path: '/apps/:appId/import',
    sdk: 'imports.create',
    auth: ['A'],
    tags: ['Import'],
    summary: 'Import backdated accounts and usage (admin)',
    description:
      'Up to 10,000 accounts and 10,000 usage events. Validated as a whole first: one bad row is a 400 naming it ' +
      '(a 404 when a record it names does not exist, `accounts.3.plan: plan gold does not exist`; a 409 when an ' +
      'account id is taken) and nothing is written. ' +
      'Usage is added to the history and the counters. No webhooks fire. Every `created_at` is within the last ' +
      `${HISTORY_YEARS} years and at most ${FUTURE_SKEW_MINUTES} minutes ahead of the service's clock (else a 400).`,
    params: appIdParams,
    body: importBody,
    bodyLimit: '16mb',
    errors: [409, 413],
    status: 201,
    response: importResultSchema,
    handler: (s) => importData(ctxOf(s), s.body),
  }),
];
