import { expect } from 'chai';
import { connectProvider, createAccount, createTestApp, seedCatalog, type TestApp } from './helpers/factories.js';
import { get, patch, post } from './helpers/http.js';
import { testEnv } from './helpers/servers.js';
import { eventually } from './helpers/wait.js';

describe('the 402 body with offers and provider links', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    app = await createTestApp();
    base = `/apps/${app.id}`;
    await seedCatalog(app);
    await createAccount(app, { id: 'f1', plan: 'free' });
    await post(`${base}/namespaces/f1/usage/seats/add`, app.api_key); // 1 of 1 seats
  });
  const connect = () => connectProvider(app);
  const blocked = () => post(`${base}/namespaces/f1/usage/seats/add`, app.public_key);

  it("uses the entitlement's offer when the account can buy it, else regular prices", async () => {
    await connect();
    await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'https://shop.example/pricing' });
    await post(`${base}/offers`, app.api_key, {
      id: 'more_seats',
      name: 'More seats',
      expires_at: '2099-01-01T00:00:00Z',
      plans: [
        {
          plan: 'pro',
          prices: [{ interval: 'month', amount: 19, cycles: 3 }],
          extras: { entitlements: [{ id: 'seats', max: 20 }] },
        },
      ],
    });
    await patch(`${base}/entitlements/seats`, app.api_key, { overage: { mode: 'block', offer_id: 'more_seats' } });
    const draftOffer = await blocked();
    expect(draftOffer.body.offer.id, 'a draft offer cannot be bought: regular prices').to.equal(null);
    await post(`${base}/offers/more_seats/publish`, app.api_key);
    const res = await blocked();
    expect(res.status).to.equal(402);
    expect(res.body.offer).to.deep.equal({
      id: 'more_seats',
      name: 'More seats',
      plan: { id: 'pro', name: 'Pro' },
      interval: 'month',
      currency: 'USD',
      price: 19,
      list_price: 29,
      cycles: 3,
      new_limit: 20,
      checkout_url: 'https://shop.example/pricing?offer=more_seats&plan=pro&interval=month&account=f1',
      expires_at: '2099-01-01T00:00:00.000Z',
    });
    expect(res.body.message).to.equal(
      'Seats: 1 of 1 used. Upgrade to Pro ($19.00/month for 3 months) for 20 Seats: ' +
        'https://shop.example/pricing?offer=more_seats&plan=pro&interval=month&account=f1',
    );
  });

  it('without a pricing page: a provider approval link made on the spot, reused for an hour; null without a provider', async () => {
    expect((await blocked()).body.offer.checkout_url, 'no pricing page, no provider').to.equal(null);
    await connect();
    const first = await blocked();
    expect(first.body.offer.checkout_url).to.match(/\/checkoutnow\?ba_token=BA-/);
    const second = await blocked();
    expect(second.body.offer.checkout_url, 'reused').to.equal(first.body.offer.checkout_url);
    expect((await get(`${base}/checkouts`, app.api_key)).body.data).to.have.length(1);
  });

  it('after paying, the retried call first settles the open checkout and then succeeds', async () => {
    await connect();
    const res = await blocked();
    const link = res.body.offer.checkout_url as string;
    // No worker: only the usage call's own check with the provider can complete the checkout.
    await testEnv().stopWorker();
    try {
      await checkAfterPayment(link);
    } finally {
      await testEnv().startWorker();
    }
  });

  async function checkAfterPayment(link: string) {
    const back = new URL(await testEnv().paypal.approve(link));
    expect(back.pathname).to.equal(`/apps/${app.id}/checkouts/return`);
    const page = await fetch(back);
    expect(page.status).to.equal(200);
    expect(await page.text()).to.include('Your payment was approved');
    // Activation takes a moment at the provider; then the retried call goes through.
    const ok = await eventually(async () => {
      const r = await blocked();
      return r.status === 200 ? r : undefined;
    });
    expect(ok.body).to.deep.equal({ entitlement: 'seats', count: 2 });
    expect((await get(`${base}/namespaces/f1`, app.api_key)).body.plan).to.equal('pro');
    expect((await get(`${base}/checkouts?status=completed`, app.api_key)).body.data).to.have.length(1);
  }
});
