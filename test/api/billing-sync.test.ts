import { expect } from 'chai';
import { billingApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('plan checkout, plan changes and provider notifications', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await billingApp({ accounts: [{ id: 'ada', plan: 'free' }] }));
  });
  const sub = () => get(`${base}/namespaces/ada/subscription`, app.api_key).then((r) => r.body);
  const types = async (type: string) =>
    (await get(`${base}/events?type=${type}&limit=100`, app.api_key)).body.data as { data: Record<string, any> }[];

  async function buyPro() {
    const chk = await post(`${base}/plans/pro/checkout`, app.public_key, { account: 'ada' });
    expect(chk.status, chk.text).to.equal(201);
    expect(chk.body).to.deep.include({
      offer: null,
      plan: 'pro',
      interval: 'month',
      price: 29,
      list_price: 29,
      currency: 'USD',
    });
    await testEnv().paypal.approve(chk.body.approve_url);
    await eventually(
      async () => (await post(`${base}/checkouts/${chk.body.id}/complete`, app.public_key)).body.status === 'completed',
    );
    return chk.body;
  }

  it('plan checkout at the regular price; 409 no_price for a plan without one', async () => {
    await buyPro();
    expect(await sub()).to.deep.include({
      status: 'active',
      plan: 'pro',
      price: 29,
      offer: null,
      provider_status: 'ACTIVE',
    });
    expect((await get(`${base}/namespaces/ada/plan`, app.api_key)).body.plan.id).to.equal('pro');
    const none = await post(`${base}/plans/internal/checkout`, app.public_key, { account: 'ada' });
    expect(none.status).to.equal(409);
    expect(none.body.reason).to.equal('no_price');
    expect(
      (await post(`${base}/plans/scale/checkout`, app.public_key, { account: 'ada', interval: 'year' })).body.reason,
    ).to.equal('no_price');
  });

  it('change: an approval link; the plan changes only when the provider reports the approval', async () => {
    await buyPro();
    const res = await post(`${base}/namespaces/ada/subscription/change`, app.api_key, { plan: 'scale' });
    expect(res.status, res.text).to.equal(200);
    // An upgrade is prorated by default (issue 30): the difference's order first, then the revision.
    expect(res.body.approve_url).to.include('/checkoutnow?token=');
    expect(res.body.revision_approve_url).to.include('/checkoutnow?ba_token=');
    expect(res.body.pending_change).to.deep.include({ plan: 'scale', interval: 'month', price: 99 });
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan, 'not before approval').to.equal('pro');
    // The buyer approves the order, and PayPal takes them on to the revision.
    let next = await testEnv().paypal.approve(res.body.approve_url);
    while (next.includes('/checkoutnow')) next = await testEnv().paypal.approve(next);
    const changed = await eventually(async () => ((await sub()).plan === 'scale' ? sub() : undefined));
    expect(changed).to.deep.include({ plan: 'scale', price: 99, pending_change: null });
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('scale');
    expect((await types('account.plan_changed')).at(0)!.data.previous).to.deep.equal({ plan: 'pro' });
    expect(
      (await post(`${base}/namespaces/ada/subscription/change`, app.api_key, { plan: 'internal' })).body.reason,
    ).to.equal('no_price');
  });

  it('a renewal at the provider emits subscription.renewed once; a failed payment is recorded', async () => {
    await buyPro();
    const before = await sub();
    await new Promise((r) => setTimeout(r, 20));
    await testEnv().paypal.renew(before.id);
    await eventually(async () => (await types('subscription.renewed')).length === 1);
    const after = await sub();
    expect(Date.parse(after.last_payment_at)).to.be.greaterThan(Date.parse(before.last_payment_at));
    expect((await post(`${base}/namespaces/ada/subscription/sync`, app.api_key)).status).to.equal(200);
    expect(await types('subscription.renewed'), 'a sync does not renew twice').to.have.length(1);
    await testEnv().paypal.failPayment(before.id);
    await eventually(async () => (await sub()).last_payment_failed_at !== null);
  });

  it('expiry at the provider cancels here: free plan and subscription.cancelled', async () => {
    await buyPro();
    await testEnv().paypal.expire((await sub()).id);
    const cancelled = await eventually(async () => ((await sub()).status === 'cancelled' ? sub() : undefined));
    expect(cancelled.provider_status).to.equal('EXPIRED');
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('free');
    expect((await types('subscription.cancelled'))[0].data.previous).to.deep.equal({ plan: 'pro' });
    expect((await post(`${base}/namespaces/ghost/subscription/sync`, app.api_key)).status).to.equal(404);
  });
});
