import { expect } from 'chai';
import { connectProvider, createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('the 402 body with offers and provider links', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp({ accounts: [{ id: 'f1', plan: 'free' }] }));
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
    // The provider's approval link, through the service (which records that it was opened).
    expect(first.body.offer.checkout_url).to.match(new RegExp(`/apps/${app.id}/checkouts/chk_\\w+/open$`));
    expect(new URL(await opened(first.body.offer.checkout_url)).pathname).to.equal('/checkoutnow');
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

  /** Opens a 402's checkout link as a buyer's browser would; answers where it redirects (the provider's page). */
  async function opened(link: string): Promise<string> {
    const res = await fetch(link, { redirect: 'manual' });
    expect(res.status).to.equal(302);
    return res.headers.get('location')!;
  }

  it('the upgrade funnel: 402s prepare checkouts that count nowhere until opened; limit reached, shown, opened, paid', async () => {
    await connect();
    await post(`${base}/offers`, app.api_key, {
      id: 'more_seats',
      name: 'More seats',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
    });
    await post(`${base}/offers/more_seats/publish`, app.api_key);
    await patch(`${base}/entitlements/seats`, app.api_key, { overage: { mode: 'block', offer_id: 'more_seats' } });
    for (const id of ['f2', 'f3', 'f4']) {
      await createAccount(app, { id, plan: 'free' });
      await post(`${base}/namespaces/${id}/usage/seats/add`, app.api_key);
    }
    const links: Record<string, string> = {};
    for (const id of ['f1', 'f2', 'f3', 'f4', 'f1']) {
      const res = await post(`${base}/namespaces/${id}/usage/seats/add`, app.public_key);
      expect(res.status).to.equal(402);
      links[id] = res.body.offer.checkout_url;
    }
    const stats = async () => (await get(`${base}/offers/more_seats/stats`, app.api_key)).body;
    const funnel = async () => (await get(`${base}/analytics/upgrades?interval=30d`, app.api_key)).body;
    // Four checkouts prepared by 402s that nobody opened: not in the offer funnel.
    expect(await stats()).to.deep.include({
      checkouts: 0,
      completed: 0,
      prepared: 4,
      upgrade_links: { prepared: 4, opened: 0, completed: 0 },
    });
    expect(
      (await get(`${base}/checkouts`, app.api_key)).body.data.map((c: { source: string }) => c.source),
    ).to.deep.equal(['upgrade_link', 'upgrade_link', 'upgrade_link', 'upgrade_link']);
    expect(await funnel()).to.deep.include({ limit_reached: 5, link_shown: 5, opened: 0, paid: 0, revenue: {} });

    // f2 opens the link and leaves; f1 opens it and pays.
    await opened(links.f2);
    await testEnv().paypal.approve(await opened(links.f1));
    const paid = (await get(`${base}/checkouts`, app.api_key)).body.data.find(
      (c: { account: string }) => c.account === 'f1',
    );
    expect(paid.opened_at).to.be.a('string');
    await eventually(
      async () => (await post(`${base}/checkouts/${paid.id}/complete`, app.public_key)).body.status === 'completed',
    );
    expect(await stats()).to.deep.include({
      checkouts: 2,
      completed: 1,
      prepared: 4,
      upgrade_links: { prepared: 4, opened: 2, completed: 1 },
    });
    const f = await funnel();
    expect(f).to.deep.include({ interval: '30d', limit_reached: 5, link_shown: 5, opened: 2, paid: 1 });
    expect(f.revenue).to.deep.equal({ USD: 19 });
    expect(f.by_entitlement).to.deep.equal([
      { entitlement: 'seats', limit_reached: 5, link_shown: 5, opened: 2, paid: 1 },
    ]);
    expect(
      (await get(`${base}/analytics/upgrades?interval=30d&entitlement=api_calls`, app.api_key)).body,
    ).to.deep.include({ limit_reached: 0, opened: 0, by_entitlement: [] });
    expect((await get(`${base}/analytics/upgrades`, app.api_key)).status, 'interval is required').to.equal(400);
  });

  async function checkAfterPayment(link: string) {
    const back = new URL(await testEnv().paypal.approve(await opened(link)));
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
