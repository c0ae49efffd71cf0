import http from 'node:http';
import type net from 'node:net';
import Router from '@koa/router';
import { expect } from 'chai';
import Koa, { type Middleware } from 'koa';
import { bucketedRouter, otherMethods, routeBucket, type RouterEntry } from '../../src/http/router.js';
import { routes } from '../../src/http/routes.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Each route answers its own name and the parameters it saw. */
const entries: RouterEntry[] = routes.map((r) => ({
  method: r.method,
  path: r.path,
  chain: [
    (ctx) => {
      ctx.body = { route: `${r.method} ${r.path}`, params: ctx.params };
    },
  ],
}));

async function serve(router: Middleware) {
  const app = new Koa();
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      ctx.status = (err as { status?: number }).status ?? 500;
      ctx.body = { error: (err as Error).message };
    }
  });
  app.use(router);
  app.use(otherMethods());
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, base: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}` };
}

/** Request paths for a route pattern: as declared, in capitals, with a trailing slash, with an encoded slash. */
function pathsFor(pattern: string): string[] {
  const filled = pattern.replace(/:[A-Za-z]+/g, 'x1').replace(/\*[A-Za-z]+$/, 'a/b');
  return [filled, filled.toUpperCase(), `${filled}/`, filled.replace('x1', 'x%2F1'), filled.replace('x1', '')];
}

describe('the router, matched within a bucket of the route table first', () => {
  it('names the bucket by the third segment under /apps/:appId, else the first, in lower case', () => {
    expect(routeBucket('/apps/:appId/namespaces/:accountId/plan')).to.equal('/apps/*/namespaces');
    expect(routeBucket('/APPS/app_1/Namespaces/a/plan/')).to.equal('/apps/*/namespaces');
    expect(routeBucket('/apps/:appId')).to.equal('/apps');
    expect(routeBucket('/apps/app_1/')).to.equal('/apps');
    expect(routeBucket('/')).to.equal('/');
    expect(routeBucket('/.well-known/oauth-authorization-server/x')).to.equal('/.well-known');
  });

  it("sends a request for any route to that route's own bucket, and no bucket holds more than 30 routes", () => {
    for (const r of routes)
      for (const p of pathsFor(r.path).slice(0, 3)) expect(routeBucket(p), p).to.equal(routeBucket(r.path));
    const sizes = new Map<string, number>();
    for (const r of routes) sizes.set(routeBucket(r.path), (sizes.get(routeBucket(r.path)) ?? 0) + 1);
    expect(Math.max(...sizes.values())).to.be.at.most(30);
  });

  it('answers every request exactly as one router over the whole table does (route, parameters, 404, 405)', async () => {
    const plain = new Router();
    for (const e of entries) plain.register(e.path, [e.method], e.chain);
    const a = await serve(bucketedRouter(entries));
    const b = await serve(plain.routes() as unknown as Middleware);
    const paths = [
      ...new Set([
        ...routes.flatMap((r) => pathsFor(r.path)),
        '/apps',
        '/apps/',
        '/apps/x',
        '/apps//namespaces',
        '/apps/x/unknown/y',
        '/apps/x/%6Eamespaces/y/plan',
        '/nope',
        '/APPS/x/NAMESPACES',
      ]),
    ];
    let compared = 0;
    let matched = 0;
    try {
      for (const p of paths) {
        for (const method of METHODS) {
          const [x, y] = await Promise.all(
            [a, b].map(async ({ base }) => {
              const res = await fetch(base + p, { method });
              return { status: res.status, allow: res.headers.get('allow'), body: await res.text() };
            }),
          );
          expect(x, `${method} ${p}`).to.deep.equal(y);
          compared++;
          if (x.status === 200) matched++;
        }
      }
    } finally {
      a.server.close();
      b.server.close();
    }
    // Every route was reached, and the corpus had misses too.
    expect(matched).to.be.at.least(routes.length);
    expect(compared - matched).to.be.greaterThan(100);
  });
});
