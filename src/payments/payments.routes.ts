import { appIdParams } from '../apps/apps.schemas.js';
import { ctxOf, route } from '../http/route.js';
import { connectBody, connectionSchema } from './payments.schemas.js';
import { connect, disconnect, getConnection } from './payments.service.js';

const tags = ['Payment provider'];

export const paymentRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/payments',
    sdk: 'payments.get',
    auth: ['S'],
    tags,
    summary: 'Payment provider connection',
    description: 'Connected flag, environment, client id and webhook registration. The secret is never returned.',
    params: appIdParams,
    response: connectionSchema,
    handler: (s) => getConnection(ctxOf(s)),
  }),
  route({
    method: 'PUT',
    path: '/apps/:appId/payments',
    role: 'admin',
    sdk: 'payments.connect',
    auth: ['S'],
    tags,
    summary: 'Connect the payment provider',
    description:
      'Checks the credentials with the provider (400 when it rejects them, 502 when it fails) and registers the ' +
      'notification webhook `/payments/webhooks/:appId` when the provider can reach this API. Replaces an ' +
      'earlier connection.',
    params: appIdParams,
    body: connectBody,
    errors: [502],
    response: connectionSchema,
    handler: (s) => connect(ctxOf(s), s.body, s.origin),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/payments',
    role: 'admin',
    sdk: 'payments.disconnect',
    auth: ['S'],
    tags,
    summary: 'Disconnect the payment provider',
    description: 'Existing subscriptions keep billing at the provider. 409 when not connected.',
    params: appIdParams,
    errors: [409],
    response: connectionSchema,
    handler: (s) => disconnect(ctxOf(s)),
  }),
];
