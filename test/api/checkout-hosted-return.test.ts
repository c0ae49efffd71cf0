// A fresh app sells before it has pages of its own: a checkout (or plan change) made without `return_url` on an app
// without `checkout_url` returns the buyer to the service's hosted return page
// (docs/decisions/0365-where-a-buyer-lands-when-nobody-named-a-page.md, "Where a buyer
// lands when nobody named a page").
import { expect } from 'chai';
import { connectProvider, publishOffer, seededApp, type TestApp } from '../helpers/factories.js';
import { get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('checkouts without return_url: the hosted return page', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;

  beforeEach(async () => {
    ({ app, base } = await seededApp({ name: 'Acme <Notes>', accounts: [{ id: 'ada' }, { id: 'bo' }] }));
    await connectProvider(app); // and no checkout_url: a fresh app
    await publishOffer(app, {
      id: 'launch',
      name: 'Launch',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
    });
  });

  const checkout = async (account: string) => {
    const res = await post(`${base}/offers/launch/checkout`, app.public_key, {
      plan: 'pro',
      interval: 'month',
      account,
    });
    expect(res.status, res.text).to.equal(201);
    return res.body as { id: string; approve_url: string; status: string };
  };

  it('approved: the buyer lands on the service page naming the app, and the purchase completes', async () => {
    const chk = await checkout('ada');
    const landed = await testEnv().paypal.approve(chk.approve_url);
    const url = new URL(landed);
    expect(url.origin + url.pathname).to.equal(`${testEnv().baseUrl}/apps/${app.id}/checkouts/return`);
    expect(url.searchParams.get('subscription_id'), 'the provider says which subscription').to.be.a('string');

    const page = await get(url.pathname + url.search, null);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    expect(page.text).to.include('Thank you');
    expect(page.text, 'names the app, escaped').to.include('return to Acme &lt;Notes&gt;');
    expect(page.text).not.to.include('<Notes>');

    // The page asked the checkout to complete; the account is on pro without a call from the app.
    await eventually(async () => (await get(`${base}/checkouts/${chk.id}`, app.api_key)).body.status === 'completed');
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('pro');
    const again = await get(url.pathname + url.search, null);
    expect(again.text).to.include('Your purchase is complete');
  });

  it('cancelled at the provider: a page that says nothing was charged; the checkout stays unpaid', async () => {
    const chk = await checkout('bo');
    const landed = new URL(await testEnv().paypal.approve(chk.approve_url, 'cancel'));
    expect(landed.pathname).to.equal(`/apps/${app.id}/checkouts/return`);
    expect(landed.searchParams.get('outcome')).to.equal('cancelled');
    const page = await get(landed.pathname + landed.search, null);
    expect(page.status).to.equal(200);
    expect(page.text).to.include('Checkout cancelled');
    expect(page.text).to.include('Nothing was charged');
    expect(page.text).not.to.include('Thank you');
    expect((await get(`${base}/checkouts/${chk.id}`, app.api_key)).body.status).to.not.equal('completed');
    expect((await get(`${base}/namespaces/bo`, app.api_key)).body.plan).to.not.equal('pro');
  });

  it('an older link for a buyer who has subscribed since: open says so before paying; paid anyway, the page says refunded', async () => {
    // Two checkouts while ada had no subscription (a 402 upgrade link and a pricing page, say); the first is paid.
    const first = await checkout('ada');
    const older = await checkout('ada');
    await testEnv().paypal.approve(first.approve_url);
    await eventually(
      async () => (await post(`${base}/checkouts/${first.id}/complete`, app.public_key)).body.status === 'completed',
    );
    // The older link no longer leads to the provider: a page says why, and nothing was charged.
    const opened = await get(`${base}/checkouts/${older.id}/open`, null);
    expect(opened.status).to.equal(200);
    expect(opened.text).to.include('You already have a subscription');
    expect(opened.text).to.include('Nothing was charged');
    // The provider's own approval link still works (it is PayPal's): paid that way, the page does not say "your
    // new plan applies" but that the second subscription is cancelled and refunded, which it then is.
    const landed = new URL(await testEnv().paypal.approve(older.approve_url));
    const page = await get(landed.pathname + landed.search, null);
    expect(page.text).to.include('You already have a subscription');
    expect(page.text).to.include('cancelled and anything it charged is refunded');
    expect(page.text).not.to.include('your new plan applies');
    const settled = await eventually(async () => {
      const c = (await post(`${base}/checkouts/${older.id}/complete`, app.public_key)).body;
      return c.status === 'cancelled' ? c : undefined;
    });
    expect(settled.refund).to.not.equal(null);
    expect((await get(landed.pathname + landed.search, null)).text).to.include('You already have a subscription');
  });

  it("the app's checkout_url, once set, wins over the hosted page; a call's return_url wins over both", async () => {
    expect(
      (await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'https://shop.example/done' })).status,
    ).to.equal(200);
    const viaApp = await checkout('ada');
    expect(await testEnv().paypal.approve(viaApp.approve_url)).to.match(/^https:\/\/shop\.example\/done\?/);
    const own = await post(`${base}/offers/launch/checkout`, app.public_key, {
      plan: 'pro',
      interval: 'month',
      account: 'bo',
      return_url: 'https://mine.example/thanks',
    });
    expect(own.status, own.text).to.equal(201);
    expect(await testEnv().paypal.approve(own.body.approve_url)).to.match(/^https:\/\/mine\.example\/thanks\?/);
  });

  it('a plan change without return_url ends on the hosted page too', async () => {
    const chk = await checkout('ada');
    await testEnv().paypal.approve(chk.approve_url);
    await eventually(
      async () => (await post(`${base}/checkouts/${chk.id}/complete`, app.public_key)).body.status === 'completed',
    );
    const change = await post(`${base}/namespaces/ada/subscription/change`, app.api_key, { plan: 'scale' });
    expect(change.status, change.text).to.be.oneOf([200, 201]);
    expect(change.body.approve_url, change.text).to.be.a('string');
    // An upgrade approves the prorated order first, then the revision (two provider pages).
    let next = await testEnv().paypal.approve(change.body.approve_url);
    while (next.includes('/checkoutnow')) next = await testEnv().paypal.approve(next);
    const back = new URL(next);
    // Through the service's plan-change return (it checks the provider), then on to the hosted page.
    const hop = await get(back.pathname + back.search, null);
    expect(hop.status, hop.text).to.equal(303);
    const to = new URL(hop.headers.get('location')!);
    expect(to.origin + to.pathname).to.equal(`${testEnv().baseUrl}/apps/${app.id}/checkouts/return`);
    const page = await get(to.pathname + to.search, null);
    expect(page.status).to.equal(200);
    expect(page.text).to.include('return to Acme &lt;Notes&gt;');
  });
});
