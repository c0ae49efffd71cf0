import cors from '@koa/cors';
import Koa from 'koa';
import type { Deps } from './deps.js';
import { DatabaseOutage, requestLifecycle } from './http/middleware.js';
import type { RouteDef } from './http/route.js';
import { buildRouter } from './http/router.js';
import { routes as allRoutes } from './http/routes.js';

/** The Koa application without listen(): the API process and the tests both use it. */
export function createApp(deps: Deps, routes: RouteDef[] = allRoutes): Koa {
  const app = new Koa({ proxy: true });
  const outage = new DatabaseOutage(deps.logger, () => deps.orm.em.fork().getConnection().execute('select 1'));
  app.use(requestLifecycle(deps.logger, outage));
  app.use(
    cors({
      origin: (ctx) => ctx.get('Origin') || '*',
      allowMethods: ['GET', 'HEAD', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
      allowHeaders: [
        'Authorization',
        'Content-Type',
        'X-Request-Id',
        'Mcp-Session-Id',
        'Mcp-Protocol-Version',
        'Last-Event-ID',
      ],
      exposeHeaders: ['Mcp-Session-Id', 'WWW-Authenticate', 'X-Request-Id'],
      maxAge: 86400,
    }),
  );
  const router = buildRouter(routes, deps);
  app.use(router.routes());
  return app;
}
