import { expect } from 'chai';
import { addMonths } from '../../src/apps/clock.js';
import { billingApp, type TestApp } from '../helpers/factories.js';
import { get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Issue 40, item 6: a failed renewal payment through the grace period, on the test clock, against the PayPal
 * stand-in failing payments as a sandbox can: PayPal's retries (5 and 10 days later), the merchant's own retry
 * (`retry-payment`: a capture of the outstanding balance), and the app's `dunning` setting at the end of the grace.
 */
describe('dunning: a failed renewal, its grace period and recovery', function () {
  this.timeout(120_000);
  let app: TestApp;
  let base: string;
  let renewsAt: number;
  let subId: string;

  beforeEach(async () => {
    ({ app, base } = await billingApp({ purchases: ['ada'] })); // Pro at $19/month through the offer `launch`
    const s = await sub();
    renewsAt = Date.parse(s.renews_at);
    subId = s.id;
  });

  const sub = async () => (await get(`${base}/namespaces/ada/subscription`, app.api_key)).body;
  const planOf = async () => (await get(`${base}/namespaces/ada`, app.api_key)).body.plan;
  /** Moves the app's clock to `renews_at + ms`; expects it done. */
  const advanceTo = async (ms: number) => {
    const res = await post(`${base}/test-clock/advance`, app.api_key, { to: new Date(renewsAt + ms).toISOString() });
    expect(res.status, res.text).to.equal(200);
  };
  /** The app's subscription events (but the purchase's), oldest first: [type, data]. */
  const timeline = async () =>
    ((await get(`${base}/events?limit=100`, app.api_key)).body.data as { type: string; data: any }[])
      .reverse()
      .filter((e) => e.type.startsWith('subscription.'));
  const types = async () => (await timeline()).map((e) => e.type);
  const of = async (type: string) => (await timeline()).filter((e) => e.type === type).map((e) => e.data);
  const attempts = () =>
    testEnv()
      .paypal.captures(subId)
      .map((c) => [c.status, Number(c.amount.value)]);
  const at = (ms: number) => new Date(renewsAt + ms).toISOString();

  it('the app setting: 14 days then cancel by default; PATCH changes a field at a time; null restores it', async () => {
    expect((await get(base, app.api_key)).body.dunning).to.deep.equal({ grace_days: 14, after: 'cancel' });
    const set = await patch(base, app.api_key, { dunning: { after: 'free_plan' } });
    expect(set.status, set.text).to.equal(200);
    expect(set.body.dunning).to.deep.equal({ grace_days: 14, after: 'free_plan' });
    expect((await patch(base, app.api_key, { dunning: { grace_days: 7 } })).body.dunning).to.deep.equal({
      grace_days: 7,
      after: 'free_plan',
    });
    for (const [body, error] of [
      [{ grace_days: 0 }, /^dunning\.grace_days: /],
      [{ grace_days: 61 }, /^dunning\.grace_days: /],
      [{ grace_days: 2.5 }, /^dunning\.grace_days: /],
      [{ after: 'suspend' }, /^dunning\.after: /],
    ] as const) {
      const bad = await patch(base, app.api_key, { dunning: body });
      expect(bad.status, JSON.stringify(body)).to.equal(400);
      expect(bad.body.error).to.match(error);
    }
    expect((await patch(base, app.api_key, { dunning: null })).body.dunning).to.deep.equal({
      grace_days: 14,
      after: 'cancel',
    });
  });

  it("a failed renewal: past due with its plan kept, then recovered by PayPal's retry five days later", async () => {
    testEnv().paypal.failPayments(subId, 1);
    await advanceTo(HOUR);
    const due = await sub();
    expect(due.status).to.equal('past_due');
    expect(due.dunning).to.deep.equal({
      since: at(0),
      failures: 1,
      next_retry_at: at(5 * DAY),
      grace_ends_at: at(14 * DAY),
      after: 'cancel',
      outstanding: 19,
      on_free_plan: false,
    });
    expect(due.renews_at, 'the next cycle is still a month after the failed one').to.equal(
      addMonths(new Date(renewsAt), 1).toISOString(),
    );
    expect(await planOf(), 'the plan is kept during the grace period').to.equal('pro');
    expect(await types()).to.deep.equal(['subscription.past_due', 'subscription.payment_failed']);
    const [failed] = await of('subscription.payment_failed');
    expect(failed).to.deep.include({ attempt: 1, next_retry_at: at(5 * DAY), outstanding: 19 });
    expect(failed.payment).to.deep.include({ amount: 19, currency: 'USD', time: at(0) });
    expect((await of('subscription.past_due'))[0]).to.deep.include({ grace_ends_at: at(14 * DAY), after: 'cancel' });
    // While past due, changes wait for the payment: 409 naming the way out.
    const pause = await post(`${base}/namespaces/ada/subscription/pause`, app.api_key, { months: 1 });
    expect(pause.status).to.equal(409);
    expect(pause.body).to.include({ reason: 'past_due' });
    expect(pause.body.error).to.include('/subscription/retry-payment');

    await advanceTo(5 * DAY - HOUR);
    expect((await sub()).status, 'not before the retry').to.equal('past_due');
    await advanceTo(5 * DAY + HOUR);
    const back = await sub();
    expect(back).to.deep.include({ status: 'active', dunning: null, last_payment_at: at(5 * DAY) });
    expect(await types()).to.deep.equal([
      'subscription.past_due',
      'subscription.payment_failed',
      'subscription.recovered',
      'subscription.renewed',
    ]);
    expect((await of('subscription.recovered'))[0].payment).to.deep.include({ amount: 19, time: at(5 * DAY) });
    expect(attempts()).to.deep.equal([
      ['COMPLETED', 19],
      ['DECLINED', 19],
      ['COMPLETED', 19],
    ]);
  });

  it('retry-payment: a declined capture is 409 payment_declined (one more failure); the next one recovers it', async () => {
    testEnv().paypal.failPayments(subId, 2);
    await advanceTo(HOUR);
    expect((await sub()).status).to.equal('past_due');
    const retry = () => post(`${base}/namespaces/ada/subscription/retry-payment`, app.api_key);
    const declined = await retry();
    expect(declined.status, declined.text).to.equal(409);
    expect(declined.body).to.include({ reason: 'payment_declined' });
    expect(declined.body.error).to.match(/^The provider declined the payment of 19\.00 USD/);
    expect(declined.body.subscription.dunning).to.include({ failures: 2, outstanding: 19 });
    const ok = await retry();
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body).to.deep.include({ status: 'active', dunning: null });
    expect(await types()).to.deep.equal([
      'subscription.past_due',
      'subscription.payment_failed',
      'subscription.payment_failed',
      'subscription.recovered',
      'subscription.renewed',
    ]);
    expect((await retry()).body).to.include({ reason: 'not_past_due' });
    // Paid: PayPal's retry five days later does not come.
    await advanceTo(6 * DAY);
    expect(attempts()).to.deep.equal([
      ['COMPLETED', 19],
      ['DECLINED', 19],
      ['DECLINED', 19],
      ['COMPLETED', 19],
    ]);
  });

  it('the grace period ends with the payment still failing: cancelled (after: cancel), at the provider too', async () => {
    testEnv().paypal.failPayments(subId, 10);
    await advanceTo(14 * DAY - HOUR);
    expect((await sub()).dunning).to.deep.include({ failures: 3, next_retry_at: null });
    expect(await planOf()).to.equal('pro');
    await advanceTo(14 * DAY + HOUR);
    const ended = await sub();
    expect(ended).to.deep.include({ status: 'cancelled', provider_status: 'CANCELLED', dunning: null });
    expect(testEnv().paypal.subscription(subId)!.status).to.equal('CANCELLED');
    expect(await planOf()).to.equal('free');
    expect(await types()).to.deep.equal([
      'subscription.past_due',
      'subscription.payment_failed',
      'subscription.payment_failed',
      'subscription.payment_failed',
      'subscription.grace_ended',
      'subscription.cancelled',
    ]);
    expect(
      (await of('subscription.payment_failed')).map((f) => [f.attempt, f.payment.time, f.next_retry_at]),
    ).to.deep.equal([
      [1, at(0), at(5 * DAY)],
      [2, at(5 * DAY), at(10 * DAY)],
      [3, at(10 * DAY), null],
    ]);
    expect((await of('subscription.grace_ended'))[0]).to.deep.include({ after: 'cancel', outstanding: 19 });
    expect((await of('subscription.cancelled'))[0].previous).to.deep.equal({ plan: 'pro' });
  });

  it('after: free_plan: the account moves to the free plan at the end of grace; a later payment brings the plan back', async () => {
    await patch(base, app.api_key, { dunning: { after: 'free_plan', grace_days: 7 } });
    testEnv().paypal.failPayments(subId, 3);
    await advanceTo(7 * DAY + HOUR);
    const grace = await sub();
    expect(grace.status).to.equal('past_due');
    expect(grace.dunning).to.deep.include({ after: 'free_plan', on_free_plan: true, grace_ends_at: at(7 * DAY) });
    expect(await planOf()).to.equal('free');
    expect((await of('subscription.grace_ended'))[0]).to.deep.include({ after: 'free_plan' });
    // PayPal's last retry fails too; the next cycle bills the cycle and what is owed, and succeeds.
    const next = Date.parse(grace.renews_at);
    await advanceTo(next - renewsAt + HOUR);
    const paid = await sub();
    expect(paid).to.deep.include({ status: 'active', dunning: null, plan: 'pro' });
    expect(await planOf(), 'the plan is back').to.equal('pro');
    expect((await of('subscription.recovered'))[0].payment).to.deep.include({ amount: 38, time: grace.renews_at });
    expect(await types()).to.deep.equal([
      'subscription.past_due',
      'subscription.payment_failed',
      'subscription.payment_failed',
      'subscription.grace_ended',
      'subscription.payment_failed',
      'subscription.recovered',
      'subscription.renewed',
    ]);
    // The catalog's samples (GET /event-types) are shaped like these real events.
    const catalog = (await get('/event-types')).body as { type: string; sample: any }[];
    for (const type of ['past_due', 'payment_failed', 'grace_ended', 'recovered', 'renewed'].map(
      (t) => `subscription.${t}`,
    )) {
      const [real] = await of(type);
      const { sample } = catalog.find((t) => t.type === type)!;
      expect(Object.keys(sample).sort(), type).to.deep.equal(Object.keys(real).sort());
      expect(Object.keys(sample.object.subscription).sort(), type).to.deep.equal(
        Object.keys(real.object.subscription).sort(),
      );
    }
    expect(attempts().map(([status, amount]) => `${status} ${amount}`)).to.deep.equal([
      'COMPLETED 19',
      'DECLINED 19',
      'DECLINED 19',
      'DECLINED 19',
      'COMPLETED 38',
    ]);
  });
});
