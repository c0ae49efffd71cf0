import { z } from 'zod';
import { DATABASE_RETRY_AFTER_S } from '../http/middleware.js';
import { Reply, route } from '../http/route.js';
import { temporalReachable } from '../temporal/client.js';
import { repairTotals } from '../temporal/reconciler.js';

const tags = ['Service'];
const healthSchema = z.object({
  ok: z.boolean(),
  database: z.enum(['ok', 'unreachable']),
  temporal: z.enum(['ok', 'unreachable']),
  repaired: z
    .record(z.string(), z.number())
    .optional()
    .describe('Waiting rows the reconciler restarted or finished since the database was created, per kind (when any)'),
  degraded: z
    .array(z.string())
    .optional()
    .describe('Under npm start: pieces that died and are being restarted (postgres, temporal, worker, paypal)'),
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
      const repaired = database === 'ok' ? await repairTotals(deps).catch(() => ({})) : {};
      const body = {
        ok: database === 'ok',
        database,
        temporal,
        ...(Object.keys(repaired).length ? { repaired } : {}),
        ...(deps.degraded?.().length ? { degraded: deps.degraded() } : {}),
      };
      return database === 'ok' ? body : new Reply(503, body, { 'Retry-After': String(DATABASE_RETRY_AFTER_S) });
    },
  }),
];
