import http from 'node:http';
import type net from 'node:net';
import { Writable } from 'node:stream';
import { temporal } from '@temporalio/proto';
import { expect } from 'chai';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { checkoutDef, checkoutWorkflowId } from '../../workflows/shared.js';
import { billingApp, createAccount, paypalClientOf, type TestApp } from '../helpers/factories.js';
import { call, get, patch, post } from '../helpers/http.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('checkouts (offer purchase through the provider stand-in)', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  const offer = {
    id: 'spring',
    name: 'Spring sale',
    plans: [
      {
        plan: 'pro',
        prices: [{ interval: 'month', amount: 19, cycles: 3 }],
        extras: { entitlements: [{ id: 'api_calls', max: 5000 }], addons: ['storage'], cycles: 6 },
      },
    ],
    bumps: [{ id: 'support', name: 'Priority support', addon: 'priority', price: 9 }],
  };
  beforeEach(async () => {
    ({ app, base } = await billingApp({ offer }));
  });

  const buy = (body: Record<string, unknown> = {}) =>
    post(`${base}/offers/spring/checkout`, app.public_key, { plan: 'pro', interval: 'month', ...body });
  const complete = (id: string) => post(`${base}/checkouts/${id}/complete`, app.public_key);

  it('end to end: checkout, approval at the provider, complete (created, then completed), access, events, exactly once', async () => {
    const receiver = await startReceiver();
    try {
      await post(`${base}/webhooks`, app.api_key, {
        url: receiver.url,
        events: ['checkout.completed', 'account.created', 'account.addon_granted'],
      });
      const res = await buy({ bumps: ['support'], email: 'ada@example.com', ref: 'newsletter' });
      expect(res.status, res.text).to.equal(201);
      const chk = res.body;
      expect(chk).to.deep.include({
        object: 'checkout', // as a plan change says `plan_change` (issue 39): every answer of the union says which
        status: 'created',
        offer: 'spring',
        plan: 'pro',
        interval: 'month',
        currency: 'USD',
        price: 19,
        cycles: 3,
        email: 'ada@example.com',
        ref: 'newsletter',
      });
      expect(chk.id).to.match(/^chk_/);
      expect(chk.approve_url).to.include('/checkoutnow?ba_token=');
      expect(chk.bump_approve_url).to.include('/checkoutnow?token=');

      expect((await complete(chk.id)).body.status, 'not approved yet').to.equal('created');
      const paypal = testEnv().paypal;
      const back = new URL(await paypal.approve(chk.approve_url));
      expect(back.origin + back.pathname).to.equal('https://shop.example/pricing');
      await paypal.approve(chk.bump_approve_url);
      // Approved but the provider is still activating: complete answers `created`; shortly after, `completed`.
      const first = await complete(chk.id);
      expect(['created', 'completed']).to.include(first.body.status);
      const done = await eventually(async () => {
        const r = await complete(chk.id);
        return r.body.status === 'completed' ? r.body : undefined;
      });
      expect(done.completed_at).to.be.a('string');
      for (let i = 0; i < 3; i++) expect((await complete(done.id)).body.status).to.equal('completed');

      const access = (await get(`${base}/namespaces/ada@example.com/plan`, app.api_key)).body;
      expect(access.plan.id).to.equal('pro');
      expect(access.offer).to.equal('spring');
      expect(
        access.entitlements.find((e: { id: string }) => e.id === 'api_calls').max,
        'offer extras (layer 2)',
      ).to.equal(5000);
      expect(access.addons).to.include.members(['storage', 'priority']);
      const account = (await get(`${base}/namespaces/ada@example.com`, app.api_key)).body;
      expect(account.addons, 'the bumped add-on is owned').to.deep.equal(['priority']);

      const events = (await get(`${base}/events?limit=100`, app.api_key)).body.data.map(
        (e: { type: string }) => e.type,
      );
      expect(events.filter((t: string) => t === 'checkout.completed')).to.have.length(1);
      expect(events.filter((t: string) => t === 'account.created')).to.have.length(1);
      expect(events.filter((t: string) => t === 'account.addon_granted')).to.have.length(1);
      const delivered = await receiver.waitFor(3);
      const completed = delivered.map((r) => JSON.parse(r.body)).find((e) => e.type === 'checkout.completed');
      expect(completed.data.object).to.deep.include({ id: chk.id, status: 'completed' });
      expect(completed.data.account.id).to.equal('ada@example.com');
      const sample = (await get('/event-types')).body.find(
        (t: { type: string }) => t.type === 'checkout.completed',
      ).sample;
      expect(Object.keys(sample.object).sort(), 'the catalog sample has the real shape').to.deep.equal(
        Object.keys(completed.data.object).sort(),
      );
      expect(Object.keys(sample.account).sort()).to.deep.equal(Object.keys(completed.data.account).sort());

      // The workflow ends a workflow task after the activity that completed the checkout: wait for its end.
      const handle = testEnv().deps.temporal.client.workflow.getHandle(checkoutWorkflowId(chk.id));
      await handle.result();
      const wf = await handle.describe();
      const sa = Object.fromEntries(wf.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value]));
      expect(sa).to.deep.include({ AppId: app.id, CheckoutId: chk.id, OfferId: 'spring' });
      expect(wf.status.name).to.equal('COMPLETED');
      expect((await get(`${base}/offers/spring`, app.api_key)).body.redemptions).to.equal(1);
      const stats = (await get(`${base}/offers/spring/stats`, app.api_key)).body;
      expect(stats).to.deep.include({ offer: 'spring', checkouts: 1, completed: 1, revenue: { USD: 28 } });
      expect(stats.by_plan).to.deep.equal([{ plan: 'pro', checkouts: 1, completed: 1, revenue: { USD: 19 } }]);
      expect(stats.by_ref).to.deep.equal([{ ref: 'newsletter', checkouts: 1, completed: 1, revenue: { USD: 19 } }]);
      expect(stats.by_bump).to.deep.equal([{ bump: 'support', completed: 1, revenue: { USD: 9 } }]);
      expect(
        (await get(`${base}/checkouts?status=completed`, app.api_key)).body.data.map((c: { id: string }) => c.id),
      ).to.deep.equal([chk.id]);
    } finally {
      await receiver.close();
    }
  });

  it('the provider notification alone completes the checkout (no complete call), once', async () => {
    await createAccount(app, { id: 'bob', plan: 'free' });
    const chk = (await buy({ account: 'bob' })).body;
    await testEnv().paypal.approve(chk.approve_url);
    const done = await eventually(async () => {
      const c = (await get(`${base}/checkouts/${chk.id}`, app.api_key)).body;
      return c.status === 'completed' ? c : undefined;
    });
    expect(done.account).to.equal('bob');
    const note = testEnv().paypal.sent.find(
      (n) => n.event.event_type === 'BILLING.SUBSCRIPTION.ACTIVATED' && n.url.endsWith(`/payments/webhooks/${app.id}`),
    );
    expect(note?.status, 'the activation notification was verified and accepted').to.equal(200);
    expect((await complete(chk.id)).body.status).to.equal('completed');
    const events = (await get(`${base}/events?type=checkout.completed`, app.api_key)).body.data;
    expect(events).to.have.length(1);
    expect((await get(`${base}/namespaces/bob`, app.api_key)).body.plan).to.equal('pro');
  });

  it('complete works without a running worker: the API checks with the provider itself, once', async () => {
    const chk = (await buy({ email: 'carol@example.com' })).body;
    await testEnv().paypal.approve(chk.approve_url);
    await new Promise((r) => setTimeout(r, 800)); // the provider activates
    await testEnv().stopWorker();
    try {
      const res = await complete(chk.id);
      expect(res.status).to.equal(200);
      expect(res.body.status).to.equal('completed');
    } finally {
      await testEnv().startWorker();
    }
    expect((await get(`${base}/events?type=checkout.completed`, app.api_key)).body.data).to.have.length(1);
  });

  it('complete as the workflow applies the checkout: every call answers completed, no warning, no extra provider call', async () => {
    // An API of its own on the shared servers, whose log lines the test reads.
    const lines: { msg: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as { msg: string });
        cb();
      },
    });
    const server = http.createServer(
      createApp({ ...testEnv().deps, logger: pino({ level: 'info' }, sink) }).callback(),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const own = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    try {
      const paypal = testEnv().paypal;
      const chk = (await buy({ email: 'dan@example.com' })).body;
      const sub = (await testEnv()
        .deps.orm.em.fork()
        .getConnection()
        .execute('select provider_subscription_id as id from checkouts where id = ?', [chk.id])) as { id: string }[];
      const subId = sub[0].id;
      const handle = testEnv().deps.temporal.client.workflow.getHandle(checkoutWorkflowId(chk.id));
      // The workflow has made its first check and waits for the next one.
      await eventually(async () => {
        const st = await handle.query(checkoutDef.queries.state);
        return st.checks >= 1 && st.nextCheckAt !== null;
      });
      // The provider answers the next read of this subscription slowly: the check that applies the
      // checkout is in flight while the completes arrive, and some of them land as it finishes.
      paypal.delayNext(subId, 3000);
      await paypal.approve(chk.approve_url);
      // One complete every 100 ms for 5 s: before, during and right after the check that applies it.
      const answers = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          await new Promise((r) => setTimeout(r, i * 100));
          return call('POST', `${base}/checkouts/${chk.id}/complete`, { token: app.public_key, base: own });
        }),
      );
      for (const a of answers) expect(a.status, a.text).to.equal(200);
      expect(answers.map((a) => a.body.status)).to.deep.equal(Array(50).fill('completed'));
      const result = await handle.result();
      expect(result.status).to.equal('completed');
      expect(
        lines.filter((l) => l.msg === 'checkout workflow did not answer; checking with the provider directly'),
        'no false warning',
      ).to.have.length(0);
      // Every read of the subscription at the provider was one of the workflow's checks.
      const reads = paypal.received.filter((r) => r.method === 'GET' && r.path.endsWith(`/subscriptions/${subId}`));
      expect(reads.length, 'no provider call beyond the workflow checks').to.equal(result.checks);
      // Every update the workflow accepted was answered by it.
      const history = await handle.fetchHistory();
      const { EventType } = temporal.api.enums.v1;
      const count = (t: number) => (history.events ?? []).filter((e) => e.eventType === t).length;
      const accepted = count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED);
      expect(accepted, 'completes that asked the workflow').to.be.greaterThan(0);
      expect(count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED)).to.equal(accepted);
      expect((await get(`${base}/events?type=checkout.completed`, app.api_key)).body.data).to.have.length(1);
    } finally {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
  });

  it('order bumps must share one currency', async () => {
    const res = await post(`${base}/offers`, app.api_key, {
      ...offer,
      id: 'mixed',
      bumps: [
        { id: 'a', name: 'A', addon: 'priority', price: 1, currency: 'USD' },
        { id: 'b', name: 'B', addon: 'storage', price: 1, currency: 'EUR' },
      ],
    });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('bumps: must all be in one currency (they are paid as one order)');
  });

  it('a forged provider notification is refused (401) and changes nothing', async () => {
    const chk = (await buy({ email: 'eve@example.com' })).body;
    const sub = chk.approve_url;
    const forged = await call('POST', `/payments/webhooks/${app.id}`, {
      body: { id: 'WH-FAKE', event_type: 'BILLING.SUBSCRIPTION.ACTIVATED', resource: { id: 'I-FAKE' } },
      headers: {
        'paypal-transmission-id': 'x',
        'paypal-transmission-time': new Date().toISOString(),
        'paypal-transmission-sig': 'bm9wZQ==',
        'paypal-auth-algo': 'SHA256withRSA',
        'paypal-cert-url': 'https://evil.example/cert',
      },
    });
    expect(forged.status).to.equal(401);
    expect(sub).to.be.a('string');
    expect((await get(`${base}/checkouts/${chk.id}`, app.api_key)).body.status).to.equal('created');
  });

  it('409 with a reason when the offer cannot be bought', async () => {
    await createAccount(app, { id: 'vip', plan: 'free' });
    const reason = async (body: Record<string, unknown>, offerId = 'spring') => {
      const r = await post(`${base}/offers/${offerId}/checkout`, app.public_key, {
        plan: 'pro',
        interval: 'month',
        ...body,
      });
      expect(r.status, r.text).to.equal(409);
      return r.body.reason;
    };
    expect(await reason({ plan: 'scale' })).to.equal('plan_not_offered');
    expect(await reason({ interval: 'year' })).to.equal('interval_not_offered');
    expect(await reason({ bumps: ['nope'] })).to.equal('bump_not_offered');
    await post(`${base}/offers`, app.api_key, { ...offer, id: 'draft_one' });
    expect(await reason({}, 'draft_one')).to.equal('not_published');
    const targeted = (await post(`${base}/offers`, app.api_key, { ...offer, id: undefined, account_id: 'vip' })).body;
    await post(`${base}/offers/${targeted.id}/publish`, app.api_key);
    expect(await reason({ account: 'someone' }, targeted.id)).to.equal('targeted');
    expect(
      (
        await post(`${base}/offers/${targeted.id}/checkout`, app.public_key, {
          plan: 'pro',
          interval: 'month',
          account: 'vip',
        })
      ).status,
    ).to.equal(201);
    await patch(`${base}/offers/spring`, app.api_key, { starts_at: '2099-01-01T00:00:00Z' });
    expect(await reason({})).to.equal('not_started');
    await patch(`${base}/offers/spring`, app.api_key, { starts_at: null, expires_at: '2020-01-01T00:00:00Z' });
    expect(await reason({})).to.equal('expired');
    await post(`${base}/offers/spring/archive`, app.api_key);
    expect(await reason({})).to.equal('archived');
    expect(
      (await post(`${base}/offers/ghost/checkout`, app.public_key, { plan: 'pro', interval: 'month' })).status,
    ).to.equal(404);
  });

  describe('order bumps: what the checkout records is what the offer has when it is recorded', () => {
    const checkouts = async () =>
      (await get(`${base}/checkouts?offer=spring`, app.api_key)).body.data as { id: string }[];
    /** Starts a checkout, changes the offer while the service waits on the provider, and returns the answer. */
    const buyWhileEditing = async (edit: Record<string, unknown>, body: Record<string, unknown>) => {
      const held = testEnv().paypal.holdNext('POST', '/v1/billing/subscriptions');
      const answer = buy(body);
      await held.reached; // the offer is read and priced; the provider is creating the subscription
      try {
        const edited = await patch(`${base}/offers/spring`, app.api_key, edit);
        expect(edited.status, edited.text).to.equal(200);
      } finally {
        held.release();
      }
      return answer;
    };

    it('a bump taken off the offer during checkout creation is refused (409), and no checkout is recorded', async () => {
      const res = await buyWhileEditing({ bumps: [] }, { bumps: ['support'], email: 'stale@example.com' });
      expect(res.status, res.text).to.equal(409);
      expect(res.body.reason).to.equal('bump_not_offered');
      expect(await checkouts()).to.deep.equal([]);
      // The same page without the bump buys.
      expect((await buy({ email: 'stale@example.com' })).status).to.equal(201);
    });

    it('a bump repriced during checkout creation is refused with offer_changed; the next checkout has the new price', async () => {
      const repriced = [{ ...offer.bumps[0], price: 12 }];
      const res = await buyWhileEditing({ bumps: repriced }, { bumps: ['support'], email: 'late@example.com' });
      expect(res.status, res.text).to.equal(409);
      expect(res.body.reason).to.equal('offer_changed');
      expect(await checkouts()).to.deep.equal([]);
      const again = await buy({ bumps: ['support'], email: 'late@example.com' });
      expect(again.status, again.text).to.equal(201);
      expect(again.body.bumps).to.deep.equal([{ id: 'support', name: 'Priority support', price: 12, currency: 'USD' }]);
    });

    it('a bump listed twice is 400; a bump the account already owns is 409 bump_owned and left out of its public view', async () => {
      const twice = await buy({ bumps: ['support', 'support'], email: 'twice@example.com' });
      expect(twice.status).to.equal(400);
      expect(twice.body.error).to.equal('bumps: must not list a bump twice');
      await createAccount(app, { id: 'owner', plan: 'free' });
      expect((await post(`${base}/namespaces/owner/addons`, app.api_key, { id: 'priority' })).status).to.equal(201);
      const owned = await buy({ bumps: ['support'], account: 'owner' });
      expect(owned.status).to.equal(409);
      expect(owned.body).to.deep.include({
        reason: 'bump_owned',
        error: 'Account owner already owns Priority support (order bump support)',
      });
      const view = (await get(`${base}/offers/spring/public?account=owner`, app.public_key)).body;
      expect(view.bumps).to.deep.equal([]);
      expect((await get(`${base}/offers/spring/public`, app.public_key)).body.bumps).to.have.length(1);
      expect(await checkouts()).to.deep.equal([]);
    });

    it('two pages, two checkouts with the same bump, both approved: the add-on is granted and charged once', async () => {
      await createAccount(app, { id: 'tabs', plan: 'free' });
      const first = (await buy({ bumps: ['support'], account: 'tabs' })).body;
      const second = (await buy({ bumps: ['support'], account: 'tabs' })).body;
      const paypal = testEnv().paypal;
      const approveAndSettle = async (chk: { id: string; approve_url: string; bump_approve_url: string }) => {
        await paypal.approve(chk.bump_approve_url);
        await paypal.approve(chk.approve_url);
        return eventually(async () => {
          const c = (await complete(chk.id)).body;
          return c.status !== 'created' ? c : undefined;
        });
      };
      expect((await approveAndSettle(first)).status).to.equal('completed');
      // The second page's purchase duplicates the live subscription: cancelled at the provider (issue 30).
      const dup = await approveAndSettle(second);
      expect(dup.status).to.equal('cancelled');
      expect(paypal.subscriptionByApproval(second.approve_url)?.status).to.equal('CANCELLED');
      const account = (await get(`${base}/namespaces/tabs`, app.api_key)).body;
      expect(account.addons).to.deep.equal(['priority']);
      const stats = (await get(`${base}/offers/spring/stats`, app.api_key)).body;
      expect(stats.completed).to.equal(1);
      expect(stats.by_bump, 'the second bump order was not captured').to.deep.equal([
        { bump: 'support', completed: 1, revenue: { USD: 9 } },
      ]);
      const granted = (await get(`${base}/events?type=account.addon_granted`, app.api_key)).body.data;
      expect(granted).to.have.length(1);
    });
    it('an approved bump order whose add-ons the account came to own in part is lowered to the rest, then captured', async () => {
      expect((await post(`${base}/addons`, app.api_key, { id: 'vault', name: 'Vault' })).status).to.equal(201);
      const bumps = [...offer.bumps, { id: 'vault_bump', name: 'Vault', addon: 'vault', price: 4 }];
      expect((await patch(`${base}/offers/spring`, app.api_key, { bumps })).status).to.equal(200);
      await createAccount(app, { id: 'partly', plan: 'free' });
      const chk = (await buy({ bumps: ['support', 'vault_bump'], account: 'partly' })).body;
      expect(chk.bumps.map((b: { id: string }) => b.id)).to.deep.equal(['support', 'vault_bump']);
      const paypal = testEnv().paypal;
      await paypal.approve(chk.bump_approve_url);
      await paypal.approve(chk.approve_url);
      // Another page granted Priority support before this checkout completes.
      expect((await post(`${base}/namespaces/partly/addons`, app.api_key, { id: 'priority' })).status).to.equal(201);
      await eventually(async () => (await complete(chk.id)).body.status === 'completed');
      const done = (await get(`${base}/checkouts/${chk.id}`, app.api_key)).body;
      expect(done.bumps, 'the checkout records what was charged').to.deep.equal([
        { id: 'vault_bump', name: 'Vault', price: 4, currency: 'USD' },
      ]);
      const order = paypal.order(new URL(chk.bump_approve_url).searchParams.get('token')!);
      expect(order?.status).to.equal('COMPLETED');
      expect(order?.purchase_units[0].amount).to.deep.equal({ currency_code: 'USD', value: '4.00' });
      expect((await get(`${base}/namespaces/partly`, app.api_key)).body.addons).to.have.members(['priority', 'vault']);
      const stats = (await get(`${base}/offers/spring/stats`, app.api_key)).body;
      expect(stats.by_bump).to.deep.equal([{ bump: 'vault_bump', completed: 1, revenue: { USD: 4 } }]);
    });
  });

  it('expire: a checkout its buyer has not paid ends now (secret key), its workflow ends, the buyer cannot complete it', async () => {
    await createAccount(app, { id: 'ada', plan: 'free' });
    const chk = (await buy({ account: 'ada' })).body;
    expect(chk.status).to.equal('created');
    expect(
      (await post(`${base}/checkouts/${chk.id}/expire`, app.public_key)).status,
      'not with the publishable key',
    ).to.equal(401);
    expect((await post(`${base}/checkouts/chk_nothing/expire`, app.api_key)).status).to.equal(404);
    const res = await post(`${base}/checkouts/${chk.id}/expire`, app.api_key);
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ id: chk.id, status: 'expired' });
    // Again: the same answer, nothing else happens.
    expect((await post(`${base}/checkouts/${chk.id}/expire`, app.api_key)).body.status).to.equal('expired');
    // Its workflow ends (nudged; it finds the checkout no longer waiting).
    const handle = testEnv().deps.temporal.client.workflow.getHandle(checkoutWorkflowId(chk.id));
    expect((await handle.result()).status).to.equal('expired');
    // The buyer can no longer complete it, even after approving at the provider.
    await testEnv().paypal.approve(chk.approve_url);
    expect((await complete(chk.id)).body.status).to.equal('expired');
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('free');
  });

  it('expire: a checkout its buyer already approved is never expired (409): it completes', async () => {
    await createAccount(app, { id: 'bob', plan: 'free' });
    const chk = (await buy({ account: 'bob' })).body;
    await testEnv().paypal.approve(chk.approve_url);
    // Approved, and either still activating at the provider (409 approved) or applied by the check (409 completed).
    const res = await post(`${base}/checkouts/${chk.id}/expire`, app.api_key);
    expect(res.status, res.text).to.equal(409);
    expect(res.body.reason).to.be.oneOf(['approved', 'completed']);
    await eventually(async () => (await complete(chk.id)).body.status === 'completed');
    expect((await get(`${base}/namespaces/bob`, app.api_key)).body.plan).to.equal('pro');
    const again = await post(`${base}/checkouts/${chk.id}/expire`, app.api_key);
    expect([again.status, again.body.reason]).to.deep.equal([409, 'completed']);
  });

  it('502 naming the provider when it fails; 409 when it is not connected', async () => {
    const ours = paypalClientOf(app).client_id; // this app's calls only, whatever else calls the stand-in meanwhile
    testEnv().paypal.failNext(500, 'INTERNAL_SERVER_ERROR', 'An internal server error has occurred', 1, ours);
    const failed = await buy({ email: 'x@example.com' });
    expect(failed.status).to.equal(502);
    expect(failed.body.error).to.equal('PayPal: An internal server error has occurred');
    await call('DELETE', `${base}/payments`, { token: app.api_key });
    const res = await buy({ email: 'x@example.com' });
    expect(res.status).to.equal(409);
    expect(res.body.error).to.equal('payment provider not connected');
  });
});
