import cors from '@koa/cors';
import Koa from 'koa';
import { consoleFiles } from './console-api/console.js';
import type { Deps } from './deps.js';
import { contractCheck } from './http/contract.js';
import { securityHeaders } from './http/headers.js';
import { requestLifecycle } from './http/middleware.js';
import type { RouteDef } from './http/route.js';
import { buildRouter, matchOf } from './http/router.js';
import { routes as allRoutes } from './routes.js';
import { people } from './people/better-auth.js';
import { identityOf } from './people/workspaces.js';
import { isMcpTransport, mcpJsonRpcErrors, mcpOriginAllowed, mcpTransportGuard } from './security/mcp-guard.js';
import { admissionFor } from './security/admission.js';
import { throttleFor } from './security/throttle.js';

/** The Koa application without listen(): the API process and the tests both use it. */
export function createApp(deps: Deps, routes: RouteDef[] = allRoutes): Koa {
  // Forwarded headers count only behind proxies the operator declares (TRUST_PROXY).
  const hops = deps.config.TRUST_PROXY;
  const app = new Koa({ proxy: hops > 0, maxIpsCount: hops });
  // A reader that leaves an event stream (the change stream) ends its pipe early: expected, not an error.
  app.on('error', (err: Error & { code?: string; status?: number; expose?: boolean }) => {
    if (err.code === 'ERR_STREAM_PREMATURE_CLOSE' || err.status === 404 || err.expose) return;
    deps.logger.error({ err }, 'unhandled error after the answer started');
  });
  // Tests hold every answer to its route's documents (response schema, replies, error schema).
  if (deps.config.NODE_ENV === 'test') app.use(contractCheck());
  // The MCP endpoint's refusals as JSON-RPC errors: outside the error handler, so it sees every refusal's answer.
  app.use(mcpJsonRpcErrors());
  const outage = deps.dbOutage;
  // The start-up work's own requests (the demo seed) and loopback routes (the demo's receiver) log at debug level.
  app.use(requestLifecycle(deps.logger, outage, (ctx) => deps.starting === true || matchOf(ctx)?.def?.log === 'debug'));
  // The router first: it finds the route once (one canonical spelling of each path; see src/http/router.ts), and
  // everything after it (CORS, the MCP transport guard, throttles, authentication, tenancy, roles, the read-only
  // app) decides on that route's declared facts and the caller's identity, never on the path's spelling.
  const router = buildRouter(routes, deps, {
    identity: identityOf(() => people(deps)),
    throttle: throttleFor(deps),
    admission: admissionFor(deps),
  });
  app.use(securityHeaders());
  app.use(router.match);
  app.use(mcpTransportGuard(() => deps.config));
  const corsHeaders = cors({
    // Any origin (spec), except the MCP endpoint: only origins its guard allows.
    origin: (ctx) => {
      const origin = ctx.get('Origin');
      if (isMcpTransport(ctx)) return origin && mcpOriginAllowed(deps.config, origin) ? origin : '';
      return origin;
    },
    allowMethods: ['GET', 'HEAD', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    allowHeaders: [
      'Authorization',
      'Content-Type',
      'X-Request-Id',
      'Mcp-Session-Id',
      'Mcp-Protocol-Version',
      'Last-Event-ID',
      'Idempotency-Key',
    ],
    // What a page's script may read of an answer: when to retry, its rate limit, whether it was a replay.
    exposeHeaders: [
      'Mcp-Session-Id',
      'WWW-Authenticate',
      'X-Request-Id',
      'Retry-After',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'Idempotent-Replayed',
    ],
    maxAge: 86400,
  });
  // CORS headers are for browsers, which send `Origin` with every cross-origin request and preflight. A request
  // without it (a server, the SDK) gets only `Vary: Origin`, so no cache hands its answer to a browser; skipping
  // the rest saves about a tenth of the HTTP stack's cost per request (docs/benchmarks.md).
  app.use((ctx, next) => {
    if (ctx.get('Origin') !== '') return corsHeaders(ctx, next);
    ctx.set('Vary', 'Origin');
    return next();
  });
  app.use(router.dispatch);
  // The console's built front end (GET /console/...), for paths no route has.
  app.use(consoleFiles());
  return app;
}
