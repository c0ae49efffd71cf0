import { expect } from 'chai';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { call, del, get } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

describe('payment provider connection (/apps/:appId/payments)', () => {
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    app = await createTestApp();
    base = `/apps/${app.id}/payments`;
  });
  const put = (body: unknown, token = app.api_key) => call('PUT', base, { token, body });
  const good = { client_id: 'sandbox-client', client_secret: 'sandbox-secret', env: 'sandbox' };

  it('not connected at first', async () => {
    expect((await get(base, app.api_key)).body).to.deep.include({ connected: false, client_id: null, webhook: null });
  });

  it('PUT checks the credentials with the provider and registers the notification webhook', async () => {
    const res = await put(good);
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.include({
      connected: true,
      provider: 'paypal',
      env: 'sandbox',
      client_id: 'sandbox-client',
    });
    expect(res.body).to.not.have.property('client_secret');
    expect(res.body.webhook.url).to.equal(`${testEnv().baseUrl}/payments/webhooks/${app.id}`);
    expect(res.body.webhook.id).to.match(/^WH-/);
    const read = await get(base, app.api_key);
    expect(read.body).to.deep.equal(res.body);
    const again = await put(good);
    expect(again.body.webhook.id, 'reconnecting reuses the registered webhook').to.equal(res.body.webhook.id);
  });

  it('422 with its words and ours when the provider refuses the credentials; 502 naming the provider when it fails', async () => {
    const bad = await put({ ...good, client_secret: 'wrong' });
    expect(bad.status).to.equal(422);
    expect(bad.body).to.deep.equal({
      error: 'PayPal: Client Authentication failed (check client_id, client_secret and env)',
      reason: 'credentials_refused',
      provider_message: 'Client Authentication failed',
    });
    testEnv().paypal.failNext(503, 'SERVICE_UNAVAILABLE', 'Service Unavailable');
    const down = await put(good);
    expect(down.status).to.equal(502);
    expect(down.body).to.deep.equal({ error: 'PayPal: Service Unavailable' });
    expect((await get(base, app.api_key)).body.connected).to.equal(false);
    expect((await put({ ...good, env: 'staging' })).body.error).to.match(/^env: /);
  });

  it('DELETE disconnects (409 when not connected); secret key only', async () => {
    expect((await del(base, app.api_key)).status).to.equal(409);
    expect((await del(base, app.api_key)).body).to.deep.equal({ error: 'payment provider not connected' });
    await put(good);
    expect((await del(base, app.api_key)).body.connected).to.equal(false);
    expect((await get(base, app.api_key)).body.connected).to.equal(false);
    expect((await get(base, app.public_key)).status).to.equal(401);
    expect((await put(good, app.public_key)).status).to.equal(401);
  });
});
