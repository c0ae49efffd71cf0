import { expect } from 'chai';
import { PayPalProvider } from '../../src/payments/paypal.js';
import { ProviderError } from '../../src/payments/provider.js';
import { PayPalStandIn } from '../../src/dev/paypal-standin.js';
import { startReceiver } from '../helpers/receiver.js';
import { eventually } from '../helpers/wait.js';

const DAY = 86_400_000;

// The stand-in's billing as PayPal documents it: cycles at next_billing_time on each subscription's own clock,
// failed payments retried every 5 days twice per cycle, the outstanding balance, suspension at the plan's
// payment_failure_threshold (3, as offerkit's plans set it), the capture of the outstanding balance, and the tick.
describe('PayPal stand-in: billing cycles, payment failures and the test clock', function () {
  this.timeout(30_000);
  let standin: PayPalStandIn;
  let paypal: PayPalProvider;
  let token: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  before(async () => {
    standin = new PayPalStandIn({
      credentials: { 'client-1': 'secret-1', 'client-2': 'secret-2' },
      activationDelayMs: 0,
      tickMs: 100,
    });
    const baseUrl = await standin.start();
    paypal = new PayPalProvider({ clientId: 'client-1', clientSecret: 'secret-1', baseUrl });
    receiver = await startReceiver();
    await paypal.registerWebhook(receiver.url, ['*']);
    token = await tokenFor('client-1', 'secret-1');
  });
  const tokenFor = async (clientId: string, secret: string) => {
    const res = await fetch(`${standin.baseUrl}/v1/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    return ((await res.json()) as { access_token: string }).access_token;
  };
  after(async () => {
    await standin.stop();
    await receiver.close();
  });

  const api = async (method: string, path: string, body?: unknown, as = token) => {
    const res = await fetch(`${standin.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
  };
  const subscribe = async (opts: { yearly?: boolean } = {}) => {
    const product = await paypal.createProduct({ name: 'Acme' }, `prod-${Math.random()}`);
    const plan = await paypal.createPlan(
      opts.yearly
        ? {
            productId: product.id,
            name: 'Y',
            interval: 'year',
            price: 290,
            currency: 'USD',
            introPrice: 199,
            introCycles: 1,
          }
        : { productId: product.id, name: 'M', interval: 'month', price: 29, currency: 'USD' },
      `plan-${Math.random()}`,
    );
    const sub = await paypal.createSubscription(
      {
        planId: plan.id,
        customId: `chk_${Math.random()}`,
        returnUrl: 'https://a.example',
        cancelUrl: 'https://b.example',
      },
      `sub-${Math.random()}`,
    );
    await standin.approve(sub.approveUrl!);
    return eventually(async () => {
      const s = (await api('GET', `/v1/billing/subscriptions/${sub.id}`)).body;
      return s.status === 'ACTIVE' ? s : undefined;
    });
  };
  const clock = (ids: string[], now: Date | string, mode: 'align' | 'advance') =>
    api('POST', '/v1/dev/clock', { subscription_ids: ids, now: new Date(now).toISOString(), mode });
  const transactions = async (subId: string) =>
    (
      await paypal.listSubscriptionPayments(subId, {
        from: new Date(Date.now() - DAY),
        to: new Date(Date.now() + 3 * 366 * DAY),
      })
    ).map((t) => ({ status: t.status, amount: t.amount, day: Math.round((Date.parse(t.time) - Date.now()) / DAY) }));
  const notified = (subId: string) =>
    standin.sent
      .filter((n) => n.event.resource.id === subId || n.event.resource.billing_agreement_id === subId)
      .map((n) => n.event.event_type as string);

  it('advance bills every cycle due, in order, on the subscription clock, and notifies before it answers', async () => {
    const s = await subscribe({ yearly: true });
    const started = Date.parse(s.billing_info.last_payment.time);
    expect(s.billing_info.last_payment.amount.value, 'the first (trial) cycle at activation').to.equal('199.00');
    const nextYear = Date.parse(s.billing_info.next_billing_time);
    expect(nextYear - started).to.be.within(365 * DAY, 366 * DAY);

    const aligned = await clock([s.id], new Date(Date.now() + 300 * DAY), 'align');
    expect(aligned.status).to.equal(200);
    expect(aligned.body.subscriptions[0]).to.deep.include({ id: s.id, billed: 0, status: 'ACTIVE' });
    expect(await transactions(s.id), 'align bills nothing').to.have.length(1);

    const moved = await clock([s.id], new Date(nextYear + 366 * DAY), 'advance');
    expect(moved.body.subscriptions[0].billed, 'the two yearly cycles due in those years').to.equal(2);
    expect((await transactions(s.id)).map((t) => [t.status, t.amount])).to.deep.equal([
      ['COMPLETED', 199],
      ['COMPLETED', 290],
      ['COMPLETED', 290],
    ]);
    expect(
      notified(s.id).filter((t) => t === 'PAYMENT.SALE.COMPLETED'),
      'sent before the answer',
    ).to.have.length(2);
    const after = (await api('GET', `/v1/billing/subscriptions/${s.id}`)).body;
    expect(
      after.billing_info.cycle_executions.map((c: { tenure_type: string; cycles_completed: number }) => [
        c.tenure_type,
        c.cycles_completed,
      ]),
    ).to.deep.equal([
      ['TRIAL', 1],
      ['REGULAR', 2],
    ]);
    expect(after.billing_info.outstanding_balance).to.deep.equal({ currency_code: 'USD', value: '0.00' });
    expect(after).to.not.have.any.keys('clock_offset_ms', 'fail_next', 'retry', 'clientId');
    // Clocks only move forward: a time behind it bills nothing and leaves it where it was.
    const back = await clock([s.id], new Date(), 'advance');
    expect(Date.parse(back.body.subscriptions[0].now)).to.be.greaterThan(nextYear + 365 * DAY);
    expect(back.body.subscriptions[0].billed).to.equal(0);
  });

  it('a failed payment: retried every 5 days twice, owed as the outstanding balance, billed with the next cycle', async () => {
    const s = await subscribe();
    const due = Date.parse(s.billing_info.next_billing_time);
    const fail = await api('POST', `/v1/dev/subscriptions/${s.id}/fail-payments`, { count: 3 });
    expect(fail).to.deep.include({ status: 200, body: { id: s.id, fail_next: 3 } });

    await clock([s.id], new Date(due + 1000), 'advance');
    let remote = await paypal.getSubscription(s.id);
    expect(remote.status).to.equal('ACTIVE');
    expect(remote.lastFailedPaymentAt).to.equal(new Date(due).toISOString());
    expect(remote.nextPaymentRetryAt).to.equal(new Date(due + 5 * DAY).toISOString());
    expect(remote.outstandingBalance).to.deep.equal({ amount: 29, currency: 'USD' });
    expect(remote.failedPaymentsCount, 'counted once the retries of the cycle failed').to.equal(0);
    expect(notified(s.id).at(-1)).to.equal('BILLING.SUBSCRIPTION.PAYMENT.FAILED');

    await clock([s.id], new Date(due + 12 * DAY), 'advance');
    remote = await paypal.getSubscription(s.id);
    expect(remote.failedPaymentsCount).to.equal(1);
    expect(remote.nextPaymentRetryAt, 'no third retry').to.equal(null);
    const raw = (await api('GET', `/v1/billing/subscriptions/${s.id}`)).body;
    expect(raw.billing_info.last_failed_payment).to.deep.include({
      time: new Date(due + 10 * DAY).toISOString(),
      reason_code: 'PAYMENT_DENIED',
      amount: { currency_code: 'USD', value: '29.00' },
    });
    expect((await transactions(s.id)).map((t) => [t.status, t.amount])).to.deep.equal([
      ['COMPLETED', 29],
      ['DECLINED', 29],
      ['DECLINED', 29],
      ['DECLINED', 29],
    ]);

    // The next cycle bills its price and what is owed (auto_bill_outstanding), and succeeds.
    await clock([s.id], new Date(Date.parse(remote.nextBillingTime!) + 1000), 'advance');
    remote = await paypal.getSubscription(s.id);
    expect((await transactions(s.id)).at(-1)).to.deep.include({ status: 'COMPLETED', amount: 58 });
    expect(remote).to.deep.include({ failedPaymentsCount: 0, outstandingBalance: null, nextPaymentRetryAt: null });
    expect(notified(s.id).filter((t) => t === 'BILLING.SUBSCRIPTION.PAYMENT.FAILED')).to.have.length(3);
  });

  it("a subscription whose failed cycles reach the plan's threshold (3) is suspended, and bills nothing more", async () => {
    const s = await subscribe();
    standin.failPayments(s.id, 9);
    const first = Date.parse(s.billing_info.next_billing_time);
    await clock([s.id], new Date(first + 75 * DAY), 'advance');
    const remote = await paypal.getSubscription(s.id);
    expect(remote.status).to.equal('SUSPENDED');
    expect(remote.failedPaymentsCount).to.equal(3);
    expect(remote.outstandingBalance).to.deep.equal({ amount: 87, currency: 'USD' });
    expect(notified(s.id).at(-1)).to.equal('BILLING.SUBSCRIPTION.SUSPENDED');
    const declined = (await transactions(s.id)).filter((t) => t.status === 'DECLINED');
    expect(declined.map((t) => t.amount)).to.deep.equal([29, 29, 29, 58, 58, 58, 87, 87, 87]);
    const before = (await transactions(s.id)).length;
    await clock([s.id], new Date(first + 200 * DAY), 'advance');
    expect(await transactions(s.id), 'suspended: no cycle bills').to.have.length(before);
  });

  it("capture of the outstanding balance: PayPal's validations, a declined attempt, then paid up (idempotent)", async () => {
    const s = await subscribe();
    const capture = (body: unknown, key = `cap-${Math.random()}`) =>
      fetch(`${standin.baseUrl}/v1/billing/subscriptions/${s.id}/capture`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'paypal-request-id': key },
        body: JSON.stringify(body),
      }).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as { details?: { issue: string }[]; status?: string },
      }));
    const owed = (value: string) => ({
      note: 'retry',
      capture_type: 'OUTSTANDING_BALANCE',
      amount: { currency_code: 'USD', value },
    });
    expect((await capture({ note: 'x' })).body.details![0].issue).to.equal('MISSING_REQUIRED_PARAMETER');
    expect((await capture(owed('29'))).body.details![0].issue).to.equal('ZERO_OUTSTANDING_BALANCE');

    standin.failPayments(s.id, 2);
    await clock([s.id], new Date(Date.parse(s.billing_info.next_billing_time) + 1000), 'advance');
    expect((await capture(owed('30'))).body.details![0].issue).to.equal('AMOUNT_GREATER_THAN_OUTSTANDING_BALANCE');
    expect(
      (await capture({ ...owed('29'), amount: { currency_code: 'EUR', value: '29' } })).body.details![0].issue,
    ).to.equal('CURRENCY_MISMATCH');
    // The second failing attempt: the capture is declined (200 with the transaction), still owed.
    const refused = await paypal.captureOutstanding(s.id, { amount: 29, currency: 'USD', note: 'retry' }, 'cap-a');
    expect(refused.status).to.equal('DECLINED');
    expect((await paypal.getSubscription(s.id)).outstandingBalance).to.deep.equal({ amount: 29, currency: 'USD' });
    const paid = await paypal.captureOutstanding(s.id, { amount: 29, currency: 'USD', note: 'retry' }, 'cap-b');
    expect(paid.status).to.equal('COMPLETED');
    const again = await paypal.captureOutstanding(s.id, { amount: 29, currency: 'USD', note: 'retry' }, 'cap-b');
    expect(again.id, 'same PayPal-Request-Id, same capture').to.equal(paid.id);
    const remote = await paypal.getSubscription(s.id);
    expect(remote).to.deep.include({ outstandingBalance: null, nextPaymentRetryAt: null, failedPaymentsCount: 0 });
    expect((await transactions(s.id)).map((t) => t.status)).to.deep.equal([
      'COMPLETED',
      'DECLINED',
      'DECLINED',
      'COMPLETED',
    ]);
    // The retry planned 5 days after the failure is gone: nothing more is charged then.
    await clock([s.id], new Date(Date.parse(s.billing_info.next_billing_time) + 11 * DAY), 'advance');
    expect(await transactions(s.id)).to.have.length(4);
    // A declined attempt is no capture: it cannot be refunded.
    const [declined] = standin.captures(s.id).filter((c) => c.status === 'DECLINED');
    const refund = await paypal.refundPayment(declined.id, { note: 'x' }, 'r-1').catch((e: unknown) => e);
    expect((refund as ProviderError).status).to.equal(404);
  });

  it('activate keeps a next billing time still ahead; one passed while suspended moves an interval on', async () => {
    const s = await subscribe();
    const next = s.billing_info.next_billing_time;
    await paypal.suspendSubscription(s.id, 'cancel at period end');
    await paypal.activateSubscription(s.id, 'undone');
    expect((await paypal.getSubscription(s.id)).nextBillingTime, 'the renewal does not shift').to.equal(next);
    await paypal.suspendSubscription(s.id, 'pause');
    await clock([s.id], new Date(Date.parse(next) + 40 * DAY), 'advance');
    expect(await transactions(s.id), 'nothing billed while suspended').to.have.length(1);
    await paypal.activateSubscription(s.id, 'pause ended');
    const resumed = Date.parse((await paypal.getSubscription(s.id)).nextBillingTime!);
    expect(resumed - (Date.parse(next) + 40 * DAY)).to.be.within(28 * DAY, 31 * DAY + 60_000);
  });

  it('the real-time tick bills a cycle that came due on the subscription clock', async () => {
    const s = await subscribe();
    await clock([s.id], new Date(Date.parse(s.billing_info.next_billing_time) - 300), 'align');
    await eventually(async () => ((await transactions(s.id)).length === 2 ? true : undefined));
    expect((await transactions(s.id)).map((t) => t.status)).to.deep.equal(['COMPLETED', 'COMPLETED']);
  });

  it("the dev endpoints take the merchant token: another merchant's subscription is not found, a bad body 400", async () => {
    const s = await subscribe();
    expect(
      (await api('POST', '/v1/dev/clock', { subscription_ids: [s.id], now: 'not a date', mode: 'advance' })).status,
    ).to.equal(400);
    expect(
      (await api('POST', '/v1/dev/clock', { subscription_ids: [s.id], now: new Date().toISOString(), mode: 'x' }))
        .status,
    ).to.equal(400);
    expect((await api('POST', `/v1/dev/subscriptions/${s.id}/fail-payments`, { count: -1 })).status).to.equal(400);
    expect((await api('POST', '/v1/dev/clock', {}, 'wrong')).status).to.equal(401);
    const theirs = await tokenFor('client-2', 'secret-2');
    const foreign = await api(
      'POST',
      '/v1/dev/clock',
      { subscription_ids: [s.id], now: new Date(Date.now() + 90 * DAY).toISOString(), mode: 'advance' },
      theirs,
    );
    expect(foreign.status).to.equal(200);
    expect(foreign.body).to.deep.equal({ subscriptions: [], not_found: [s.id] });
    expect((await api('POST', `/v1/dev/subscriptions/${s.id}/fail-payments`, { count: 1 }, theirs)).status).to.equal(
      404,
    );
    expect(await transactions(s.id), "another merchant's clock moved nothing").to.have.length(1);
    const direct = await fetch(`${standin.baseUrl}/v1/dev/subscriptions/${s.id}/fail-payments`, { method: 'POST' });
    expect(direct.status).to.equal(401);
  });
});
