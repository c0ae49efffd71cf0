import { z } from 'zod';
import { Reply, route } from '../http/route.js';
import { temporalReachable } from '../temporal/client.js';

const tags = ['Service'];
const healthSchema = z.object({
  ok: z.boolean(),
  database: z.enum(['ok', 'unreachable']),
  temporal: z.enum(['ok', 'unreachable']),
});

export const serviceRoutes = [
  route({
    method: 'GET',
    path: '/',
    sdk: 'service.banner',
    auth: ['N'],
    tags,
    summary: 'Banner',
    replies: { 200: { description: 'One line of text', contentType: 'text/plain' } },
    handler: () =>
      new Reply(200, 'offerkit: entitlements, offers and subscriptions service. See /docs.\n', {}, 'text/plain'),
  }),
  route({
    method: 'GET',
    path: '/health',
    sdk: 'service.health',
    auth: ['N'],
    tags,
    summary: 'Health check',
    description:
      'Runs a database query; 503 when it fails. Also reports whether the Temporal frontend answers ' +
      '(synchronous reads and writes keep working without it; workflow starts wait in the outbox).',
    response: healthSchema,
    replies: { 503: { description: 'The database does not answer', schema: healthSchema } },
    handler: async ({ em, deps }) => {
      const [database, temporal] = await Promise.all([
        em
          .getConnection()
          .execute('select 1')
          .then(() => 'ok' as const)
          .catch(() => 'unreachable' as const),
        temporalReachable(deps.temporal.connection).then((up) => (up ? ('ok' as const) : ('unreachable' as const))),
      ]);
      const body = { ok: database === 'ok', database, temporal };
      return database === 'ok' ? body : new Reply(503, body);
    },
  }),
];
