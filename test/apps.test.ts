import { expect } from 'chai';
import { mintAccountToken } from '../src/http/account-token.js';
import { createTestApp } from './helpers/factories.js';
import { call, del, get, patch, post } from './helpers/http.js';
import { testEnv } from './helpers/servers.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /apps', () => {
  it('creates an app with a secret and a publishable key (admin)', async () => {
    const res = await post('/apps', testEnv().adminKey, { name: 'Acme', plan: 'scale' });
    expect(res.status).to.equal(201);
    expect(res.body.id).to.match(/^app_/);
    expect(res.body.api_key).to.match(/^key_/);
    expect(res.body.public_key).to.match(/^pub_/);
    expect(res.body).to.include({ name: 'Acme', plan: 'scale', checkout_url: null });
    expect(res.body.created_at).to.match(ISO_MS);
  });
  it('401 for an app key or no credential', async () => {
    const app = await createTestApp();
    expect((await post('/apps', app.api_key, { name: 'x' })).status).to.equal(401);
    expect((await post('/apps', null, { name: 'x' })).body).to.deep.equal({ error: 'Unauthorized' });
  });
  it('400 naming the field when name is missing or empty', async () => {
    const missing = await post('/apps', testEnv().adminKey, {});
    expect(missing.status).to.equal(400);
    expect(missing.body).to.deep.equal({ error: 'name: is required' });
    const empty = await post('/apps', testEnv().adminKey, { name: '  ' });
    expect(empty.status).to.equal(400);
    expect(empty.body.error).to.match(/^name: /);
  });
});

describe('GET /apps/:appId', () => {
  it('returns the record with keys and checkout_url for the secret key and the admin key', async () => {
    const app = await createTestApp('Readable');
    for (const token of [app.api_key, testEnv().adminKey]) {
      const res = await get(`/apps/${app.id}`, token);
      expect(res.status).to.equal(200);
      expect(res.body).to.include({
        id: app.id,
        name: 'Readable',
        api_key: app.api_key,
        public_key: app.public_key,
        checkout_url: null,
      });
    }
  });
  it('401 for the publishable key, an account token, and another app key', async () => {
    const app = await createTestApp();
    const other = await createTestApp();
    const token = mintAccountToken(app.id, 'u1', app.api_key, new Date(Date.now() + 60_000));
    for (const t of [app.public_key, token, other.api_key, other.public_key, 'key_nope', 'garbage']) {
      const res = await get(`/apps/${app.id}`, t);
      expect(res.status, t).to.equal(401);
      expect(res.body).to.deep.equal({ error: 'Unauthorized' });
    }
  });
  it('404 for the admin key on an unknown app; 401 for an app key (nothing leaks)', async () => {
    const app = await createTestApp();
    expect((await get('/apps/app_missing', testEnv().adminKey)).body).to.deep.equal({ error: 'App not found' });
    expect((await get('/apps/app_missing', app.api_key)).status).to.equal(401);
  });
});

describe('PATCH /apps/:appId', () => {
  it('merges name and checkout_url; key fields are refused (400 naming them) and nothing changes', async () => {
    const app = await createTestApp('Before');
    const keys = await patch(`/apps/${app.id}`, app.api_key, {
      checkout_url: 'https://acme.example/pricing',
      api_key: 'key_mine',
      public_key: 'pub_mine',
      id: 'app_other',
    });
    expect(keys.status).to.equal(400);
    expect(keys.body.error).to.equal('body: unknown fields api_key, public_key, id');
    expect((await get(`/apps/${app.id}`, app.api_key)).body.checkout_url).to.equal(null);
    const res = await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'https://acme.example/pricing' });
    expect(res.status).to.equal(200);
    expect(res.body).to.include({
      id: app.id,
      name: 'Before',
      checkout_url: 'https://acme.example/pricing',
      api_key: app.api_key,
      public_key: app.public_key,
    });
    const renamed = await patch(`/apps/${app.id}`, app.api_key, { name: 'After' });
    expect(renamed.body).to.include({ name: 'After', checkout_url: 'https://acme.example/pricing' });
    const cleared = await patch(`/apps/${app.id}`, app.api_key, { checkout_url: null });
    expect(cleared.body.checkout_url).to.equal(null);
  });
  it('400 for a checkout_url that is not an http(s) URL', async () => {
    const app = await createTestApp();
    const res = await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'javascript:alert(1)' });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('checkout_url: must be an http(s) URL');
  });
});

describe('DELETE /apps/:appId', () => {
  it('deletes the app; its keys stop working', async () => {
    const app = await createTestApp();
    const res = await del(`/apps/${app.id}`, app.api_key);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ deleted: true, id: app.id });
    expect((await get(`/apps/${app.id}`, app.api_key)).status).to.equal(401);
    expect((await get(`/apps/${app.id}`, testEnv().adminKey)).status).to.equal(404);
  });
});

describe('POST /apps/:appId/keys/regenerate', () => {
  it('replaces the secret key; the old key and every account token stop at once', async () => {
    const app = await createTestApp();
    const token = mintAccountToken(app.id, 'u1', app.api_key, new Date(Date.now() + 60_000));
    const res = await post(`/apps/${app.id}/keys/regenerate`, app.api_key);
    expect(res.status).to.equal(200);
    expect(res.body.api_key).to.match(/^key_/).and.not.equal(app.api_key);
    expect((await get(`/apps/${app.id}`, app.api_key)).status).to.equal(401);
    expect((await get(`/apps/${app.id}`, res.body.api_key)).status).to.equal(200);
    // The token was valid before (see auth tests); after regeneration it verifies against nothing.
    const { verifyAccountToken } = await import('../src/http/account-token.js');
    expect(verifyAccountToken(token, app.id, app.api_key)).to.not.equal(null);
    expect(verifyAccountToken(token, app.id, res.body.api_key)).to.equal(null);
  });
});

describe('POST /apps/:appId/public-key/regenerate', () => {
  it('replaces the publishable key and leaves the secret key alone', async () => {
    const app = await createTestApp();
    const res = await post(`/apps/${app.id}/public-key/regenerate`, app.api_key);
    expect(res.status).to.equal(200);
    expect(res.body.public_key).to.match(/^pub_/).and.not.equal(app.public_key);
    const read = await get(`/apps/${app.id}`, app.api_key);
    expect(read.body.public_key).to.equal(res.body.public_key);
  });
  it('401 with the publishable key itself', async () => {
    const app = await createTestApp();
    expect((await call('POST', `/apps/${app.id}/public-key/regenerate`, { token: app.public_key })).status).to.equal(
      401,
    );
  });
});
