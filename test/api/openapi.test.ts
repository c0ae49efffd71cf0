import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import { routes } from '../../src/routes.js';
import { get } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const res = await get('/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.body.openapi).to.equal('3.1.0');
    const result = await new Validator().validate(res.body);
    expect(result.valid, JSON.stringify(result.errors, null, 1)?.slice(0, 3000)).to.equal(true);
  });

  it('has every route of the route table, with its method, credentials and schemas', async () => {
    const doc = (await get('/openapi.json')).body;
    for (const r of routes) {
      const op = doc.paths[r.path.replace(/:(\w+)/g, '{$1}')]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.path}`).to.not.equal(undefined);
      expect(op['x-credentials']).to.deep.equal(r.auth);
    }
    const ids = Object.values(doc.paths).flatMap((p) =>
      Object.values(p as Record<string, { operationId: string }>).map((o) => o.operationId),
    );
    expect(new Set(ids).size, 'operation ids are unique').to.equal(ids.length);
    const createPlan = doc.paths['/apps/{appId}/plans'].post;
    expect(createPlan.requestBody.content['application/json'].schema.required).to.include.members(['id', 'name']);
    expect(createPlan.responses['201'].content['application/json'].schema.properties).to.have.property('pricingCard');
    expect(Object.keys(createPlan.responses)).to.include.members(['201', '400', '401', '404', '409']);
    const add = doc.paths['/apps/{appId}/namespaces/{accountId}/usage/{entitlementId}/add'].post;
    expect(add['x-credentials']).to.deep.equal(['S', 'P']);
    expect(add.responses).to.have.property('402');
    const search = doc.paths['/apps/{appId}/namespaces'].get.parameters.map(
      (p: { name: string; in: string }) => `${p.in}:${p.name}`,
    );
    expect(search).to.include.members(['path:appId', 'query:q', 'query:plan', 'query:page', 'query:per_page']);
    expect(doc.paths['/health'].get.security).to.deep.equal([]);
    expect(doc.servers[0].url).to.equal(testEnv().baseUrl);
  });

  it('states the Idempotency-Key header on the POSTs that take it, and the 429 on every counted request', async () => {
    const doc = (await get('/openapi.json')).body;
    const takesKey = (op: { parameters?: { $ref?: string }[] }) =>
      (op.parameters ?? []).some((p) => p.$ref === '#/components/parameters/IdempotencyKey');
    const add = doc.paths['/apps/{appId}/namespaces/{accountId}/usage/{entitlementId}/add'].post;
    expect(takesKey(add)).to.equal(true);
    expect(Object.keys(add.responses)).to.include.members(['409', '422', '429']);
    expect(doc.components.parameters.IdempotencyKey).to.include({ name: 'Idempotency-Key', in: 'header' });
    // Not on reads, nor on the OAuth endpoints (forms of their own protocol), nor where no credential scopes it.
    expect(takesKey(doc.paths['/apps/{appId}/namespaces'].get)).to.equal(false);
    expect(takesKey(doc.paths['/oauth/token'].post)).to.equal(false);
    expect(doc.components.responses.TooManyRequests.headers).to.have.property('Retry-After');
    expect(doc.paths['/oauth/register'].post.responses['429'].$ref).to.equal('#/components/responses/TooManyRequests');
    expect(doc.paths['/health'].get.responses).to.not.have.property('429');
    // A database outage is a 503 on every operation; /health documents its own.
    expect(doc.paths['/apps/{appId}/namespaces'].get.responses['503'].$ref).to.equal(
      '#/components/responses/ServiceUnavailable',
    );
    expect(doc.paths['/health'].get.responses['503'].content['application/json'].schema).to.not.have.property('$ref');
    for (const r of routes.filter((x) => !x.auth.includes('N'))) {
      const op = doc.paths[r.path.replace(/:(\w+)/g, '{$1}')][r.method.toLowerCase()];
      expect(op.responses, `${r.method} ${r.path}`).to.have.property('429');
    }
  });
});

describe('GET /docs', () => {
  it('serves the interactive reference with its own assets (no CDN)', async () => {
    const page = await get('/docs');
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/text\/html/);
    const srcs = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(srcs.every((s) => s.startsWith('/'))).to.equal(true);
    for (const src of srcs) {
      const asset = await get(src);
      expect(asset.status, src).to.equal(200);
      expect(asset.text.length).to.be.greaterThan(100);
    }
    expect(page.text).to.include("url: '/openapi.json'");
    expect((await get('/docs/assets/../../package.json')).status).to.equal(404);
    expect((await get('/docs/assets/nope.js')).status).to.equal(404);
  });
});
