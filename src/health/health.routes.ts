import { z } from 'zod';
import { DATABASE_RETRY_AFTER_S } from '../http/middleware.js';
import { Reply, route } from '../http/route.js';
import { temporalReachable } from '../temporal/client.js';
import { sql } from '../db/sql.js';
import type { Deps } from '../deps.js';

/** The reconciler's counter (src/housekeeping/reconciler.ts writes it): totals repaired per kind, ever. */
export async function repairTotals(deps: Pick<Deps, 'orm'>): Promise<Record<string, number>> {
  const rows = await sql<{ kind: string; repaired: string }>(
    deps.orm.em.fork(),
    'select kind, repaired from reconciler_repairs order by kind',
  );
  return Object.fromEntries(rows.map((r) => [r.kind, Number(r.repaired)]));
}

const tags = ['Service'];
/** How long /health waits for each dependency (they are checked at once, so it answers within 2 s). */
const HEALTH_CHECK_MS = 1500;

/** `p`'s value, or `fallback` when it fails or takes longer than `ms`. */
function within<T, F>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(fallback), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      () => {
        clearTimeout(timer);
        resolve(fallback);
      },
    );
  });
}
const healthSchema = z.object({
  ok: z.boolean(),
  starting: z
    .literal(true)
    .optional()
    .describe('Under npm start: the start-up work (the demo seed) is not done yet; 503 meanwhile'),
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

export const healthRoutes = [
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
      'Runs a database query; 503 when it fails or does not answer within 1.5 s, or while the service is starting ' +
      '(`starting: true`, under npm start until the demo workspace is ready). Also reports whether the Temporal ' +
      'frontend answers (synchronous reads and writes keep working without it; workflow starts wait in the ' +
      'outbox). Answers within 2 seconds whatever is down.',
    response: healthSchema,
    replies: {
      503: { description: 'The database does not answer, or the service is still starting', schema: healthSchema },
    },
    handler: async ({ em, deps }) => {
      // Each check in parallel, each with its own deadline: the answer comes within 2 s in every state, naming
      // what is down (a frozen database would otherwise hold it as long as the pool's own bounds).
      const [database, temporal, repaired] = await Promise.all([
        within(
          em
            .getConnection()
            .execute('select 1')
            .then(() => 'ok' as const),
          HEALTH_CHECK_MS,
          'unreachable' as const,
        ),
        temporalReachable(deps.temporal.connection, HEALTH_CHECK_MS).then((up) =>
          up ? ('ok' as const) : ('unreachable' as const),
        ),
        within(repairTotals(deps), HEALTH_CHECK_MS, {}),
      ]);
      const starting = deps.starting === true;
      const body = {
        ok: database === 'ok' && !starting,
        ...(starting ? { starting: true as const } : {}),
        database,
        temporal,
        ...(database === 'ok' && Object.keys(repaired).length ? { repaired } : {}),
        ...(deps.degraded?.().length ? { degraded: deps.degraded() } : {}),
      };
      return body.ok ? body : new Reply(503, body, { 'Retry-After': String(DATABASE_RETRY_AFTER_S) });
    },
  }),
];
