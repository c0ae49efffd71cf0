import Router from '@koa/router';
import { expect } from 'chai';
import { CONSOLE_API, RouteMatcher, routeBucket, routeEntries, servedToPeople } from '../../src/http/router.js';
import { routes } from '../../src/routes.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const entries = routeEntries(routes, () => []);
const matcher = new RouteMatcher(entries);

/** A request path for a route pattern, each parameter filled with `x1`. */
const filled = (pattern: string) => pattern.replace(/:[A-Za-z]+/g, 'x1').replace(/\*[A-Za-z]+$/, 'a/b');

/** Other spellings of a path, none of which is the route's: capitals, a trailing slash, a doubled slash. */
const respelt = (p: string) => [
  p.toUpperCase(),
  p.replace(/^\/([a-z])/, (_, c: string) => `/${c.toUpperCase()}`),
  `${p}/`,
  p.replace(/\/([^/]+)$/, '//$1'),
  `/${p}`,
];

describe('the router: one canonical spelling of every path, matched within a bucket', () => {
  it('names the bucket by the third segment under /apps/:appId (and the fifth under an account), else the first', () => {
    expect(routeBucket('/apps/:appId/namespaces/:accountId/plan')).to.equal('/apps/*/namespaces/*/plan');
    expect(routeBucket('/apps/app_1/namespaces/a/plan')).to.equal('/apps/*/namespaces/*/plan');
    expect(routeBucket('/apps/app_1/namespaces/a')).to.equal('/apps/*/namespaces');
    expect(routeBucket('/apps/app_1/namespaces/count')).to.equal('/apps/*/namespaces');
    expect(routeBucket('/APPS/app_1/Namespaces/a/plan')).to.equal('/APPS');
    expect(routeBucket(`${CONSOLE_API}/apps/x/plans`)).to.equal(`${CONSOLE_API}/apps/*/plans`);
    expect(routeBucket('/apps/:appId')).to.equal('/apps');
    expect(routeBucket('/')).to.equal('/');
    expect(routeBucket('/.well-known/oauth-authorization-server/x')).to.equal('/.well-known');
  });

  it('matches every route (and its console twin) at its own spelling, with its parameters, and no bucket holds more than 30', () => {
    for (const e of entries) {
      const m = matcher.match(filled(e.path), e.method);
      expect(m?.entry?.def, `${e.method} ${e.path}`).to.equal(e.def);
      expect(m!.entry!.surface).to.equal(e.surface);
      for (const name of e.path.match(/:(\w+)/g) ?? []) expect(m!.params[name.slice(1)]).to.equal('x1');
    }
    expect(entries.filter((e) => e.surface === 'console').length).to.equal(routes.filter(servedToPeople).length);
    const sizes = new Map<string, number>();
    for (const e of entries) sizes.set(routeBucket(e.path), (sizes.get(routeBucket(e.path)) ?? 0) + 1);
    expect(Math.max(...sizes.values())).to.be.at.most(30);
  });

  it('matches no other spelling: capitals, a trailing slash, a doubled slash, an encoded static segment', () => {
    let tried = 0;
    for (const e of entries) {
      const canonical = filled(e.path);
      for (const p of respelt(canonical)) {
        // A wildcard takes the rest of the path, slashes and all.
        if (p === canonical || (e.path.includes('*') && p.startsWith(filled(e.path.replace(/\*\w+$/, ''))))) continue;
        const m = matcher.match(p, e.method);
        // Another route may own that spelling (`/` upper-cased is `/`); never this one.
        expect(m?.entry?.def === e.def && m?.entry?.surface === e.surface, `${e.method} ${p}`).to.equal(false);
        tried++;
      }
    }
    expect(tried).to.be.greaterThan(entries.length * 4);
    expect(matcher.match('/apps/x/%6Eamespaces/y/plan', 'GET')).to.equal(null);
    expect(matcher.match('/%61pps/x', 'GET')).to.equal(null);
  });

  it('decodes a percent-encoded parameter once, so guards see the id the handler gets', () => {
    const m = matcher.match('/apps/%61pp_1/plans', 'POST');
    expect(m?.entry?.def?.path).to.equal('/apps/:appId/plans');
    expect(m!.params.appId).to.equal('app_1');
    expect(matcher.match('/apps/%2561pp_1/plans', 'POST')!.params.appId).to.equal('%61pp_1');
    expect(matcher.match(`${CONSOLE_API}/apps/%61pp_1/plans`, 'GET')!.params.appId).to.equal('app_1');
  });

  it('a concrete segment beats a parameter for every method, as OpenAPI matches paths', () => {
    const count = matcher.match('/apps/x/namespaces/count', 'DELETE')!;
    expect(count.entry).to.equal(null);
    expect(count.methods).to.have.members(['HEAD', 'GET']);
    expect(matcher.match('/apps/x/namespaces/count', 'GET')!.entry!.def!.path).to.equal(
      '/apps/:appId/namespaces/count',
    );
    // An account named `count` is still reached, with a letter percent-encoded (the static segment does not match).
    const named = matcher.match('/apps/x/namespaces/%63ount', 'DELETE')!;
    expect(named.entry!.def!.path).to.equal('/apps/:appId/namespaces/:accountId');
    expect(named.params.accountId).to.equal('count');
    expect(matcher.match('/apps/x/plans/pricing', 'PATCH')!.methods).to.have.members(['HEAD', 'GET']);
  });

  it('names a parameter whose escapes are not UTF-8 (the router would keep it undecoded)', () => {
    expect(matcher.match('/apps/x/namespaces/%FF', 'GET')!.malformed).to.equal('accountId');
    expect(matcher.match('/apps/x/namespaces/%ED%A0%80', 'GET')!.malformed).to.equal('accountId');
    expect(matcher.match('/apps/x/namespaces/%25FF', 'GET')!.malformed).to.equal(null);
    expect(matcher.match('/apps/x/namespaces/%25FF', 'GET')!.params.accountId).to.equal('%FF');
  });

  it('answers as one case-sensitive, strict router over the whole table does (route and methods of a path)', () => {
    const plain = new Router({ sensitive: true, strict: true });
    const layers = new Map<unknown, (typeof entries)[number]>();
    for (const e of entries) layers.set(plain.register(e.path, [e.method], []), e);
    const paths = [
      ...new Set([
        ...entries.flatMap((e) => [filled(e.path), ...respelt(filled(e.path))]),
        '/apps',
        '/apps/',
        '/apps//namespaces',
        '/apps/x/unknown/y',
        '/nope',
      ]),
    ];
    let matched = 0;
    for (const p of paths)
      for (const method of METHODS) {
        const ours = matcher.match(p, method);
        const theirs = plain.match(p, method);
        // Of the paths that match, those with the fewest parameters (a concrete segment beats a parameter).
        const fewest = Math.min(...theirs.path.map((l) => l.paramNames.length));
        const kept = theirs.path.filter((l) => l.paramNames.length === fewest);
        const layer = theirs.pathAndMethod.find((l) => l.methods.length > 0 && kept.includes(l));
        expect(ours?.entry ?? null, `${method} ${p}`).to.equal(layer ? layers.get(layer) : null);
        expect(ours?.methods ?? [], `${method} ${p}`).to.have.members([...new Set(kept.flatMap((l) => l.methods))]);
        if (layer) matched++;
      }
    expect(matched).to.be.at.least(entries.length);
  });
});
