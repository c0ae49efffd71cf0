import { expect } from 'chai';
import { z } from 'zod';
import { mintAccountToken } from '../../src/http/account-token.js';
import { route, type Cred, type RouteDef } from '../../src/http/route.js';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import { mountRoutes } from '../helpers/mount.js';
import { testEnv } from '../helpers/servers.js';

// One route per credential class (and the mixes the spec uses), answering who the caller was.
const echo = (path: string, auth: Cred[]): RouteDef =>
  route({
    method: 'GET',
    path,
    sdk: `test.echo${path}`,
    auth,
    tags: ['test'],
    summary: path,
    response: z.object({ caller: z.string(), app: z.string().nullable(), account: z.string().nullable() }),
    handler: ({ caller, app }) => ({
      caller: caller.kind,
      app: app?.id ?? null,
      account: caller.kind === 'token' ? caller.accountId : null,
    }),
  });

const table = [
  echo('/open', ['N']),
  echo('/admin-only', ['A']),
  echo('/apps/:appId/secret', ['S']),
  echo('/apps/:appId/publishable', ['S', 'P']),
  echo('/apps/:appId/admin', ['A']),
  echo('/apps/:appId/namespaces/:accountId/tokenable', ['S', 'T']),
  echo('/apps/:appId/namespaces/:accountId/everyone', ['S', 'P', 'T']),
  echo('/apps/:appId/sessions', ['S', 'T']),
  route({
    method: 'GET',
    path: '/apps/:appId/validated/:accountId',
    sdk: 'test.route1',
    auth: ['S'],
    tags: ['test'],
    summary: 'validated',
    params: z.object({ appId: z.string(), accountId: z.string().min(3) }),
    response: z.object({ ok: z.boolean() }),
    handler: () => ({ ok: true }),
  }),
];

