import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { billingApp, purchase, type TestApp } from '../helpers/factories.js';
import { call, del, get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';
import { actorHandle, actorState, advanceClock, DAY, searchAttributes } from '../helpers/actor.js';

describe('subscriptions and pauses', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await billingApp({ accounts: [{ id: 'ada', plan: 'free' }] }));
  });
  const subPath = (a = 'ada') => `${base}/namespaces/${a}/subscription`;
  const providerStatus = async () => testEnv().paypal.subscription((await get(subPath(), app.api_key)).body.id)!.status;
  const eventTypes = async () =>
    (await get(`${base}/events?limit=100`, app.api_key)).body.data.map((e: { type: string }) => e.type) as string[];

  it('read: 404 before a purchase; then offer, plan, price and renewal, for the secret key and the account token', async () => {
    expect((await get(subPath(), app.api_key)).status).to.equal(404);
    await purchase(app, 'ada');
    const res = await get(subPath(), app.api_key);
    expect(res.body).to.deep.include({
      status: 'active',
      offer: 'launch',
      plan: 'pro',
      interval: 'month',
      price: 19,
      currency: 'USD',
      pause: null,
    });
    expect(res.body.id).to.match(/^I-/);
    expect(Date.parse(res.body.renews_at)).to.be.greaterThan(Date.now());
    const token = (await post(`${base}/namespaces/ada/token`, app.api_key, {})).body.token;
    expect((await get(subPath(), token)).body.plan).to.equal('pro');
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.subscription.status).to.equal('active');
  });

  it("pause: billing suspended, free plan, the account's actor waits; resumes on its own at resume_at (app clock)", async () => {
    await purchase(app, 'ada');
    const paused = await post(`${subPath()}/pause`, app.api_key, { months: 1, reason: 'travelling' });
    expect(paused.status, paused.text).to.equal(200);
    expect(paused.body.status).to.equal('paused');
    expect(paused.body.pause).to.deep.include({
      restore_plan: 'pro',
      reason: 'travelling',
      workflow_id: `account/${app.id}/ada`,
    });
    expect(await providerStatus()).to.equal('SUSPENDED');
    expect((await get(`${base}/namespaces/ada/plan`, app.api_key)).body.plan.id).to.equal('free');
    const resumeAt = paused.body.pause.resume_at;
    const desc = await eventually(async () => {
      const d = await actorHandle(app, 'ada').describe();
      return searchAttributes(d).BillingStatus === 'paused' ? d : undefined;
    });
    const sa = searchAttributes(desc);
    expect(sa).to.deep.include({ AppId: app.id, AccountId: 'ada', BillingStatus: 'paused' });
    expect((sa.ResumeAt as Date).toISOString()).to.equal(resumeAt);
    expect(await desc.staticSummary()).to.equal('Account ada: billing over time');
    const state = await actorState(app, 'ada');
    expect(state.nextTimer).to.deep.equal({ kind: 'pause_end', at: resumeAt });

    // A month later on the app's clock: resumed by the actor, once.
    await advanceClock(app, { ms: 10 * DAY });
    expect((await get(subPath(), app.api_key)).body.status, 'not before resume_at').to.equal('paused');
    await advanceClock(app, new Date(Date.parse(resumeAt) + 60_000));
    expect((await get(subPath(), app.api_key)).body).to.deep.include({ status: 'active', pause: null });
    expect(await providerStatus()).to.equal('ACTIVE');
    expect((await get(`${base}/namespaces/ada/plan`, app.api_key)).body.plan.id).to.equal('pro');
    const types = await eventTypes();
    expect(types.filter((t) => t === 'subscription.paused')).to.have.length(1);
    expect(types.filter((t) => t === 'subscription.resumed')).to.have.length(1);
    const [resumed] = (await get(`${base}/events?type=subscription.resumed`, app.api_key)).body.data;
    expect(resumed.data.previous).to.deep.equal({ plan: 'free' });
    expect(resumed.data.resumed_by).to.equal('timer');
    const lines = (await get(`${base}/namespaces/ada/timeline`, app.api_key)).body.data as {
      kind: string;
      type: string;
      workflow: { id: string } | null;
    }[];
    expect(lines.map((l) => `${l.kind}:${l.type}`)).to.include.members([
      'intent:pause',
      'outcome:subscription.paused',
      'timer:pause_end',
      'outcome:subscription.resumed',
    ]);
    expect(lines.find((l) => l.type === 'pause_end')!.workflow!.id).to.equal(`account/${app.id}/ada`);
  });

  it('resume early: once; the actor no longer waits for the pause end', async () => {
    await purchase(app, 'ada');
    await post(`${subPath()}/pause`, app.api_key, { months: 12 });
    const res = await post(`${subPath()}/resume`, app.api_key);
    expect(res.body).to.deep.include({ status: 'active', pause: null });
    expect((await actorState(app, 'ada')).nextTimer?.kind).to.equal('renewal');
    const again = await post(`${subPath()}/resume`, app.api_key);
    expect(again.status).to.equal(409);
    expect(again.body.reason).to.equal('not_paused');
    expect((await eventTypes()).filter((t) => t === 'subscription.resumed')).to.have.length(1);
    expect((await get(`${base}/namespaces/ada/plan`, app.api_key)).body.plan.id).to.equal('pro');
  });

  it('the plan a paused subscription resumes to is not deleted (409 naming the accounts)', async () => {
    await purchase(app, 'ada');
    expect((await post(`${subPath()}/pause`, app.api_key, { months: 1 })).status).to.equal(200);
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('free');
    expect((await post(`${base}/offers/launch/archive`, app.api_key)).status).to.equal(200);
    const res = await del(`${base}/plans/pro`, app.api_key);
    expect(res.status, res.text).to.equal(409);
    expect(res.body.paused).to.deep.equal(['ada']);
    expect(res.body.error).to.match(/^Plan pro is where paused subscription\(s\) of account\(s\) ada resume/);
    expect((await post(`${subPath()}/resume`, app.api_key, {})).status).to.equal(200);
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('pro');
  });

  it("/pauses/due and /pauses/resume (admin) agree with the account's actor: resumed once", async () => {
    await purchase(app, 'ada');
    const admin = testEnv().adminKey;
    await post('/pauses/apply', admin, { app_id: app.id, account_id: 'ada', months: 12, reason: 'from a cancel flow' });
    expect((await get(subPath(), app.api_key)).body.status).to.equal('paused');
    const due = () =>
      get('/pauses/due?limit=1000', admin).then((r) =>
        r.body.data.filter((d: { app_id: string }) => d.app_id === app.id),
      );
    expect(await due()).to.deep.equal([]);
    // An external scheduler that sees a due pause (its resume_at passed on the app's clock) resumes it.
    await sql(
      testEnv().deps.orm.em.fork(),
      `update subscriptions set resume_at = now() - interval '1 minute' where app_id = $1`,
      [app.id],
    );
    expect((await due()).map((d: { account_id: string }) => d.account_id)).to.deep.equal(['ada']);
    expect((await post('/pauses/resume', admin, { app_id: app.id, account_id: 'ada' })).body.status).to.equal('active');
    expect((await post('/pauses/resume', admin, { app_id: app.id, account_id: 'ada' })).status).to.equal(409);
    expect((await eventTypes()).filter((t) => t === 'subscription.resumed')).to.have.length(1);
    expect(
      (await post('/pauses/resume', app.api_key, { app_id: app.id, account_id: 'ada' })).status,
      'admin only',
    ).to.equal(401);
  });

  it('disconnecting the provider leaves the subscription billing; billing actions then need it (409)', async () => {
    await purchase(app, 'ada');
    const before = await get(subPath(), app.api_key);
    expect((await call('DELETE', `${base}/payments`, { token: app.api_key })).status).to.equal(200);
    expect(testEnv().paypal.subscription(before.body.id)!.status, 'nothing cancelled at the provider').to.equal(
      'ACTIVE',
    );
    expect((await get(subPath(), app.api_key)).body.status).to.equal('active');
    expect((await get(`${base}/namespaces/ada/plan`, app.api_key)).body.plan.id).to.equal('pro');
    const pause = await post(`${subPath()}/pause`, app.api_key, { months: 1 });
    expect(pause.status).to.equal(409);
    expect(pause.body.error).to.equal('payment provider not connected');
  });

  it('cancel: cancelled at the provider, account on the free plan, once; months outside 1..12 is a 400', async () => {
    await purchase(app, 'ada');
    expect((await post(`${subPath()}/pause`, app.api_key, { months: 13 })).body.error).to.equal(
      'months: must be between 1 and 12',
    );
    const res = await post(`${subPath()}/cancel`, app.api_key, { reason: 'too expensive' });
    expect(res.body.status).to.equal('cancelled');
    expect(await providerStatus()).to.equal('CANCELLED');
    expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('free');
    const [ev] = (await get(`${base}/events?type=subscription.cancelled`, app.api_key)).body.data;
    expect(ev.data.previous).to.deep.equal({ plan: 'pro' });
    expect(ev.data.object.subscription.status).to.equal('cancelled');
    expect((await post(`${subPath()}/cancel`, app.api_key, {})).status).to.equal(409);
    expect((await post(`${subPath()}/pause`, app.api_key, { months: 1 })).status).to.equal(409);
  });
});
