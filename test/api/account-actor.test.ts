// The account actor (issue 40): intents that meet each other have a defined outcome, said by a 409 naming what is
// pending and how to go on, or by an event, and always by a line of the account's timeline. Real PayPal stand-in,
// real Temporal, the app's test clock.
import { expect } from 'chai';
import { accountDef, accountWorkflowId } from '../../workflows/shared.js';
import { billingApp, purchase, type TestApp } from '../helpers/factories.js';
import { get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';
import { actorState, advanceClock, DAY, HOUR } from '../helpers/actor.js';
import { sql } from '../../src/db/sql.js';

describe('the account actor: intents that meet (account/<app>/<account>)', function () {
  this.timeout(120_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    // Ada on Pro at $19/month (the offer `launch`); Lite at $9 and Scale at $99 at regular prices.
    ({ app, base } = await billingApp({ accounts: [{ id: 'ada', plan: 'free' }], purchases: ['ada'] }));
    await post(`${base}/plans`, app.api_key, {
      id: 'lite',
      name: 'Lite',
      pricingCard: { monthlyPrice: 9, currency: 'USD' },
    });
    await post(`${base}/incentives`, app.api_key, { id: 'partner_deal', name: 'Partner deal' });
    await post(`${base}/incentives`, app.api_key, { id: 'promo', name: 'Promo' });
  });
  const subPath = `/namespaces/ada/subscription`;
  const sub = async () => (await get(`${base}${subPath}`, app.api_key)).body;
  const intent = (path: string, body: Record<string, unknown> = {}) =>
    post(`${base}${subPath}${path}`, app.api_key, { ...body });
  const change = (body: Record<string, unknown>) =>
    intent('/change', { return_url: 'https://shop.example/account', ...body });
  const events = async (type: string) =>
    (await get(`${base}/events?type=${type}&limit=100`, app.api_key)).body.data as { data: any }[];
  const timeline = async () =>
    (await get(`${base}/namespaces/ada/timeline?limit=200`, app.api_key)).body.data as {
      kind: string;
      type: string;
      summary: string;
      by: { kind: string } | null;
      data: Record<string, unknown> | null;
    }[];
  /** The buyer clicks through PayPal's approval pages, then lands back on the service's return route. */
  const approveAll = async (url: string) => {
    const paypal = testEnv().paypal;
    let next = await paypal.approve(url);
    while (next.includes('/checkoutnow')) next = await paypal.approve(next);
    const back = new URL(next);
    return get(back.pathname + back.search);
  };
  const scheduleLite = async () => {
    const down = await change({ plan: 'lite' });
    expect(down.status, down.text).to.equal(200);
    expect(down.body).to.deep.include({ direction: 'downgrade', effective: 'renewal' });
    await approveAll(down.body.approve_url);
    return eventually(async () => {
      const s = await sub();
      return s.scheduled_change ? s : undefined;
    });
  };
  const expectRefused = (res: { status: number; body: any; text: string }, reason: string) => {
    expect(res.status, res.text).to.equal(409);
    expect(res.body.reason).to.equal(reason);
  };

  it("the issue's scenario: an approved downgrade at the renewal is shown as scheduled, and no save offer drops it silently", async () => {
    await post(`${base}/cancel-flows`, app.api_key, {
      id: 'default',
      status: 'active',
      steps: [
        {
          id: 'offer',
          type: 'offer',
          title: '25% off?',
          decline_label: 'No',
          offers: [{ kind: 'discount', percent: 25, cycles: 3 }],
        },
        { id: 'confirm', type: 'confirm', title: 'Sure?' },
      ],
    });
    const token = (await post(`${base}/namespaces/ada/token`, app.api_key, {})).body.token;
    // A session opened before the downgrade: it shows the discount.
    const early = (await post(`${base}/cancel-sessions`, token, {})).body;
    expect(early.step.type).to.equal('offer');

    const scheduled = await scheduleLite();
    expect(scheduled.pending_change).to.deep.include({ status: 'scheduled', plan: 'lite' });
    const listed = (await get(`${base}/subscriptions`, app.api_key)).body.data[0];
    expect(listed.scheduled_change.status, 'the list says scheduled, not awaiting approval').to.equal('scheduled');
    expect(await events('subscription.change_scheduled')).to.have.length(1);

    // A session opened now: the discount would meet the downgrade, so it is not offered (the offer step is skipped).
    const late = (await post(`${base}/cancel-sessions`, token, {})).body;
    expect(late.step.type, 'no offer that would meet the scheduled downgrade').to.equal('confirm');

    // The early session's accept is a 409 naming the downgrade and how to go on; nothing is dropped.
    const accepted = await post(`${base}/cancel-sessions/${early.id}/accept`, token, {});
    expectRefused(accepted, 'change_scheduled');
    expect(accepted.body.error).to.match(
      /^A downgrade to Lite is scheduled for \d{4}-\d{2}-\d{2}; withdraw it with POST /,
    );
    expect(accepted.body.next.map((n: { path: string }) => n.path)).to.include(`${base}${subPath}/change/withdraw`);
    expect((await sub()).scheduled_change, 'nothing dropped').to.deep.include({ plan: 'lite' });
    expect(await events('subscription.change_dropped')).to.have.length(0);
    expect((await get(`${base}/cancel-sessions/${early.id}`, token)).body.status, 'not counted as saved').to.equal(
      'open',
    );
    const refusal = (await timeline()).find((l) => l.kind === 'refusal');
    expect(refusal?.type, 'the refusal is on the timeline').to.equal('accept_save');
    expect(refusal?.by).to.deep.include({ kind: 'account_token' });
  });

  it('a change meets a change waiting for approval: 409 change_pending naming its deadline; withdrawn, then it goes', async () => {
    const first = await change({ plan: 'scale' });
    expect(first.status, first.text).to.equal(200);
    const second = await change({ plan: 'lite' });
    expectRefused(second, 'change_pending');
    expect(second.body.pending).to.deep.include({ plan: 'scale', at: first.body.pending_change.expires_at });
    expect(second.body.next[0]).to.deep.include({ method: 'POST', path: `${base}${subPath}/change/withdraw` });
    const withdrawn = await intent('/change/withdraw');
    expect(withdrawn.status, withdrawn.text).to.equal(200);
    expect(withdrawn.body).to.deep.include({ pending_change: null, approve_url: null });
    const [dropped] = await events('subscription.change_dropped');
    expect(dropped.data).to.deep.include({ reason: 'withdrawn' });
    expect((await change({ plan: 'lite' })).status).to.equal(200);
  });

  it('a change meets a scheduled one: 409 change_scheduled; with replace it waits for approval, then replaces it', async () => {
    await scheduleLite();
    const plain = await change({ plan: 'scale' });
    expectRefused(plain, 'change_scheduled');
    expect(plain.body.error).to.include('"replace": true');
    const replacing = await change({ plan: 'scale', replace: true });
    expect(replacing.status, replacing.text).to.equal(200);
    expect((await sub()).scheduled_change, 'stands until the buyer approves the replacement').to.deep.include({
      plan: 'lite',
    });
    await approveAll(replacing.body.approve_url);
    await eventually(async () => ((await sub()).plan === 'scale' ? true : undefined));
    expect((await sub()).scheduled_change).to.equal(null);
    const [dropped] = await events('subscription.change_dropped');
    expect(dropped.data).to.deep.include({ reason: 'replaced' });
    expect(dropped.data.change).to.deep.include({ plan: 'lite', status: 'scheduled' });
  });

  it('withdrawing a scheduled change moves the provider back (the buyer approves); until then it stands', async () => {
    const scheduled = await scheduleLite();
    const res = await intent('/change/withdraw', { return_url: 'https://shop.example/account' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.approve_url).to.be.a('string');
    expect(res.body.scheduled_change).to.deep.include({ plan: 'lite' });
    expect(res.body.pending_change).to.deep.include({ kind: 'withdrawal', status: 'awaiting_approval', plan: 'pro' });
    await approveAll(res.body.approve_url);
    await eventually(async () => ((await sub()).scheduled_change === null ? true : undefined));
    expect(await sub()).to.deep.include({ plan: 'pro', pending_change: null });
    expect(testEnv().paypal.subscription(scheduled.id)!.plan_id).to.not.equal(scheduled.scheduled_change.id);
    expect((await events('subscription.change_dropped'))[0].data.reason).to.equal('withdrawn');
  });

  it('a pause meets a scheduled change: the pause goes, the change stays and applies at the first renewal after it', async () => {
    const scheduled = await scheduleLite();
    const paused = await intent('/pause', { months: 1 });
    expect(paused.status, paused.text).to.equal(200);
    expect(paused.body.scheduled_change).to.deep.include({ plan: 'lite' });
    expect((await intent('/resume')).status).to.equal(200);
    await testEnv().paypal.renew(scheduled.id);
    await eventually(async () => ((await sub()).plan === 'lite' ? true : undefined));
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('lite');
  });

  it('a cancellation now meets a pause and a scheduled change: cancelled, the change dropped (evented), no resume later', async () => {
    await scheduleLite();
    expect((await intent('/pause', { months: 1 })).status).to.equal(200);
    const cancelled = await intent('/cancel', { reason: 'moving on' });
    expect(cancelled.status, cancelled.text).to.equal(200);
    expect(cancelled.body).to.deep.include({ status: 'cancelled', pending_change: null, scheduled_change: null });
    expect((await events('subscription.change_dropped'))[0].data.reason).to.equal('cancelled');
    expect((await actorState(app, 'ada')).nextTimer, 'nothing left to wait for').to.equal(null);
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('free');
  });

  it('cancel at the period end: billing stops now, the plan stays; changes are refused; resume undoes it; the date cancels', async () => {
    await scheduleLite();
    const res = await intent('/cancel', { at: 'period_end' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.cancel_at).to.equal(res.body.renews_at);
    // The scheduled change stays (PayPal bills Lite from the renewal if the cancellation is undone).
    expect(res.body).to.deep.include({ status: 'active' });
    expect(res.body.scheduled_change).to.deep.include({ plan: 'lite' });
    expect(await events('subscription.change_dropped')).to.have.length(0);
    expect(await events('subscription.cancel_scheduled')).to.have.length(1);
    expect(testEnv().paypal.subscription(res.body.id)!.status, 'nothing more can be charged').to.equal('SUSPENDED');
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('pro');
    expectRefused(await change({ plan: 'scale' }), 'cancel_scheduled');
    expectRefused(await intent('/pause', { months: 2 }), 'cancel_scheduled');

    const undone = await intent('/resume');
    expect(undone.status, undone.text).to.equal(200);
    expect(undone.body).to.deep.include({ cancel_at: null, renews_at: res.body.renews_at });
    expect(undone.body.scheduled_change, 'the downgrade applies at the renewal again').to.deep.include({
      plan: 'lite',
    });
    expect(testEnv().paypal.subscription(res.body.id)!.status).to.equal('ACTIVE');
    expect(await events('subscription.cancel_undone')).to.have.length(1);

    const again = await intent('/cancel', { at: 'period_end' });
    expect(again.status).to.equal(200);
    await advanceClock(app, new Date(Date.parse(again.body.cancel_at) + HOUR));
    expect(await sub()).to.deep.include({ status: 'cancelled', scheduled_change: null });
    expect((await events('subscription.change_dropped')).map((e) => e.data.reason)).to.deep.equal(['cancelled']);
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('free');
    expect(testEnv().paypal.subscription(res.body.id)!.status).to.equal('CANCELLED');
  });

  it('an intent right after the provider ended a waiting change is decided on the record, not a snapshot behind it', async () => {
    // The approval is recorded in PostgreSQL by the notification or return that reports it, and reaches the actor
    // through the outbox a moment later. Here the record moves and the actor is never told: a cancellation must not
    // be refused for a change the record no longer holds as waiting (GET already shows it scheduled).
    const down = await change({ plan: 'lite' });
    expect(down.status, down.text).to.equal(200);
    expect((await actorState(app, 'ada')).snapshot?.subscription?.pending).to.not.equal(null);
    await sql(
      testEnv().deps.orm.em.fork(),
      `update subscriptions
          set scheduled_change = pending_change || jsonb_build_object('scheduledAt', now()), pending_change = null
        where app_id = $1`,
      [app.id],
    );
    expect((await sub()).scheduled_change).to.deep.include({ plan: 'lite', status: 'scheduled' });
    const res = await intent('/cancel', { at: 'period_end' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.cancel_at).to.equal(res.body.renews_at);
    expect((await actorState(app, 'ada')).snapshot?.subscription?.pending ?? null).to.equal(null);
    // A state only the actor changes is still refused at once, on its snapshot.
    expect((await intent('/pause', { months: 1 })).body.reason).to.equal('cancel_scheduled');
  });

  it('a change to the free plan is a cancellation at the renewal, then the free plan (quoted as such)', async () => {
    const quote = await intent('/change/quote', { plan: 'free' });
    expect(quote.status, quote.text).to.equal(200);
    expect(quote.body).to.deep.include({ cancels_at_renewal: true, price: 0, amount_due_now: 0, effective: 'renewal' });
    const res = await change({ plan: 'free' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.include({ approve_url: null, effective: 'renewal' });
    expect(res.body.cancel_at).to.equal(res.body.renews_at);
    expect(res.body.effective_at).to.equal(res.body.renews_at);
  });

  it('a change meets a failed payment: 409 past_due naming the retry', async () => {
    await sql(
      testEnv().deps.orm.em.fork(),
      `update subscriptions set status = 'past_due', past_due_since = now(), payment_failures = 1,
         grace_ends_at = now() + interval '14 days', dunning_after = 'cancel' where app_id = $1`,
      [app.id],
    );
    await testEnv()
      .deps.temporal.client.workflow.getHandle(accountWorkflowId(app.id, 'ada'))
      .signal(accountDef.signals.fact, { kind: 'account_changed' });
    await eventually(async () =>
      (await actorState(app, 'ada')).snapshot?.subscription?.status === 'past_due' ? true : undefined,
    );
    const res = await change({ plan: 'scale' });
    expectRefused(res, 'past_due');
    expect(res.body.next[0].path).to.equal(`${base}${subPath}/retry-payment`);
    expectRefused(await intent('/pause', { months: 1 }), 'past_due');
  });

  it("an incentive's end meets a save offer's incentive: replaced (evented), the new one ends on its own date", async () => {
    const clockNow = new Date((await get(`${base}/test-clock`, app.api_key)).body.now);
    const promoEnds = new Date(clockNow.getTime() + 10 * DAY).toISOString();
    await patch(`${base}/namespaces/ada`, app.api_key, { incentive: 'promo', incentive_expires_at: promoEnds });
    await post(`${base}/cancel-flows`, app.api_key, {
      id: 'default',
      status: 'active',
      steps: [
        {
          id: 'offer',
          type: 'offer',
          title: 'A deal?',
          decline_label: 'No',
          offers: [{ kind: 'incentive', incentive: 'partner_deal', months: 2 }],
        },
        { id: 'confirm', type: 'confirm', title: 'Sure?' },
      ],
    });
    const token = (await post(`${base}/namespaces/ada/token`, app.api_key, {})).body.token;
    const session = (await post(`${base}/cancel-sessions`, token, {})).body;
    const saved = await post(`${base}/cancel-sessions/${session.id}/accept`, token, {});
    expect(saved.status, saved.text).to.equal(200);
    const applied = await events('account.incentive_applied');
    expect(applied[0].data.previous).to.deep.equal({ incentive: 'promo' });
    await advanceClock(app, new Date(Date.parse(promoEnds) + DAY));
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.incentive, "promo's date does nothing now").to.equal(
      'partner_deal',
    );
    const ends = (await get(`${base}/namespaces/ada`, app.api_key)).body.incentive_expires_at;
    await advanceClock(app, new Date(Date.parse(ends) + HOUR));
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.incentive).to.equal(null);
  });

  it('intents at once are taken one at a time: exactly one goes, the others are 409s naming it', async () => {
    const results = await Promise.all([
      change({ plan: 'scale' }),
      intent('/pause', { months: 1 }),
      intent('/cancel', { at: 'period_end' }),
    ]);
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, 409, 409]);
    const s = await sub();
    const winner = results.findIndex((r) => r.status === 200);
    if (winner === 0) expect(s.pending_change).to.deep.include({ plan: 'scale' });
    if (winner === 1) expect(s.status).to.equal('paused');
    if (winner === 2) expect(s.cancel_at).to.be.a('string');
    const lines = await timeline();
    expect(
      lines.filter((l) => l.kind === 'intent'),
      'the one that went',
    ).to.have.length(1);
    expect(
      lines.filter((l) => l.kind === 'refusal'),
      'and the two refused, with why',
    ).to.have.length(2);
  });

  it('quote before change: what is charged now, the new price and from when; the provider is asked for exactly that', async () => {
    const quote = await intent('/change/quote', { plan: 'scale' });
    expect(quote.status, quote.text).to.equal(200);
    expect(quote.body).to.deep.include({ direction: 'upgrade', policy: 'prorate_now', effective: 'now', price: 99 });
    expect(quote.body.amount_due_now).to.be.greaterThan(0);
    expect(quote.body.current).to.deep.include({ plan: 'pro', price: 19 });
    expect(quote.body.plan).to.deep.equal({ id: 'scale', name: 'Scale' });
    // Nothing was asked of the provider, nothing changed.
    expect((await sub()).pending_change).to.equal(null);
    await new Promise((r) => setTimeout(r, 1100)); // a second later the prorated amount would differ by a few cents
    const res = await change({ plan: 'scale', proration_date: quote.body.proration_date });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.proration.amount).to.equal(quote.body.amount_due_now);
    const order = testEnv().paypal.order(new URL(res.body.approve_url).searchParams.get('token')!);
    expect(Number(order?.purchase_units[0].amount.value), 'the provider is asked for the quote').to.equal(
      quote.body.amount_due_now,
    );
    // The same refusals as the change; a stale proration_date is a 400.
    expectRefused(await intent('/change/quote', { plan: 'lite' }), 'change_pending');
    const stale = await change({ plan: 'lite', proration_date: new Date(Date.now() - 2 * HOUR).toISOString() });
    expect(stale.status).to.equal(409); // the state refusal comes first
    const token = (await post(`${base}/namespaces/ada/token`, app.api_key, {})).body.token;
    expect(
      (await post(`${base}${subPath}/change/quote`, token, { plan: 'lite' })).status,
      'the account token may quote',
    ).to.equal(409);
  });

  it('keeps its history short: continues as new, carrying its state, and goes on taking intents', async () => {
    // The actor of another account, started by hand with a low history limit before its first intent.
    const client = testEnv().deps.temporal.client.workflow;
    await post(`${base}/namespaces`, app.api_key, { id: 'bea', plan: 'free' });
    await purchase(app, 'bea');
    // The purchase's fact reaches the actor through the outbox: it starts a moment after the purchase answers.
    const first = await eventually(
      async () =>
        (
          await client
            .getHandle(accountWorkflowId(app.id, 'bea'))
            .describe()
            .catch(() => null)
        )?.runId,
      30_000,
    );
    await client.getHandle(accountWorkflowId(app.id, 'bea')).terminate('test: restart with a low history limit');
    await client.start('accountWorkflow', {
      taskQueue: testEnv().deps.temporal.taskQueue,
      workflowId: accountWorkflowId(app.id, 'bea'),
      args: [{ appId: app.id, accountId: 'bea', historyLimit: 40 }],
    });
    const beaPath = `${base}/namespaces/bea/subscription`;
    for (let i = 0; i < 4; i++) {
      expect((await post(`${beaPath}/pause`, app.api_key, { months: 1 })).status).to.equal(200);
      expect((await post(`${beaPath}/resume`, app.api_key)).status).to.equal(200);
    }
    const handle = client.getHandle(accountWorkflowId(app.id, 'bea'));
    await handle.describe();
    // Visibility lags behind the history: wait until it lists the runs.
    const runs = await eventually(async () => {
      const seen = new Set<string>();
      for await (const w of client.list({ query: `WorkflowId = "${accountWorkflowId(app.id, 'bea')}"` }))
        seen.add(w.runId);
      return seen.size > 2 && seen.has(first) ? seen : undefined;
    }, 30_000);
    expect(runs.size, 'more than one run: it continued as new').to.be.greaterThan(2);
    const state = await handle.query(accountDef.queries.state);
    expect(state.snapshot?.subscription).to.deep.include({ status: 'active' });
    expect(state.nextTimer?.kind).to.equal('renewal');
    expect((await events('subscription.resumed')).length).to.equal(4);
  });

  it('the timeline: who asked, what arrived, the actor, what was sent; newest first, in pages', async () => {
    await change({ plan: 'scale' });
    await intent('/change/withdraw');
    await intent('/pause', { months: 2 });
    const all = await timeline();
    const order = all.map((l) => `${l.kind}:${l.type}`);
    const at = (line: string) => order.indexOf(line);
    // Newest first: each intent after its outcome, the later intents before the earlier ones.
    for (const line of ['outcome:subscription.paused', 'intent:pause', 'outcome:subscription.change_dropped'])
      expect(at(line), line).to.be.at.least(0);
    expect(at('outcome:subscription.paused')).to.be.lessThan(at('intent:pause'));
    expect(at('intent:pause')).to.be.lessThan(at('outcome:subscription.change_dropped'));
    expect(at('outcome:subscription.change_dropped')).to.be.lessThan(at('intent:withdraw_change'));
    expect(at('intent:withdraw_change')).to.be.lessThan(at('intent:change'));
    expect(all.find((l) => l.kind === 'intent')!.by).to.deep.include({ kind: 'secret_key' });
    const page1 = (await get(`${base}/namespaces/ada/timeline?limit=2`, app.api_key)).body;
    expect(page1.data).to.have.length(2);
    const page2 = (await get(`${base}/namespaces/ada/timeline?limit=2&cursor=${page1.next_cursor}`, app.api_key)).body;
    expect(Number(page2.data[0].id)).to.be.lessThan(Number(page1.data[1].id));
    expect(
      (await get(`${base}/namespaces/ada/timeline?kind=intent`, app.api_key)).body.data.every(
        (l: { kind: string }) => l.kind === 'intent',
      ),
    ).to.equal(true);
    expect((await get(`${base}/namespaces/nobody/timeline`, app.api_key)).status).to.equal(404);
    expect((await get(`${base}/namespaces/ada/timeline?cursor=nope`, app.api_key)).status).to.equal(400);
  });
});