describe('credentials on every route class', () => {
  let base: string;
  let close: () => Promise<void>;
  let app: TestApp;
  let other: TestApp;
  let token: string;
  let otherToken: string;
  let expired: string;

  before(async () => {
    ({ base, close } = await mountRoutes(table));
    app = await createTestApp();
    other = await createTestApp();
    const soon = new Date(Date.now() + 600_000);
    token = mintAccountToken(app.id, 'acct_1', app.api_key, soon);
    otherToken = mintAccountToken(other.id, 'acct_1', other.api_key, soon);
    expired = mintAccountToken(app.id, 'acct_1', app.api_key, new Date(Date.now() - 1000));
  });
  after(() => close());

  const hit = (path: string, t?: string | null) => call('GET', path, { token: t, base });

  it('N: open to anyone, credential or not', async () => {
    expect((await hit('/open')).body.caller).to.equal('none');
    expect((await hit('/open', 'garbage')).status).to.equal(200);
    expect((await hit('/open', testEnv().adminKey)).body.caller).to.equal('admin');
  });

  it('A: admin key only; app keys and tokens get 401', async () => {
    expect((await hit('/admin-only', testEnv().adminKey)).body.caller).to.equal('admin');
    for (const t of [app.api_key, app.public_key, token, undefined])
      expect((await hit('/admin-only', t)).status).to.equal(401);
    expect((await hit(`/apps/${app.id}/admin`, testEnv().adminKey)).status).to.equal(200);
    expect((await hit(`/apps/${app.id}/admin`, app.api_key)).status).to.equal(401);
  });

  it('S: secret key and admin key; publishable key and tokens get 401', async () => {
    expect((await hit(`/apps/${app.id}/secret`, app.api_key)).body).to.deep.equal({
      caller: 'secret',
      app: app.id,
      account: null,
    });
    expect((await hit(`/apps/${app.id}/secret`, testEnv().adminKey)).body.caller).to.equal('admin');
    for (const t of [app.public_key, token, undefined, '', 'Bearer', 'key_wrong']) {
      const res = await hit(`/apps/${app.id}/secret`, t);
      expect(res.status, String(t)).to.equal(401);
      expect(res.body).to.deep.equal({ error: 'Unauthorized' });
    }
  });

  it('P: the publishable key where allowed', async () => {
    expect((await hit(`/apps/${app.id}/publishable`, app.public_key)).body.caller).to.equal('publishable');
    expect((await hit(`/apps/${app.id}/namespaces/anyone/everyone`, app.public_key)).body.caller).to.equal(
      'publishable',
    );
    expect((await hit(`/apps/${app.id}/namespaces/acct_1/tokenable`, app.public_key)).status).to.equal(401);
  });

  it('T: an account token for its own account only, and not after expiry', async () => {
    const own = await hit(`/apps/${app.id}/namespaces/acct_1/tokenable`, token);
    expect(own.body).to.deep.equal({ caller: 'token', app: app.id, account: 'acct_1' });
    expect((await hit(`/apps/${app.id}/namespaces/acct_2/tokenable`, token)).status).to.equal(401);
    expect((await hit(`/apps/${app.id}/namespaces/acct_1/tokenable`, expired)).status).to.equal(401);
    expect((await hit(`/apps/${app.id}/sessions`, token)).body.account).to.equal('acct_1');
    expect((await hit(`/apps/${app.id}/publishable`, token)).status).to.equal(401);
  });

  it('a key or token of app A gets 401 on every route of app B', async () => {
    for (const path of [
      `/apps/${other.id}/secret`,
      `/apps/${other.id}/publishable`,
      `/apps/${other.id}/namespaces/acct_1/tokenable`,
      `/apps/${other.id}/admin`,
    ]) {
      for (const t of [app.api_key, app.public_key, token])
        expect((await hit(path, t)).status, `${path} ${t}`).to.equal(401);
    }
    // ...while app B's own token works there.
    expect((await hit(`/apps/${other.id}/namespaces/acct_1/tokenable`, otherToken)).status).to.equal(200);
  });

  it('accepts only the Bearer scheme, once', async () => {
    const raw = (h: string) => call('GET', `/apps/${app.id}/secret`, { base, headers: { Authorization: h } });
    expect((await raw(`Bearer ${app.api_key}`)).status).to.equal(200);
    expect((await raw(`bearer ${app.api_key}`)).status).to.equal(200);
    expect((await raw(`Basic ${app.api_key}`)).status).to.equal(401);
    expect((await raw(`Bearer ${app.api_key} ${app.api_key}`)).status).to.equal(401);
    expect((await raw(app.api_key)).status).to.equal(401);
  });

  it('authenticates before validating: 401 beats 400', async () => {
    expect((await hit(`/apps/${app.id}/validated/x`)).status).to.equal(401);
    const res = await hit(`/apps/${app.id}/validated/x`, app.api_key);
    expect(res.status).to.equal(400);
    expect(res.body.error).to.match(/^accountId: /);
  });

  it('regenerating the secret key stops the old key and the app tokens at once', async () => {
    const fresh = await createTestApp();
    const t = mintAccountToken(fresh.id, 'acct_1', fresh.api_key, new Date(Date.now() + 600_000));
    expect((await hit(`/apps/${fresh.id}/namespaces/acct_1/tokenable`, t)).status).to.equal(200);
    const regen = await call('POST', `/apps/${fresh.id}/keys/regenerate`, { token: fresh.api_key, body: {} });
    expect(regen.status).to.equal(200);
    expect((await hit(`/apps/${fresh.id}/namespaces/acct_1/tokenable`, t)).status).to.equal(401);
    expect((await hit(`/apps/${fresh.id}/secret`, fresh.api_key)).status).to.equal(401);
    expect((await hit(`/apps/${fresh.id}/secret`, regen.body.api_key)).status).to.equal(200);
  });

  it('regenerating the publishable key stops the old one at once', async () => {
    const fresh = await createTestApp();
    const regen = await call('POST', `/apps/${fresh.id}/public-key/regenerate`, { token: fresh.api_key, body: {} });
    expect((await hit(`/apps/${fresh.id}/publishable`, fresh.public_key)).status).to.equal(401);
    expect((await hit(`/apps/${fresh.id}/publishable`, regen.body.public_key)).status).to.equal(200);
  });
});
