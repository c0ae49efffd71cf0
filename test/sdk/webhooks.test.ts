// The SDK's webhook verification: real deliveries from the service, and compatibility with the reference
// Standard Webhooks library in both directions.
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import {
  SecretClient,
  WebhookVerificationError,
  signWebhook,
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventOf,
} from '@offerkit/sdk';
import { seededApp, type TestApp } from '../helpers/factories.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';

const SECRET = `whsec_${Buffer.from('0123456789abcdef01234567').toString('base64')}`;

async function refused(p: Promise<unknown>, message: RegExp) {
  const err = await p.then(
    () => expect.fail('expected verification to fail'),
    (e: unknown) => e,
  );
  expect(err).to.be.instanceOf(WebhookVerificationError);
  expect((err as Error).message).to.match(message);
}

/** Compile-time checks: `type` narrows `data` (a wrong field is a type error, so tsc fails if narrowing breaks). */
function describeEvent(event: WebhookEvent): string {
  switch (event.type) {
    case 'usage.limit_warning':
    case 'usage.limit_reached':
      // @ts-expect-error usage events carry no account record
      void event.data.account;
      return `${event.data.object.account_id} ${event.data.object.percent}%`;
    case 'checkout.completed':
      return `${event.data.account.id} bought ${String(event.data.object.plan)}`;
    case 'account.plan_changed':
      return `${event.data.object.id} from ${event.data.previous.plan}`;
    default:
      return event.type;
  }
}

describe('SDK: webhook verification', function () {
  this.timeout(60_000);

  it('verifies what the reference library signs, and the reference library verifies what it signs', async () => {
    const body = JSON.stringify({ id: 'evt_1', type: 'account.deleted', created_at: 'x', app_id: 'a', data: {} });
    const at = new Date();
    const signature = new Webhook(SECRET).sign('evt_1', at, body);
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(Math.floor(+at / 1000)) };
    const event = await verifyWebhook(body, { ...headers, 'webhook-signature': signature }, SECRET);
    expect(event).to.deep.equal(JSON.parse(body));
    // A Headers object, bytes, and several signatures (a rotated secret) work too.
    const many = `v1,${Buffer.from('not it').toString('base64')} ${signature}`;
    const h = new Headers({ ...headers, 'Webhook-Signature': many });
    expect((await verifyWebhook(new TextEncoder().encode(body), h, SECRET)).id).to.equal('evt_1');

    const mine = await signWebhook(body, SECRET, { id: 'evt_2' });
    expect(new Webhook(SECRET).verify(body, mine)).to.deep.equal(JSON.parse(body));
  });

  it('refuses altered bodies, other secrets, missing headers and timestamps outside the tolerance', async () => {
    const body = '{"id":"evt_3","type":"plan.deleted","data":{}}';
    const h = await signWebhook(body, SECRET, { id: 'evt_3' });
    await refused(verifyWebhook(body.replace('3', '4'), h, SECRET), /No matching signature/);
    const other = `whsec_${Buffer.from('another secret, 24 bytes').toString('base64')}`;
    await refused(verifyWebhook(body, h, other), /No matching signature/);
    await refused(verifyWebhook(body, { ...h, 'webhook-id': 'evt_4' }, SECRET), /No matching signature/);
    await refused(verifyWebhook(body, { 'webhook-id': 'evt_3' }, SECRET), /Missing webhook headers/);
    // 100 s past the 300 s tolerance: timestamps are whole seconds, and a loaded machine may take a few seconds
    // between signing and verifying (1 s past it, the "too new" case once passed under load).
    const old = await signWebhook(body, SECRET, { id: 'evt_3', timestamp: new Date(Date.now() - 400_000) });
    await refused(verifyWebhook(body, old, SECRET), /too old/);
    const future = await signWebhook(body, SECRET, { id: 'evt_3', timestamp: new Date(Date.now() + 400_000) });
    await refused(verifyWebhook(body, future, SECRET), /too new/);
    expect((await verifyWebhook(body, old, SECRET, { tolerance: 500 })).id, 'a wider tolerance').to.equal('evt_3');
  });

  describe('real deliveries', () => {
    let app: TestApp;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    before(async () => {
      ({ app } = await seededApp());
      receiver = await startReceiver();
    });
    after(() => receiver.close());

    it('a usage.limit_reached delivery verifies with the endpoint secret and narrows to its data', async () => {
      const client = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: testEnv().baseUrl });
      const endpoint = await client.webhooks.create({ url: receiver.url, events: ['usage.limit_reached'] });
      await client.accounts.create({ id: 'carol', plan: 'free' });
      await client.usage.add('carol', 'seats'); // 1 of 1
      const [delivery] = await receiver.waitFor(1);
      const event = await client.webhooks.verify(delivery.body, delivery.headers, endpoint.secret!);
      expect(event.type).to.equal('usage.limit_reached');
      if (event.type !== 'usage.limit_reached') return;
      const reached: WebhookEventOf<'usage.limit_reached'> = event;
      expect(reached.data.object).to.deep.equal({
        account_id: 'carol',
        entitlement_id: 'seats',
        entitlement_name: 'Seats',
        usage: 1,
        max: 1,
        left: 0,
        percent: 100,
        entity: null, // the account's own counter (a per-entity one names its entity)
      });
      expect(describeEvent(event)).to.equal('carol 100%');
      expect(delivery.headers['webhook-id']).to.equal(event.id);

      // A test send is verified the same way and says so.
      await client.webhooks.sendTest(endpoint.id, { type: 'usage.limit_reached' });
      const [, test] = await receiver.waitFor(2);
      const sample = await verifyWebhook(test.body, test.headers, endpoint.secret!);
      expect(sample.test).to.equal(true);
    });
  });
});
