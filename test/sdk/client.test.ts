// A whole journey through the SDK (the built package, as users import it) against the real test servers:
// catalog, account, usage to a 402 with its offer, checkout at the PayPal stand-in, a cancel session with an
// account token, and webhook deliveries verified as they arrived.
import { expect } from 'chai';
import {
  AccountTokenClient,
  LimitReachedError,
  PublishableClient,
  SecretClient,
  WebhookVerificationError,
  verifyWebhook,
  type Account,
  type LimitReachedBody,
  type WebhookEvent,
} from '@offerkit/sdk';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { startReceiver } from '../helpers/receiver.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('SDK: a whole journey against the real servers', function () {
  this.timeout(120_000);
  let app: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let secret: SecretClient;
  let pub: PublishableClient;

  before(async () => {
    app = await createTestApp();
    receiver = await startReceiver();
    secret = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: testEnv().baseUrl });
    pub = new PublishableClient({ publishableKey: app.public_key, appId: app.id, baseUrl: testEnv().baseUrl });
  });
  after(() => receiver.close());

  it('catalog, account, usage to a 402 with its offer, checkout, cancel session, verified webhooks', async () => {
    // Webhooks first, so every event of the journey is delivered.
    const endpoint = await secret.webhooks.create({ url: receiver.url, events: ['*'] });
    expect(endpoint.secret).to.match(/^whsec_/);

    // Catalog.
    await secret.entitlements.create({ id: 'seats', type: 'usage', name: 'Seats', overage: { mode: 'block' } });
    await secret.plans.create({ id: 'free', name: 'Free', isFree: true, pricingCard: { monthlyPrice: 0 } });
    await secret.plans.attachEntitlement('free', { id: 'seats', max: 1 });
    await secret.plans.create({ id: 'pro', name: 'Pro', pricingCard: { monthlyPrice: 29, currency: 'USD' } });
    await secret.plans.attachEntitlement('pro', { id: 'seats', max: 5 });
    const cards = await pub.plans.listPricingCards();
    expect(cards.map((c) => c.plan_id)).to.deep.equal(['free', 'pro']);

    // An account, and its access read with the publishable key.
    const alice: Account = await secret.accounts.create({ id: 'alice', name: 'Alice', plan: 'free' });
    expect(alice).to.include({ id: 'alice', plan: 'free' });
    const access = await pub.access.get('alice');
    expect(access.plan.id).to.equal('free');
    expect(access.entitlements.find((e) => e.id === 'seats')).to.include({ max: 1, usage: 0 });

    // The provider and an offer, so the 402 has something to sell.
    const [[client_id, client_secret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
    await secret.payments.connect({ client_id, client_secret, env: 'sandbox' });
    await secret.offers.create({
      id: 'more_seats',
      name: 'More seats',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
    });
    await secret.offers.publish('more_seats');
    await secret.entitlements.update('seats', { overage: { mode: 'block', offer_id: 'more_seats' } });

    // Usage: the first seat fits, the second is a typed 402 with the upgrade offer.
    expect(await pub.usage.add('alice', 'seats')).to.deep.equal({ entitlement: 'seats', count: 1 });
    const err = await pub.usage.add('alice', 'seats').then(
      () => expect.fail('the second seat should be refused'),
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(LimitReachedError);
    const limit = err as LimitReachedError;
    expect(limit.status).to.equal(402);
    expect(limit.body.error).to.equal('limit_reached');
    expect(limit.message)
      .to.equal(limit.body.message)
      .and.to.match(/^Seats: 1 of 1 used\. Upgrade to Pro/);
    expect(limit.entitlement).to.deep.equal({ id: 'seats', name: 'Seats', usage: 1, max: 1 });
    const offer: LimitReachedBody['offer'] = limit.offer;
    expect(offer).to.include({ id: 'more_seats', price: 19, list_price: 29, new_limit: 5, interval: 'month' });
    expect(offer!.plan).to.deep.equal({ id: 'pro', name: 'Pro' });
    expect(offer!.checkout_url, 'an approval link, through the service').to.match(/\/checkouts\/chk_\w+\/open$/);
    expect((await secret.usage.get('alice', 'seats')).count, 'the counter did not move').to.equal(1);

    // Checkout through the offer, approved at the PayPal stand-in, completed through the SDK.
    const checkout = await pub.offers.checkout('more_seats', {
      plan: 'pro',
      interval: 'month',
      account: 'alice',
      return_url: 'https://shop.example/thanks',
    });
    expect(checkout.status).to.equal('created');
    await testEnv().paypal.approve(checkout.approve_url as string);
    const done = await eventually(async () => {
      const c = await pub.checkouts.complete(checkout.id as string);
      return c.status === 'completed' && c;
    });
    expect(done).to.include({ offer: 'more_seats', plan: 'pro', account: 'alice' });
    expect((await pub.access.get('alice')).plan.id).to.equal('pro');
    expect(await pub.usage.add('alice', 'seats'), 'paid: the second seat fits').to.deep.equal({
      entitlement: 'seats',
      count: 2,
    });

    // A cancel session in the browser, with an account token minted on the server.
    await secret.cancelFlows.create({ status: 'active' });
    const { token } = await secret.accounts.createToken('alice', { ttl_seconds: 600 });
    const browser = new AccountTokenClient({ accountToken: token, baseUrl: testEnv().baseUrl });
    expect(browser.appId, 'the app comes from the token').to.equal(app.id);
    expect(browser.accountId).to.equal('alice');
    expect((await browser.access.get(browser.accountId)).plan.id).to.equal('pro');
    const session = await browser.cancelSessions.start({});
    expect(session.step).to.include({ id: 'reason' });
    const atOffer = await browser.cancelSessions.answer(session.id, { step: 'reason', answer: 'not_using' });
    expect(atOffer.step.id).to.equal('offer');
    const atConfirm = await browser.cancelSessions.decline(session.id);
    expect(atConfirm.step).to.include({ id: 'confirm', type: 'confirm' });
    const cancelled = await browser.cancelSessions.cancel(session.id);
    expect(cancelled.status).to.equal('cancelled');
    expect((await browser.subscriptions.get('alice')).status).to.equal('cancelled');
    expect((await secret.accounts.get('alice')).plan).to.equal('free');
    // The token client has no secret-key namespaces at all.
    expect((browser as unknown as Record<string, unknown>).accounts).to.equal(undefined);

    // Webhooks: every delivery verifies with the endpoint's secret and narrows by type.
    const wanted = ['account.created', 'usage.limit_reached', 'checkout.completed', 'cancel_flow.cancelled'];
    const events = await eventually(async () => {
      const verified: WebhookEvent[] = [];
      for (const r of receiver.received) verified.push(await verifyWebhook(r.body, r.headers, endpoint.secret!));
      return wanted.every((t) => verified.some((e) => e.type === t)) && verified;
    }, 30_000);
    for (const event of events) {
      expect(event.app_id).to.equal(app.id);
      expect(event.id).to.match(/^evt_/);
      switch (event.type) {
        case 'account.created':
          expect(event.data.object.id).to.equal('alice');
          break;
        case 'usage.limit_reached':
          expect(event.data.object).to.include({ account_id: 'alice', entitlement_id: 'seats', usage: 1, max: 1 });
          expect(event.data.object.left).to.equal(0);
          break;
        case 'checkout.completed':
          expect(event.data.object.id).to.equal(checkout.id);
          expect(event.data.account.plan).to.equal('pro');
          break;
        case 'cancel_flow.cancelled':
          expect(event.data.object.id).to.equal(session.id);
          expect(event.data.object.status).to.equal('cancelled');
          expect(event.data.account.plan).to.equal('free');
          break;
      }
    }
    // A delivery altered on the way, or checked with another secret, does not verify.
    const [first] = receiver.received;
    const altered = first.body.replace('"app_id"', '"app_id" ');
    await verifyWebhook(altered, first.headers, endpoint.secret!).then(
      () => expect.fail('an altered body must not verify'),
      (e: unknown) => expect(e).to.be.instanceOf(WebhookVerificationError),
    );
    const other = await secret.webhooks.regenerateSecret(endpoint.id);
    await secret.webhooks.verify(first.body, first.headers, other.secret!).then(
      () => expect.fail('another secret must not verify'),
      (e: unknown) => expect(e).to.be.instanceOf(WebhookVerificationError),
    );
  });

  it('pagination: awaiting a list gives one page, iterating it gives every item of every page', async () => {
    for (let i = 0; i < 23; i++) await secret.accounts.create({ id: `p${String(i).padStart(2, '0')}` });
    const page = await secret.accounts.list({ per_page: 10, q: 'p' });
    expect(page).to.include({ total: 23, page: 1, per_page: 10 });
    expect(page.data).to.have.length(10);
    const ids: string[] = [];
    for await (const a of secret.accounts.list({ per_page: 10, q: 'p' })) ids.push(a.id);
    expect(ids).to.have.length(23);
    expect(new Set(ids).size).to.equal(23);
    const pages: number[] = [];
    for await (const p of secret.accounts.list({ per_page: 10, q: 'p' }).pages()) pages.push(p.data.length);
    expect(pages).to.deep.equal([10, 10, 3]);
    expect(await secret.accounts.list({ per_page: 10, page: 3, q: 'p' }).toArray()).to.have.length(3);
  });

  it("withResponse: the answer's status, request id, idempotent replay and rate limit beside its body", async () => {
    await secret.entitlements.create({ id: 'calls', type: 'usage', name: 'Calls' });
    await secret.plans.create({ id: 'basic', name: 'Basic' });
    await secret.plans.attachEntitlement('basic', { id: 'calls', max: null });
    // A POST answered for the first time, then replayed for the same idempotency key.
    const first = await secret.accounts
      .create({ id: 'wr', plan: 'basic' }, { idempotencyKey: 'wr-create-1' })
      .withResponse();
    expect(first.data.id).to.equal('wr');
    expect(first.response.status).to.equal(201);
    expect(first.response.replayed).to.equal(false);
    expect(first.response.requestId).to.match(/^[0-9a-f-]{36}$/);
    const again = await secret.accounts
      .create({ id: 'wr', plan: 'basic' }, { idempotencyKey: 'wr-create-1' })
      .withResponse();
    expect(again.response.replayed).to.equal(true);
    expect(again.data).to.deep.equal(first.data);
    // The publishable key's answers carry its rate limit (the secret key's have none: it is not limited).
    const added = await pub.usage.add('wr', 'calls').withResponse();
    expect(added.data.count).to.equal(1);
    expect(added.response.rateLimit).to.include({ limit: 100 });
    expect(added.response.rateLimit!.remaining).to.be.within(0, 99);
    expect((await secret.accounts.get('wr').withResponse()).response.rateLimit).to.equal(null);
    // Awaited as it is, a call is its body; then/catch/finally behave as a promise's.
    expect((await secret.accounts.get('wr')).id).to.equal('wr');
    expect(await secret.accounts.get('wr').then((a) => a.id)).to.equal('wr');
    const missing = await secret.accounts.get('nobody').catch((e: unknown) => (e as { status: number }).status);
    expect(missing).to.equal(404);
  });
});
