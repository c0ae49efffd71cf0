import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { pauseDef, pauseWorkflowId, type PauseState } from '../../workflows/shared.js';
import { billingApp, purchase, type TestApp } from '../helpers/factories.js';
import { call, del, get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

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

  it('pause: billing suspended, free plan, a findable workflow; resumes on its own at resume_at', async () => {
    await purchase(app, 'ada');
    const paused = await post(`${subPath()}/pause`, app.api_key, { months: 1, reason: 'travelling' });
    expect(paused.status, paused.text).to.equal(200);
    expect(paused.body.status).to.equal('paused');
    expect(paused.body.pause).to.deep.include({ restore_plan: 'pro', reason: 'travelling' });
    expect(await providerStatus()).to.equal('SUSPENDED');
    expect((await get(`${base}/namespaces/ada/plan`, app.api_key)).body.plan.id).to.equal('free');
    const handle = testEnv().deps.temporal.client.workflow.getHandle(pauseWorkflowId(app.id, 'ada', 1));
    const desc = await eventually(() => handle.describe().catch(() => undefined));
    const sa = Object.fromEntries(desc.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value]));
    expect(sa).to.deep.include({ AppId: app.id, AccountId: 'ada', BillingStatus: 'paused' });
    expect((sa.ResumeAt as Date).toISOString()).to.equal(paused.body.pause.resume_at);
    expect(await desc.staticSummary()).to.match(/^Pause: ada until \d{4}-\d{2}-\d{2}, then back to pro$/);
    // A test month is 2 s, so on a loaded machine the timer may already have fired by the time of the query.
    const state = await handle.query(pauseDef.queries.state);
    expect(state.restorePlan).to.equal('pro');
    expect(['paused', 'resuming', 'resumed']).to.include(state.phase);

    const result = (await handle.result()) as PauseState;
    expect(result).to.deep.include({ phase: 'resumed', resumedBy: 'timer' });
    expect(Date.now()).to.be.at.least(Date.parse(paused.body.pause.resume_at));
    expect((await get(subPath(), app.api_key)).body).to.deep.include({ status: 'active', pause: null });
    expect(await providerStatus()).to.equal('ACTIVE');
    expect((await get(`${base}/namespaces/ada/plan`, app.api_key)).body.plan.id).to.equal('pro');
    const types = await eventTypes();
    expect(types.filter((t) => t === 'subscription.paused')).to.have.length(1);
    expect(types.filter((t) => t === 'subscription.resumed')).to.have.length(1);
    const [resumed] = (await get(`${base}/events?type=subscription.resumed`, app.api_key)).body.data;
    expect(resumed.data.previous).to.deep.equal({ plan: 'free' });
  });

  it('resume early: once, and the workflow ends without resuming again', async () => {
    await purchase(app, 'ada');
    await post(`${subPath()}/pause`, app.api_key, { months: 12 });
    const res = await post(`${subPath()}/resume`, app.api_key);
    expect(res.body).to.deep.include({ status: 'active', pause: null });
    const result = (await testEnv()
      .deps.temporal.client.workflow.getHandle(pauseWorkflowId(app.id, 'ada', 1))
      .result()) as PauseState;
    expect(result.resumedBy).to.equal('request');
    expect((await post(`${subPath()}/resume`, app.api_key)).status).to.equal(409);
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

  it('/pauses/due and /pauses/resume (admin) agree with the workflow: resumed once', async () => {
    await purchase(app, 'ada');
    const admin = testEnv().adminKey;
    await post('/pauses/apply', admin, { app_id: app.id, account_id: 'ada', months: 12, reason: 'from a cancel flow' });
    expect((await get(subPath(), app.api_key)).body.status).to.equal('paused');
    const due = () =>
      get('/pauses/due?limit=1000', admin).then((r) =>
        r.body.data.filter((d: { app_id: string }) => d.app_id === app.id),
      );
    expect(await due()).to.deep.equal([]);
    await sql(
      testEnv().deps.orm.em.fork(),
      `update subscriptions set resume_at = now() - interval '1 minute' where app_id = $1`,
      [app.id],
    );
    expect((await due()).map((d: { account_id: string }) => d.account_id)).to.deep.equal(['ada']);
    expect((await post('/pauses/resume', admin, { app_id: app.id, account_id: 'ada' })).body.status).to.equal('active');
    expect((await post('/pauses/resume', admin, { app_id: app.id, account_id: 'ada' })).status).to.equal(409);
    const result = (await testEnv()
      .deps.temporal.client.workflow.getHandle(pauseWorkflowId(app.id, 'ada', 1))
      .result()) as PauseState;
    expect(result.resumedBy).to.equal('request');
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
