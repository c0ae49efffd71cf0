import { expect } from 'chai';
import { billingApp, type TestApp } from '../helpers/factories.js';
import { del, get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

/** Issue 30, item 2: plan changes with a proration policy per direction, through PayPal's revise. */
describe('POST /apps/:appId/namespaces/:accountId/subscription/change (plan changes)', function () {
  this.timeout(90_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await billingApp({ purchases: ['ada'] })); // Pro at $19/month through the offer `launch`
  });
  const change = (body: Record<string, unknown>) =>
    post(`${base}/namespaces/ada/subscription/change`, app.api_key, {
      return_url: 'https://shop.example/account',
      ...body,
    });
  const sub = async () => (await get(`${base}/namespaces/ada/subscription`, app.api_key)).body;
  const plan = async () => (await get(`${base}/namespaces/ada`, app.api_key)).body.plan;
  const events = async (type: string) => (await get(`${base}/events?type=${type}`, app.api_key)).body.data;
  /** The buyer clicks through PayPal's approval pages, then lands back on the service's return route. */
  const approveAll = async (url: string) => {
    const paypal = testEnv().paypal;
    let next = await paypal.approve(url);
    while (next.includes('/checkoutnow')) next = await paypal.approve(next);
    const back = new URL(next);
    return get(back.pathname + back.search);
  };

  it('the app policy defaults to prorate_now for upgrades and at_renewal for downgrades; PATCH changes it per direction', async () => {
    expect((await get(base, app.api_key)).body.plan_change_policy).to.deep.equal({
      upgrade: 'prorate_now',
      downgrade: 'at_renewal',
    });
    const res = await patch(base, app.api_key, { plan_change_policy: { downgrade: 'no_proration' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.plan_change_policy).to.deep.equal({ upgrade: 'prorate_now', downgrade: 'no_proration' });
    const bad = await patch(base, app.api_key, { plan_change_policy: { upgrade: 'sometimes' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.match(/^plan_change_policy\.upgrade: /);
    expect((await patch(base, app.api_key, { plan_change_policy: null })).body.plan_change_policy).to.deep.equal({
      upgrade: 'prorate_now',
      downgrade: 'at_renewal',
    });
  });

  it('the plan a change waits to move to cannot be deleted (409 naming the accounts); once applied, its accounts hold it', async () => {
    // Deleted meanwhile, the buyer's approval revised the PayPal subscription to the new price while the change
    // could not apply here (a 500 on sync, the account left on its old plan).
    const res = await change({ plan: 'scale', interval: 'month' });
    expect(res.status, res.text).to.equal(200);
    const held = await del(`${base}/plans/scale`, app.api_key);
    expect(held.status, held.text).to.equal(409);
    expect(held.body.pending_changes).to.deep.equal(['ada']);
    expect((await approveAll(res.body.approve_url)).status).to.be.oneOf([200, 302, 303]);
    await eventually(async () => (await plan()) === 'scale');
    expect((await del(`${base}/plans/scale`, app.api_key)).body.accounts).to.equal(1);
  });

  it('to the free plan: a cancellation at the renewal, then the free plan; the access view says if it has one', async () => {
    const status = async (account: string) =>
      (await get(`${base}/namespaces/${account}/plan`, app.public_key)).body.subscription_status;
    await post(`${base}/namespaces`, app.api_key, { id: 'bo' });
    expect(await status('bo'), 'none: GET .../subscription would be 404').to.equal(null);
    expect((await get(`${base}/namespaces/bo/subscription`, app.api_key)).status).to.equal(404);
    expect(await status('ada')).to.equal('active');

    const token = (await post(`${base}/namespaces/ada/token`, app.api_key, {})).body.token as string;
    const res = await post(`${base}/namespaces/ada/subscription/change`, token, { plan: 'free' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.include({ approve_url: null, effective: 'renewal', direction: 'downgrade' });
    expect(res.body.cancel_at).to.equal(res.body.renews_at);
    expect(await plan(), 'kept until the end of the period').to.equal('pro');
    expect(await status('ada')).to.equal('active');
    const again = await post(`${base}/namespaces/ada/subscription/change`, app.api_key, { plan: 'free' });
    expect(again.body.reason).to.equal('cancel_scheduled');
  });

  it("an account token changes its own account's plan; another account's, or the publishable key, is 401", async () => {
    const tokenOf = async (account: string) =>
      (await post(`${base}/namespaces/${account}/token`, app.api_key, {})).body.token as string;
    const body = { plan: 'scale', return_url: 'https://shop.example/account' };
    await post(`${base}/namespaces`, app.api_key, { id: 'bo' });
    const other = await post(`${base}/namespaces/ada/subscription/change`, await tokenOf('bo'), body);
    expect(other.status, 'a token for another account').to.equal(401);
    expect((await post(`${base}/namespaces/ada/subscription/change`, app.public_key, body)).status).to.equal(401);
    expect((await sub()).pending_change, 'nothing was requested').to.equal(null);

    const own = await post(`${base}/namespaces/ada/subscription/change`, await tokenOf('ada'), body);
    expect(own.status, own.text).to.equal(200);
    expect(own.body).to.deep.include({ direction: 'upgrade', policy: 'prorate_now' });
    expect(own.body.approve_url).to.include('/checkoutnow?token=');
    expect((await sub()).pending_change).to.deep.include({ plan: 'scale', scheduled_at: null });
  });

  it('upgrade (prorate_now): nothing until approved; then the plan at once, the difference captured, revised at PayPal', async () => {
    const before = await sub();
    const res = await change({ plan: 'scale' });
    expect(res.status, res.text).to.equal(200);
    const c = res.body;
    expect(c).to.deep.include({ direction: 'upgrade', policy: 'prorate_now', effective: 'now' });
    // (99 - 19) per month for the rest of the cycle (about a month).
    expect(c.proration.currency).to.equal('USD');
    expect(c.proration.amount).to.be.closeTo(80 * c.proration.months_left, 0.1);
    expect(c.proration.months_left).to.be.greaterThan(0.9).and.lessThan(1.05);
    expect(c.approve_url, 'the order first').to.include('/checkoutnow?token=');
    expect(c.revision_approve_url).to.include('/checkoutnow?ba_token=');
    expect(c.pending_change).to.deep.include({ plan: 'scale', price: 99, effective: 'now', scheduled_at: null });
    expect(await plan(), 'nothing changes before the approval').to.equal('pro');
    expect((await change({ plan: 'scale' })).body.reason, 'one change at a time').to.equal('change_pending');

    const back = await approveAll(c.approve_url);
    expect(back.status).to.equal(303);
    expect(new URL(back.headers.get('location')!).origin).to.equal('https://shop.example');
    await eventually(async () => (await plan()) === 'scale');
    const after = await sub();
    expect(after).to.deep.include({ id: before.id, plan: 'scale', price: 99, pending_change: null });
    const order = testEnv().paypal.order(new URL(c.approve_url).searchParams.get('token')!);
    expect(order?.status, 'the prorated difference was captured').to.equal('COMPLETED');
    expect(Number(order?.purchase_units[0].amount.value)).to.equal(c.proration.amount);
    expect(testEnv().paypal.subscription(before.id)?.status, 'the same PayPal subscription, revised').to.equal(
      'ACTIVE',
    );
    const [evt] = await eventually(async () => {
      const e = await events('subscription.changed');
      return e.length ? e : undefined;
    });
    expect(evt.data.previous).to.deep.equal({ plan: 'pro', price: 19, interval: 'month' });
    expect(evt.data.proration).to.deep.equal({ amount: c.proration.amount, currency: 'USD', status: 'captured' });
    expect(evt.data.object.subscription).to.include({ plan: 'scale', price: 99 });
    const sample = (await get('/event-types')).body.find((t: { type: string }) => t.type === 'subscription.changed');
    expect(Object.keys(sample.sample).sort(), 'the catalog sample has the real shape').to.deep.equal(
      Object.keys(evt.data).sort(),
    );
    expect(Object.keys(sample.sample.object.subscription).sort()).to.deep.equal(
      Object.keys(evt.data.object.subscription).sort(),
    );
    // The account's actor ran it: findable by account in the Temporal UI, and on the account's timeline.
    const [wf] = await eventually(async () => {
      const list = [];
      for await (const w of testEnv().deps.temporal.client.workflow.list({
        query: `AccountId = "ada" AND AppId = "${app.id}"`,
      }))
        if (w.workflowId === `account/${app.id}/ada`) list.push(w);
      return list.length ? list : undefined;
    });
    expect(wf.type).to.equal('accountWorkflow');
    const lines = (await get(`${base}/namespaces/ada/timeline`, app.api_key)).body.data as {
      kind: string;
      type: string;
      by: { kind: string } | null;
      amount: { value: number } | null;
      workflow: { id: string } | null;
    }[];
    const intent = lines.find((l) => l.kind === 'intent' && l.type === 'change')!;
    expect(intent.by).to.deep.include({ kind: 'secret_key' });
    expect(intent.workflow!.id).to.equal(`account/${app.id}/ada`);
    const outcome = lines.find((l) => l.type === 'subscription.changed')!;
    expect(outcome.amount!.value, 'what was charged').to.equal(c.proration.amount);
    expect((await change({ plan: 'scale' })).body.reason).to.equal('same_plan');
  });

  it('downgrade (at_renewal): approved, scheduled; the account keeps its plan until the renewal, then moves', async () => {
    // Get to Scale first without proration (no_proration: at once, no order).
    await patch(base, app.api_key, { plan_change_policy: { upgrade: 'no_proration' } });
    const up = (await change({ plan: 'scale' })).body;
    expect(up).to.deep.include({ policy: 'no_proration', effective: 'now', proration: null });
    expect(up.approve_url).to.equal(up.revision_approve_url);
    await approveAll(up.approve_url);
    await eventually(async () => (await plan()) === 'scale');

    const down = await change({ plan: 'pro' });
    expect(down.status, down.text).to.equal(200);
    expect(down.body).to.deep.include({ direction: 'downgrade', policy: 'at_renewal', effective: 'renewal' });
    expect(down.body.proration).to.equal(null);
    await approveAll(down.body.approve_url);
    const scheduled = await eventually(async () => {
      const s = await sub();
      return s.pending_change?.scheduled_at ? s : undefined;
    });
    expect(scheduled.pending_change).to.deep.include({
      plan: 'pro',
      price: 29,
      effective: 'renewal',
      status: 'scheduled',
    });
    expect(scheduled.scheduled_change).to.deep.equal(scheduled.pending_change);
    expect(await plan(), 'entitlements kept until the renewal').to.equal('scale');
    const [evt] = await events('subscription.change_scheduled');
    expect(evt.data.object.subscription.pending_change).to.include({ plan: 'pro', effective: 'renewal' });

    await testEnv().paypal.renew(scheduled.id);
    await eventually(async () => (await plan()) === 'pro');
    expect(await sub()).to.deep.include({ plan: 'pro', price: 29, pending_change: null });
    const changed = await events('subscription.changed');
    expect(changed.map((e: { data: { previous: { plan: string } } }) => e.data.previous.plan)).to.have.members([
      'pro',
      'scale',
    ]);
  });
});
