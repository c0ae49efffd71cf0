// The demo workspace's built-in webhook receiver (src/dev/demo-receiver.ts) under the real private-URL policy
// and with no internet (every host name fails to resolve): its deliveries succeed, while loopback and private
// addresses stay refused for every URL the service did not mint itself.
import { expect } from 'chai';
import type { Resolver } from '../../src/webhooks/url-policy.js';
import { demoReceiverToken, demoReceiverUrl, isDemoReceiverUrl } from '../../src/dev/demo-receiver.js';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { PRIVATE_URLS_HINT } from '../../src/webhooks/endpoints.service.js';
import { call, get, post } from '../helpers/http.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

interface Delivery {
  status: string;
  attempts: number;
  test: boolean;
  error: string | null;
  response_status: number | null;
  response_body: string | null;
  id: string;
  event_type: string;
}

describe('the demo receiver: webhook deliveries with no internet, the private-URL policy kept', function () {
  this.timeout(60_000);
  let app: TestApp;
  let saved: { allowPrivate: boolean; resolve: Resolver };
  const admin = () => testEnv().adminKey;
  const offline: Resolver = async (host) => {
    throw new Error(`getaddrinfo ENOTFOUND ${host}`);
  };

  beforeEach(async () => {
    app = await createTestApp();
    // The API and the worker share these deps: the real policy, on a machine without DNS.
    const deps = testEnv().deps;
    saved = { allowPrivate: deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS, resolve: deps.resolve };
    deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS = false;
    deps.resolve = offline;
  });
  afterEach(() => {
    testEnv().deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS = saved.allowPrivate;
    testEnv().deps.resolve = saved.resolve;
  });

  const deliveries = async (endpointId: string) =>
    (await get<{ data: Delivery[] }>(`/apps/${app.id}/webhooks/${endpointId}/deliveries`, app.api_key)).body.data;

  it('only a loopback URL with the token the service minted for that app is the exception', () => {
    const key = admin();
    const url = demoReceiverUrl(testEnv().baseUrl, key, app.id);
    expect(isDemoReceiverUrl(url, app.id, key)).to.equal(true);
    expect(isDemoReceiverUrl(url.replace('/ok/', '/flaky/'), app.id, key)).to.equal(true);
    expect(isDemoReceiverUrl(url.replace('127.0.0.1', '[::1]'), app.id, key)).to.equal(true);
    const refused = [
      url.replace(/[\w-]+$/, 'A'.repeat(32)), // another token
      demoReceiverUrl(testEnv().baseUrl, 'another admin key', app.id),
      demoReceiverUrl(testEnv().baseUrl, key, 'app_other'), // another app's URL
      url.replace('http://127.0.0.1', 'https://127.0.0.1'),
      url.replace('127.0.0.1', 'localhost'),
      url.replace('127.0.0.1', '10.0.0.7'),
      url.replace('127.0.0.1', '169.254.169.254'),
      url.replace('http://', 'http://user:pw@'),
      `${url}?x=1`,
      `${url}/more`,
      url.replace('/ok/', '/other/'),
      url.replace('/console/api/demo-receiver/', '/console/api/demo-receiver/../'),
    ];
    for (const u of refused) expect(isDemoReceiverUrl(u, app.id, key), u).to.equal(false);
    expect(demoReceiverToken(key, app.id)).to.have.length(32);
  });

  it('saves and delivers to the receiver offline; public names that do not resolve and private addresses are refused', async () => {
    const base = `/apps/${app.id}`;
    // The first demo's endpoint could not be saved on a machine without DNS, and a private one is refused.
    const placeholder = await post(`${base}/webhooks`, app.api_key, { url: 'https://example.com/x', events: ['*'] });
    expect(placeholder.status).to.equal(400);
    expect(placeholder.body.error).to.equal(`url: host example.com does not resolve${PRIVATE_URLS_HINT}`);
    const local = await startReceiver();
    try {
      const refusedLocal = await post(`${base}/webhooks`, app.api_key, { url: local.url, events: ['*'] });
      expect(refusedLocal.body.error).to.equal(`url: must be a public address (127.0.0.1 is not)${PRIVATE_URLS_HINT}`);
      // The receiver's path with a token of the app's own making is an ordinary private URL.
      const guessed = demoReceiverUrl(testEnv().baseUrl, app.api_key, app.id);
      expect((await post(`${base}/webhooks`, app.api_key, { url: guessed, events: ['*'] })).status).to.equal(400);

      // The receiver's URL, made by the service (the demo seed uses the admin key's token).
      const url = demoReceiverUrl(testEnv().baseUrl, admin(), app.id);
      const ok = await post(`${base}/webhooks`, admin(), { url, events: ['*'], description: 'demo' });
      expect(ok.status, ok.text).to.equal(201);
      const flaky = await post(`${base}/webhooks`, admin(), {
        url: demoReceiverUrl(testEnv().baseUrl, admin(), app.id, 'flaky'),
        events: ['plan.created'],
      });
      expect(flaky.status, flaky.text).to.equal(201);

      // A private endpoint saved while private URLs were allowed is refused at send time; the receiver is not.
      testEnv().deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS = true;
      const privateEp = await post(`${base}/webhooks`, app.api_key, { url: local.url, events: ['plan.created'] });
      testEnv().deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS = false;
      expect(privateEp.status).to.equal(201);

      await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
      const [toReceiver] = await eventually(async () => {
        const d = await deliveries(ok.body.id);
        return d.length === 1 && d[0].status === 'succeeded' && d;
      });
      expect(toReceiver).to.include({ attempts: 1, response_status: 200, error: null });
      // The receiver checked the signature with the endpoint's secret.
      expect(JSON.parse(toReceiver.response_body!)).to.deep.include({ type: 'plan.created', signature: 'verified' });
      // The flaky one refused the first attempt and took the retry (the test schedule retries after 300 ms).
      const [retried] = await eventually(async () => {
        const d = await deliveries(flaky.body.id);
        return d[0]?.status === 'succeeded' && d;
      });
      expect(retried.attempts).to.equal(2);
      const [blocked] = await eventually(async () => {
        const d = await deliveries(privateEp.body.id);
        return d[0]?.status === 'failed' && d;
      });
      expect(blocked.error).to.equal('Blocked: 127.0.0.1 is not a public address');
      expect(local.received, 'nothing was sent to the private address').to.have.length(0);

      // A test send to the flaky receiver fails (one attempt); the retry is delivered.
      const test = await post(`${base}/webhooks/${flaky.body.id}/test`, app.api_key);
      expect(test.body).to.include({ status: 'failed', response_status: 503, test: true });
      const retry = await post(`${base}/webhooks/${flaky.body.id}/deliveries/${test.body.id}/retry`, app.api_key);
      expect(retry.body).to.include({ status: 'succeeded', response_status: 200, attempts: 2 });
    } finally {
      await local.close();
    }
  });

  it('the receiver answers only what is signed for it: 401 for a bad signature, 404 without its token', async () => {
    const url = demoReceiverUrl(testEnv().baseUrl, admin(), app.id);
    await post(`/apps/${app.id}/webhooks`, admin(), { url, events: ['*'] });
    const path = new URL(url).pathname;
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': 'v1,Zm9yZ2Vk',
    };
    const forged = await call('POST', path, { body: { type: 'plan.created' }, headers });
    expect(forged.status).to.equal(401);
    expect(forged.body).to.deep.equal({ error: 'Signature did not verify' });
    const wrong = path.replace(/[\w-]+$/, 'B'.repeat(32));
    expect((await call('POST', wrong, { body: {}, headers })).status).to.equal(404);
    expect((await call('GET', path)).status).to.not.equal(200);
  });
});
