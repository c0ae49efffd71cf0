import { expect } from 'chai';
import { markWorkspaceReadOnly } from '../../src/apps/apps.service.js';
import { addMonths } from '../../src/apps/clock.js';
import { billingApp, connectProvider, createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { call, get, patch, post } from '../helpers/http.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/**
 * The n-th monthly billing date after `from`, as PayPal bills: each a month after the one before, and a day the next
 * month lacks rolls over to the first days of the month after (Jan 29 → Mar 1 → Apr 1 in a common year; PayPal's
 * "How subscription billing cycles work"). Not n months after the first date: that differs after a Feb 29..31.
 */
const monthsOn = (from: number, n: number): Date =>
  Array.from({ length: n }).reduce<Date>((d) => addMonths(d, 1), new Date(from));

/**
 * Issue 40, item 5: an app's test clock. Moving it runs everything due by then, in order, through the real
 * pieces: the PayPal stand-in bills the cycles on the app's clock and notifies, the account actors run their dates
 * (renewals, scheduled changes, save-offer discount cycles, pause ends), and reservation and checkout expiry follow.
 */
describe('GET /apps/:appId/test-clock and POST .../test-clock/advance', function () {
  this.timeout(120_000);
  let app: TestApp;
  let base: string;

  const clock = async () =>
    (await get(`${base}/test-clock`, app.api_key)).body as { now: string; offset_ms: number; live: boolean };
  const advance = (to: number | string) =>
    post(`${base}/test-clock/advance`, app.api_key, { to: new Date(to).toISOString() });
  /** Moves the clock `ms` ahead of its now; expects it done (200). */
  const advanceBy = async (ms: number) => {
    const res = await advance(Date.parse((await clock()).now) + ms);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };
  const sub = async (account = 'ada') => (await get(`${base}/namespaces/${account}/subscription`, app.api_key)).body;
  const planOf = async (account = 'ada') => (await get(`${base}/namespaces/${account}`, app.api_key)).body.plan;
  /** The app's events of `type`, oldest first. */
  const events = async (type: string) =>
    (
      (await get(`${base}/events?type=${type}&limit=100`, app.api_key)).body.data as { data: any; created_at: string }[]
    ).reverse();
  const approveAll = async (url: string) => {
    const paypal = testEnv().paypal;
    let next = await paypal.approve(url);
    while (next.includes('/checkoutnow')) next = await paypal.approve(next);
    const back = new URL(next);
    return get(back.pathname + back.search);
  };

  describe('the routes', () => {
    beforeEach(async () => {
      ({ app, base } = await seededApp({ accounts: [{ id: 'ada', plan: 'pro' }] }));
    });

    it('GET: real time and no offset until it moves; the secret key only', async () => {
      const before = Date.now();
      const c = await clock();
      expect(c).to.include({ offset_ms: 0, live: false });
      expect(Date.parse(c.now)).to.be.within(before - 1000, Date.now() + 1000);
      expect((await get(`${base}/test-clock`)).status).to.equal(401);
      expect((await get(`${base}/test-clock`, app.public_key)).status).to.equal(401);
      const moved = await advanceBy(3 * DAY);
      expect(moved).to.include({ live: false, pending: false });
      expect(moved.offset_ms).to.be.within(3 * DAY - 60_000, 3 * DAY + 1000);
      expect(Date.parse((await clock()).now) - Date.now()).to.be.within(3 * DAY - 60_000, 3 * DAY + 1000);
    });

    it('400 when `to` is not after the clock or more than five years ahead; 400 for a bad body', async () => {
      const now = Date.parse((await clock()).now);
      const past = await advance(now - 1000);
      expect(past.status).to.equal(400);
      expect(past.body.error).to.match(/^to: must be after the clock's now \(/);
      const far = await advance(addMonths(new Date(now), 60).getTime() + DAY);
      expect(far.status).to.equal(400);
      expect(far.body.error).to.match(/^to: may be at most five years after/);
      expect((await advance(addMonths(new Date(now), 59).getTime())).status, 'within five years').to.equal(200);
      const bad = await post(`${base}/test-clock/advance`, app.api_key, { to: 'tomorrow' });
      expect(bad.status).to.equal(400);
      expect(bad.body.error).to.match(/^to: /);
      expect((await post(`${base}/test-clock/advance`, app.api_key, {})).status).to.equal(400);
    });

    it('a live app and the demo have no test clock: 409 live_app (the demo refuses a secret-key write first: 403)', async () => {
      const [[client_id, client_secret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
      const live = await call('PUT', `${base}/payments`, {
        token: app.api_key,
        body: { client_id, client_secret, env: 'live' },
      });
      expect(live.status, live.text).to.equal(200);
      expect(await clock()).to.include({ live: true, offset_ms: 0 });
      const res = await advance(Date.now() + DAY);
      expect(res.status).to.equal(409);
      expect(res.body).to.include({ reason: 'live_app' });
      expect(res.body.error).to.match(/live app has no test clock/);

      const { app: demo } = await seededApp();
      const orgId = `clock_demo_${Date.now()}`;
      await post('/orgs', testEnv().adminKey, { id: orgId, app_ids: [demo.id] });
      const em = testEnv().deps.orm.em.fork();
      for (const change of await markWorkspaceReadOnly(em, orgId)) await testEnv().deps.credentials.confirm(change);
      const body = { to: new Date(Date.now() + DAY).toISOString() };
      expect((await post(`/apps/${demo.id}/test-clock/advance`, demo.api_key, body)).status).to.equal(403);
      const admin = await post(`/apps/${demo.id}/test-clock/advance`, testEnv().adminKey, body);
      expect(admin.status).to.equal(409);
      expect(admin.body).to.include({ reason: 'live_app' });
      expect((await get(`/apps/${demo.id}/test-clock`, demo.api_key)).body.live).to.equal(true);
    });

    it('reservation expiry follows the clock: on app time, released when the clock passes it', async () => {
      await advanceBy(10 * DAY);
      const reserve = (expires_in: number) =>
        post(`${base}/namespaces/ada/usage/api_calls/reservations`, app.api_key, { amount: 5, expires_in });
      const short = await reserve(3600);
      expect(short.status, short.text).to.equal(201);
      const appNow = Date.parse((await clock()).now);
      expect(Date.parse(short.body.expires_at) - appNow, 'an hour of app time').to.be.within(
        HOUR - 60_000,
        HOUR + 1000,
      );
      const long = (await reserve(86_400)).body;
      await advanceBy(2 * HOUR);
      const read = async (id: string) => (await get(`${base}/namespaces/ada/reservations/${id}`, app.api_key)).body;
      expect((await read(short.body.id)).status, 'released when the call answers').to.equal('expired');
      expect((await read(long.id)).status).to.equal('held');
      await advanceBy(DAY);
      expect((await read(long.id)).status).to.equal('expired');
    });
  });

  describe('billing on the clock', () => {
    beforeEach(async () => {
      ({ app, base } = await billingApp({ accounts: [{ id: 'bob', plan: 'free' }], purchases: ['ada'] })); // Pro at $19/month
    });

    it('a renewal: billed at renews_at by the stand-in, subscription.renewed with the payment, the next date a month on', async () => {
      const before = await sub();
      const due = Date.parse(before.renews_at);
      await advanceBy(due + DAY - Date.parse((await clock()).now));
      const [renewed, ...more] = await events('subscription.renewed');
      expect(more, 'one renewal').to.deep.equal([]);
      expect(renewed.data.payment).to.deep.include({ amount: 19, currency: 'USD', time: before.renews_at });
      const after = await sub();
      expect(after).to.deep.include({ status: 'active', last_payment_at: before.renews_at, provider_status: 'ACTIVE' });
      expect(after.renews_at).to.equal(addMonths(new Date(due), 1).toISOString());
      const captures = testEnv().paypal.captures(before.id);
      expect(captures.map((c) => [c.status, c.amount.value, c.time])).to.deep.equal([
        ['COMPLETED', '19.00', captures[0].time],
        ['COMPLETED', '19.00', before.renews_at],
      ]);
      // Three more months in one call: each renewal in order, each once.
      await advanceBy(3 * 31 * DAY);
      const all = await events('subscription.renewed');
      expect(all.map((e) => e.data.payment.time)).to.deep.equal(
        [0, 1, 2, 3].map((n) => monthsOn(due, n).toISOString()),
      );
    });

    it('a subscription bought after the clock moved bills on the app clock', async () => {
      await advanceBy(40 * DAY);
      const chk = (
        await post(`${base}/offers/launch/checkout`, app.public_key, { plan: 'pro', interval: 'month', account: 'bob' })
      ).body;
      await testEnv().paypal.approve(chk.approve_url);
      await eventually(
        async () => (await post(`${base}/checkouts/${chk.id}/complete`, app.public_key)).body.status === 'completed',
      );
      const bought = await sub('bob');
      const appNow = Date.parse((await clock()).now);
      expect(appNow - Date.parse(bought.last_payment_at), 'paid at the app time').to.be.within(0, 60_000);
      expect(Date.parse(bought.renews_at)).to.equal(addMonths(new Date(bought.last_payment_at), 1).getTime());
      await advanceBy(Date.parse(bought.renews_at) + HOUR - appNow);
      const renewed = (await events('subscription.renewed')).filter((e) => e.data.object.id === 'bob');
      expect(renewed.map((e) => e.data.payment.time)).to.deep.equal([bought.renews_at]);
    });

    it('a downgrade scheduled for the renewal applies at it, billed at the new price', async () => {
      const change = (plan: string) =>
        post(`${base}/namespaces/ada/subscription/change`, app.api_key, { plan, return_url: 'https://shop.example/a' });
      await patch(base, app.api_key, { plan_change_policy: { upgrade: 'no_proration' } });
      await approveAll((await change('scale')).body.approve_url);
      await eventually(async () => (await planOf()) === 'scale');
      const down = await change('pro');
      expect(down.body).to.deep.include({ direction: 'downgrade', effective: 'renewal' });
      await approveAll(down.body.approve_url);
      await eventually(async () => ((await sub()).scheduled_change ? true : undefined));
      const before = await sub();
      expect(before.scheduled_change).to.deep.include({ plan: 'pro', price: 29 });
      await advanceBy(Date.parse(before.renews_at) - Date.parse((await clock()).now) - HOUR);
      expect(await planOf(), 'not before the renewal').to.equal('scale');
      await advanceBy(2 * HOUR);
      expect(await planOf()).to.equal('pro');
      expect(await sub()).to.deep.include({ plan: 'pro', price: 29, scheduled_change: null, pending_change: null });
      const [renewed] = await events('subscription.renewed');
      expect(renewed.data.payment).to.deep.include({ amount: 29, time: before.renews_at });
      const changed = (await events('subscription.changed')).at(-1)!;
      expect(changed.data.previous).to.deep.include({ plan: 'scale' });
    });

    it("a save offer's discount counts down its cycles at each renewal, then the regular price is billed", async () => {
      const flow = await post(`${base}/cancel-flows`, app.api_key, {
        status: 'active',
        steps: [
          {
            id: 'stay',
            type: 'offer',
            title: 'Stay for less',
            decline_label: 'No thanks',
            next: 'confirm',
            offers: [{ kind: 'discount', percent: 25, cycles: 3 }],
          },
          { id: 'confirm', type: 'confirm', title: 'Confirm', decline_label: null },
        ],
      });
      expect(flow.status, flow.text).to.equal(201);
      const token = (await post(`${base}/namespaces/ada/token`, app.api_key, {})).body.token;
      const session = (await post(`${base}/cancel-sessions`, token, {})).body;
      expect(session.offer).to.deep.include({ kind: 'discount' });
      const accepted = await post(`${base}/cancel-sessions/${session.id}/accept`, token, {
        return_url: 'https://shop.example/a',
      });
      expect(accepted.status, accepted.text).to.equal(200);
      await approveAll(accepted.body.approve_url);
      const discounted = await eventually(async () => ((await sub()).price === 14.25 ? sub() : undefined));
      expect(discounted.discount).to.deep.include({ cycles_left: 3, regular_price: 19 });

      const due = Date.parse(discounted.renews_at);
      await advanceBy(monthsOn(due, 3).getTime() + DAY - Date.parse((await clock()).now));
      const paid = (await events('subscription.renewed')).map((e) => [
        e.data.payment.amount,
        e.data.object.subscription.discount?.cycles_left ?? null,
      ]);
      expect(paid).to.deep.equal([
        [14.25, 2],
        [14.25, 1],
        [14.25, null],
        [19, null],
      ]);
      expect(await sub()).to.deep.include({ price: 19, discount: null });
    });

    it('a pause ends on the clock: billing resumes at the provider and the plan comes back', async () => {
      const paused = await post(`${base}/namespaces/ada/subscription/pause`, app.api_key, { months: 1 });
      expect(paused.status, paused.text).to.equal(200);
      const resumeAt = Date.parse(paused.body.pause.resume_at);
      expect(resumeAt).to.equal(addMonths(new Date(Date.parse(paused.body.pause.paused_at)), 1).getTime());
      expect(await planOf()).to.equal('free');
      await advanceBy(resumeAt - Date.parse((await clock()).now) - HOUR);
      expect((await sub()).status, 'still paused an hour before').to.equal('paused');
      await advanceBy(2 * HOUR);
      const after = await sub();
      expect(after).to.deep.include({ status: 'active', pause: null, provider_status: 'ACTIVE' });
      expect(await planOf()).to.equal('pro');
      const [resumed] = await events('subscription.resumed');
      expect(resumed.data).to.deep.include({ resumed_by: 'timer', previous: { plan: 'free' } });
      expect(Date.parse(after.renews_at), 'the next cycle after the pause').to.be.greaterThan(resumeAt);
      expect(await events('subscription.renewed'), 'nothing billed while paused').to.deep.equal([]);
    });

    it('checkout expiry follows the clock: a checkout nobody paid expires 24 hours of app time later', async () => {
      const chk = (
        await post(`${base}/offers/launch/checkout`, app.public_key, { plan: 'pro', interval: 'month', account: 'bob' })
      ).body;
      await advanceBy(23 * HOUR);
      expect((await get(`${base}/checkouts/${chk.id}`, app.api_key)).body.status).to.equal('created');
      await advanceBy(2 * HOUR);
      expect(
        (await get(`${base}/checkouts/${chk.id}`, app.api_key)).body.status,
        'expired when the call answers',
      ).to.equal('expired');
    });

    it('202 when it takes longer than TEST_CLOCK_WAIT_MS: it goes on, another advance meanwhile is 409', async () => {
      const config = testEnv().deps.config;
      const wait = config.TEST_CLOCK_WAIT_MS;
      const held = testEnv().paypal.holdNext('POST', '/v1/dev/clock');
      config.TEST_CLOCK_WAIT_MS = 200;
      try {
        const before = await sub();
        const to = Date.parse(before.renews_at) + DAY;
        const res = await advance(to);
        expect(res.status, res.text).to.equal(202);
        expect(res.body.pending).to.equal(true);
        const again = await advance(to + DAY);
        expect(again.status).to.equal(409);
        expect(again.body.reason).to.equal('advancing');
        held.release();
        await eventually(async () => Date.parse((await clock()).now) >= to, 60_000);
        await eventually(async () => (await events('subscription.renewed')).length === 1, 60_000);
      } finally {
        held.release();
        config.TEST_CLOCK_WAIT_MS = wait;
      }
    });
  });

  it('an account with nothing billed: advancing works without a provider', async () => {
    ({ app, base } = await seededApp());
    await createAccount(app, { id: 'cy', plan: 'free' });
    await advanceBy(400 * DAY);
    await connectProvider(app);
    await advanceBy(DAY);
    expect((await clock()).offset_ms).to.be.greaterThan(400 * DAY);
  });
});
