import { z } from 'zod';
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
      'Checks the credentials with the provider (422 `credentials_refused` when it refuses them, with its own words ' +
      'in `provider_message`; 502 when it fails) and registers the ' +
      'notification webhook `/payments/webhooks/:appId` when the provider can reach this API. Replaces an ' +
      'earlier connection.',
    params: appIdParams,
    body: connectBody,
    errors: [502],
    replies: {
      422: {
        description: 'The provider refused these credentials (a wrong pair, or the other environment): nothing saved',
        schema: z.object({
          error: z
            .string()
            .describe('`<Provider>: <their message> (check client_id, client_secret and env)`, for a person'),
          reason: z.literal('credentials_refused'),
          provider_message: z.string().describe("The provider's own words, e.g. `Client Authentication failed`"),
        }),
      },
    },
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
