import { expect } from 'chai';
import { Connection } from '@temporalio/client';
import { openOrm } from '../../src/db/orm.js';
import { entities } from '../../src/entities.js';
import { healthRoutes } from '../../src/health/health.routes.js';
import { call, get } from '../helpers/http.js';
import { mountRoutes } from '../helpers/mount.js';
import { freePort, testEnv } from '../helpers/servers.js';

describe('GET /', () => {
  it('answers a plain-text banner without credentials', async () => {
    const res = await get('/');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain/);
    expect(res.text).to.match(/offerkit/);
  });
});

/** The body without `repaired`, which counts the reconciler's repairs of earlier tests in this database. */
function withoutRepairs(body: Record<string, unknown>) {
  const { repaired, ...rest } = body;
  if (repaired !== undefined)
    for (const n of Object.values(repaired as Record<string, unknown>)) expect(n).to.be.a('number');
  return rest;
}

describe('GET /health', () => {
  it('runs a database query and reports Temporal reachability', async () => {
    const res = await get('/health');
    expect(res.status).to.equal(200);
    expect(withoutRepairs(res.body)).to.deep.equal({ ok: true, database: 'ok', temporal: 'ok' });
  });

  it('stays ok but reports Temporal unreachable when its frontend does not answer', async () => {
    const deps = testEnv().deps;
    const dead = Connection.lazy({ address: `127.0.0.1:${await freePort()}` });
    const mounted = await mountRoutes(healthRoutes, { temporal: { ...deps.temporal, connection: dead } });
    try {
      const res = await call('GET', '/health', { base: mounted.base });
      expect(res.status).to.equal(200);
      expect(withoutRepairs(res.body)).to.deep.equal({ ok: true, database: 'ok', temporal: 'unreachable' });
    } finally {
      await mounted.close();
      await dead.close();
    }
  });

  it('503 when the database query fails', async () => {
    const orm = await openOrm(`postgres://nobody:nothing@127.0.0.1:${await freePort()}/none`, entities, 1);
    const mounted = await mountRoutes(healthRoutes, { orm });
    try {
      const res = await call('GET', '/health', { base: mounted.base });
      expect(res.status).to.equal(503);
      expect(res.body).to.deep.include({ ok: false, database: 'unreachable' });
    } finally {
      await mounted.close();
      await orm.close();
    }
  });
});

describe('CORS', () => {
  it('answers a preflight from any origin', async () => {
    const res = await call('OPTIONS', '/apps/app_x/namespaces', {
      headers: {
        Origin: 'https://shop.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,content-type',
      },
    });
    expect(res.status).to.equal(204);
    expect(res.headers.get('access-control-allow-origin')).to.equal('https://shop.example');
    expect(res.headers.get('access-control-allow-methods')).to.include('PATCH');
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).to.include('authorization');
  });
  it('sets the allow-origin header on normal responses', async () => {
    const res = await call('GET', '/health', { headers: { Origin: 'https://other.example' } });
    expect(res.headers.get('access-control-allow-origin')).to.equal('https://other.example');
    expect(res.headers.get('access-control-expose-headers')).to.include('X-Request-Id');
    expect(res.headers.get('vary')).to.include('Origin');
    // An error answer too, so a browser can read the error.
    const refused = await call('GET', '/apps/app_x/plans', { headers: { Origin: 'https://other.example' } });
    expect(refused.status).to.equal(401);
    expect(refused.headers.get('access-control-allow-origin')).to.equal('https://other.example');
  });
  it('a request without Origin (a server, not a browser) gets no CORS headers, only Vary: Origin', async () => {
    const res = await call('GET', '/health');
    expect(res.status).to.equal(200);
    expect(res.headers.get('access-control-allow-origin')).to.equal(null);
    expect(res.headers.get('access-control-expose-headers')).to.equal(null);
    expect(res.headers.get('vary')).to.equal('Origin');
  });
});

describe('unknown routes', () => {
  it('404 with a JSON error naming the route', async () => {
    const res = await get('/nope');
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal({ error: 'No route for GET /nope' });
  });
  it('every response carries a request id, and a sane caller id is kept', async () => {
    const res = await call('GET', '/health', { headers: { 'X-Request-Id': 'trace-123' } });
    expect(res.headers.get('x-request-id')).to.equal('trace-123');
    const other = await get('/health');
    expect(other.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });
});
