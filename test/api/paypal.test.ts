import { expect } from 'chai';
import { PayPalProvider } from '../../src/payments/paypal.js';
import { ProviderError } from '../../src/payments/provider.js';
import { PayPalStandIn } from '../../src/dev/paypal-standin.js';
import { startReceiver } from '../helpers/receiver.js';
import { eventually } from '../helpers/wait.js';

describe('PayPal REST client against the local PayPal stand-in', () => {
  let standin: PayPalStandIn;
  let paypal: PayPalProvider;
  before(async () => {
    standin = new PayPalStandIn({
      credentials: { 'client-1': 'secret-1', 'client-2': 'secret-2' },
      activationDelayMs: 300,
    });
    const baseUrl = await standin.start();
    paypal = new PayPalProvider({ clientId: 'client-1', clientSecret: 'secret-1', baseUrl });
  });
  after(() => standin.stop());

  const catalog = async () => {
    const product = await paypal.createProduct({ name: 'Acme' }, `prod-${Math.random()}`);
    const monthly = await paypal.createPlan(
      { productId: product.id, name: 'Pro monthly', interval: 'month', price: 29, currency: 'USD' },
      `plan-${Math.random()}`,
    );
    const yearly = await paypal.createPlan(
      {
        productId: product.id,
        name: 'Pro yearly',
        interval: 'year',
        price: 290,
        currency: 'USD',
        introPrice: 199,
        introCycles: 1,
      },
      `plan-${Math.random()}`,
    );
    return { product, monthly, yearly };
  };

  it('OAuth2 client credentials: accepted, and rejected with the provider name and message', async () => {
    await paypal.verifyCredentials();
    const wrong = new PayPalProvider({ clientId: 'client-1', clientSecret: 'nope', baseUrl: standin.baseUrl });
    const err = await wrong.verifyCredentials().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(ProviderError);
    expect((err as ProviderError).message).to.equal('Client Authentication failed');
    expect((err as ProviderError).status).to.equal(401);
    const unreachable = new PayPalProvider({ clientId: 'x', clientSecret: 'y', baseUrl: 'http://127.0.0.1:1' });
    expect(((await unreachable.verifyCredentials().catch((e: unknown) => e)) as ProviderError).message).to.match(
      /^could not reach the API/,
    );
  });

  it('subscription: created pending approval, approved on the approval page, active after the provider activates it', async () => {
    const { monthly } = await catalog();
    const sub = await paypal.createSubscription(
      {
        planId: monthly.id,
        customId: 'chk_1',
        returnUrl: 'https://shop.example/done',
        cancelUrl: 'https://shop.example/cancel',
      },
      'sub-key-1',
    );
    expect(sub).to.deep.include({ status: 'APPROVAL_PENDING', planId: monthly.id, customId: 'chk_1' });
    expect(sub.approveUrl).to.match(/\/checkoutnow\?ba_token=BA-/);
    expect(
      (
        await paypal.createSubscription(
          {
            planId: monthly.id,
            customId: 'chk_1',
            returnUrl: 'https://shop.example/done',
            cancelUrl: 'https://shop.example/cancel',
          },
          'sub-key-1',
        )
      ).id,
      'same PayPal-Request-Id, same subscription',
    ).to.equal(sub.id);

    const page = await fetch(sub.approveUrl!);
    const html = await page.text();
    expect(html).to.include('Pro monthly, 29.00 USD per month').and.include('id="approve"');
    const back = new URL(await standin.approve(sub.approveUrl!));
    expect(back.origin + back.pathname).to.equal('https://shop.example/done');
    expect(back.searchParams.get('subscription_id')).to.equal(sub.id);
    expect((await paypal.getSubscription(sub.id)).status).to.equal('APPROVED');
    const active = await eventually(async () => {
      const s = await paypal.getSubscription(sub.id);
      return s.status === 'ACTIVE' ? s : undefined;
    });
    expect(active.nextBillingTime).to.be.a('string');
    expect(active.lastPaymentAt).to.be.a('string');
  });

  it("a subscription's transactions (the cycles charged) and a capture's refund, idempotent by PayPal-Request-Id", async () => {
    const { monthly } = await catalog();
    const urls = { returnUrl: 'https://shop.example/done', cancelUrl: 'https://shop.example/cancel' };
    const sub = await paypal.createSubscription({ planId: monthly.id, customId: 'chk_r', ...urls }, 'sub-key-r');
    const range = { from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 3_600_000) };
    expect(await paypal.listSubscriptionPayments(sub.id, range), 'nothing charged before activation').to.deep.equal([]);
    await standin.approve(sub.approveUrl!);
    await eventually(async () => (await paypal.getSubscription(sub.id)).status === 'ACTIVE');
    const [first, ...rest] = await paypal.listSubscriptionPayments(sub.id, range);
    expect(rest).to.deep.equal([]);
    expect(first).to.deep.include({ status: 'COMPLETED', amount: 29, currency: 'USD' });
    // As PayPal documents it, the range is required.
    const token = (await (
      await fetch(new URL('/v1/oauth2/token', standin.baseUrl), {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from('client-1:secret-1').toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'client_credentials' }),
      })
    ).json()) as { access_token: string };
    const bare = await fetch(new URL(`/v1/billing/subscriptions/${sub.id}/transactions`, standin.baseUrl), {
      headers: { authorization: `Bearer ${token.access_token}` },
    });
    expect(bare.status).to.equal(400);
    expect(((await bare.json()) as { details: { issue: string }[] }).details[0].issue).to.equal(
      'MISSING_REQUIRED_PARAMETER',
    );

    const refund = await paypal.refundPayment(first.id, { note: 'duplicate' }, 'chk_r:refund');
    expect(refund.status).to.equal('COMPLETED');
    const again = await paypal.refundPayment(first.id, { note: 'duplicate' }, 'chk_r:refund');
    expect(again.id, 'same PayPal-Request-Id, same refund').to.equal(refund.id);
    expect(standin.captures(sub.id)[0].refunds).to.have.length(1);
    expect((await paypal.listSubscriptionPayments(sub.id, range))[0].status).to.equal('REFUNDED');
    const twice = await paypal.refundPayment(first.id, { note: 'x' }, 'another-key').catch((e: unknown) => e);
    expect(twice).to.be.instanceOf(ProviderError);
    expect((twice as ProviderError).status).to.equal(422);
    expect((twice as ProviderError).message).to.include('CAPTURE_FULLY_REFUNDED');
    // A renewal is a second transaction.
    await standin.renew(sub.id);
    expect((await paypal.listSubscriptionPayments(sub.id, range)).map((p) => p.status)).to.deep.equal([
      'REFUNDED',
      'COMPLETED',
    ]);
  });

  it('revise (approved at the provider), suspend, activate, cancel; an invalid move is a provider error', async () => {
    const { monthly, yearly } = await catalog();
    const sub = await paypal.createSubscription(
      {
        planId: monthly.id,
        customId: 'chk_2',
        returnUrl: 'https://shop.example/ok',
        cancelUrl: 'https://shop.example/no',
      },
      `k-${Math.random()}`,
    );
    await standin.approve(sub.approveUrl!);
    await eventually(async () => ((await paypal.getSubscription(sub.id)).status === 'ACTIVE' ? true : undefined));
    const revision = await paypal.reviseSubscription(sub.id, {
      planId: yearly.id,
      returnUrl: 'https://shop.example/ok',
      cancelUrl: 'https://shop.example/no',
    });
    expect(revision.approveUrl).to.match(/ba_token=/);
    expect((await paypal.getSubscription(sub.id)).planId, 'not before approval').to.equal(monthly.id);
    await standin.approve(revision.approveUrl!);
    expect((await paypal.getSubscription(sub.id)).planId).to.equal(yearly.id);
    await paypal.suspendSubscription(sub.id, 'pause for 2 months');
    expect((await paypal.getSubscription(sub.id)).status).to.equal('SUSPENDED');
    const err = (await paypal.suspendSubscription(sub.id, 'again').catch((e: unknown) => e)) as ProviderError;
    expect(err).to.be.instanceOf(ProviderError);
    expect(err.status).to.equal(422);
    expect(err.message).to.equal(
      'The requested action could not be performed. (SUBSCRIPTION_STATUS_INVALID: The requested action could not ' +
        'be performed.)',
    );
    await paypal.activateSubscription(sub.id, 'resume');
    await paypal.cancelSubscription(sub.id, 'customer asked');
    expect((await paypal.getSubscription(sub.id)).status).to.equal('CANCELLED');
  });

  it('orders: created, approved, captured once', async () => {
    const order = await paypal.createOrder(
      {
        amount: 19,
        currency: 'USD',
        customId: 'chk_bump',
        description: 'Priority support',
        returnUrl: 'https://shop.example/ok',
        cancelUrl: 'https://shop.example/no',
      },
      'order-1',
    );
    expect(order).to.deep.include({ status: 'CREATED', customId: 'chk_bump' });
    const err = (await paypal.captureOrder(order.id, 'cap-0').catch((e: unknown) => e)) as ProviderError;
    expect(err.message).to.match(/ORDER_NOT_APPROVED/);
    const back = new URL(await standin.approve(order.approveUrl!));
    expect(back.searchParams.get('token')).to.equal(order.id);
    expect((await paypal.captureOrder(order.id, 'cap-1')).status).to.equal('COMPLETED');
    expect((await paypal.captureOrder(order.id, 'cap-1')).status, 'idempotent retry').to.equal('COMPLETED');
  });

  it('notifications: signed, verified through the provider; a forged or replayed-elsewhere one fails', async () => {
    const receiver = await startReceiver();
    try {
      const hook = await paypal.registerWebhook(
        receiver.url,
        [{ name: '*' }].map((e) => e.name),
      );
      const { monthly } = await catalog();
      const sub = await paypal.createSubscription(
        {
          planId: monthly.id,
          customId: 'chk_3',
          returnUrl: 'https://shop.example/ok',
          cancelUrl: 'https://shop.example/no',
        },
        `k-${Math.random()}`,
      );
      await standin.approve(sub.approveUrl!);
      const [note] = await receiver.waitFor(1);
      const event = JSON.parse(note.body);
      expect(event).to.deep.include({ event_type: 'BILLING.SUBSCRIPTION.ACTIVATED' });
      expect(event.resource.id).to.equal(sub.id);
      const headers = note.headers as Record<string, string>;
      expect(await paypal.verifyNotification({ headers, body: event, webhookId: hook.id })).to.equal(true);
      expect(
        await paypal.verifyNotification({
          headers,
          body: { ...event, resource: { ...event.resource, status: 'CANCELLED' } },
          webhookId: hook.id,
        }),
      ).to.equal(false);
      expect(
        await paypal.verifyNotification({
          headers: { ...headers, 'paypal-transmission-sig': 'AAAA' },
          body: event,
          webhookId: hook.id,
        }),
      ).to.equal(false);
      const other = new PayPalProvider({ clientId: 'client-2', clientSecret: 'secret-2', baseUrl: standin.baseUrl });
      expect(
        await other.verifyNotification({ headers, body: event, webhookId: hook.id }),
        "another client's webhook id",
      ).to.equal(false);
    } finally {
      await receiver.close();
    }
  });

  it('provider failures surface as ProviderError with status and message; records of another client are 404', async () => {
    standin.failNext(500, 'INTERNAL_SERVER_ERROR', 'An internal server error has occurred');
    const err = (await paypal.createProduct({ name: 'x' }, 'fail-1').catch((e: unknown) => e)) as ProviderError;
    expect(err).to.deep.include({ provider: 'PayPal', status: 500, message: 'An internal server error has occurred' });
    const { monthly } = await catalog();
    const sub = await paypal.createSubscription(
      { planId: monthly.id, customId: 'x', returnUrl: 'https://a.example', cancelUrl: 'https://b.example' },
      `k-${Math.random()}`,
    );
    const other = new PayPalProvider({ clientId: 'client-2', clientSecret: 'secret-2', baseUrl: standin.baseUrl });
    expect(((await other.getSubscription(sub.id).catch((e: unknown) => e)) as ProviderError).status).to.equal(404);
    // A failure set for one client's calls: another client's call meanwhile does not take it; that client's next does.
    standin.failNext(503, 'SERVICE_UNAVAILABLE', 'Service Unavailable', 1, 'client-1');
    expect((await other.createProduct({ name: 'y' }, 'other-1')).id).to.be.a('string');
    const mine = (await paypal.createProduct({ name: 'z' }, 'fail-2').catch((e: unknown) => e)) as ProviderError;
    expect(mine).to.deep.include({ provider: 'PayPal', status: 503, message: 'Service Unavailable' });
    expect((await paypal.createProduct({ name: 'z' }, 'fail-3')).id).to.be.a('string');
  });
});
