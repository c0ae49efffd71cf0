import { expect } from 'chai';
import { call, get } from './helpers/http.js';

describe('GET /', () => {
  it('answers a plain-text banner without credentials', async () => {
    const res = await get('/');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain/);
    expect(res.text).to.match(/offerkit/);
  });
});

describe('GET /health', () => {
  it('runs a database query and reports Temporal reachability', async () => {
    const res = await get('/health');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ ok: true, database: 'ok', temporal: 'ok' });
  });
});

describe('CORS', () => {
  it('answers a preflight from any origin', async () => {
    const res = await call('OPTIONS', '/apps/app_x/namespaces', {
      headers: { Origin: 'https://shop.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' },
    });
    expect(res.status).to.equal(204);
    expect(res.headers.get('access-control-allow-origin')).to.equal('https://shop.example');
    expect(res.headers.get('access-control-allow-methods')).to.include('PATCH');
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).to.include('authorization');
  });
  it('sets the allow-origin header on normal responses', async () => {
    const res = await call('GET', '/health', { headers: { Origin: 'https://other.example' } });
    expect(res.headers.get('access-control-allow-origin')).to.equal('https://other.example');
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
