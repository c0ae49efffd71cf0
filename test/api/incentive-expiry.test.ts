import { expect } from 'chai';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { eventsOf } from '../helpers/events.js';
import { del, get, patch, post } from '../helpers/http.js';
import { actorHandle, actorState, advanceClock, clockNow, HOUR, searchAttributes } from '../helpers/actor.js';
import { eventually } from '../helpers/wait.js';

describe("incentive expiry (the account actor's date)", function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;

  beforeEach(async () => {
    ({ app, base } = await seededApp());
    await post(`${base}/incentives`, app.api_key, {
      id: 'promo',
      name: 'Promo',
      entitlements: [{ id: 'api_calls', max: 9999 }],
    });
  });
  const inHours = async (h: number) => new Date((await clockNow(app)).getTime() + h * HOUR).toISOString();

  it('removes the incentive when its expiry passes on the app clock, and is easy to find and read in Temporal', async () => {
    const expiresAt = await inHours(2);
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: expiresAt });
    const state = await eventually(async () => {
      const s = await actorState(app, 'a1');
      return s.nextTimer?.kind === 'incentive_end' ? s : undefined;
    });
    expect(state.nextTimer!.at).to.equal(expiresAt);
    const desc = await actorHandle(app, 'a1').describe();
    expect(desc.workflowId).to.equal(`account/${app.id}/a1`);
    expect(desc.type).to.equal('accountWorkflow');
    expect(searchAttributes(desc)).to.deep.include({ AppId: app.id, AccountId: 'a1', IncentiveId: 'promo' });
    expect(await desc.staticSummary()).to.equal('Account a1: billing over time');
    expect((await get(`${base}/namespaces/a1/plan`, app.api_key)).body.incentive).to.equal('promo');

    await advanceClock(app, { ms: HOUR });
    expect((await get(`${base}/namespaces/a1`, app.api_key)).body.incentive, 'not before its time').to.equal('promo');
    await advanceClock(app, new Date(Date.parse(expiresAt) + 60_000));
    expect((await get(`${base}/namespaces/a1`, app.api_key)).body).to.deep.include({
      incentive: null,
      incentive_expires_at: null,
    });
    const [removed] = await eventsOf(app.id, 'account.incentive_removed');
    expect(removed.data.previous).to.deep.equal({ incentive: 'promo' });
    // Nothing over time is left: the actor ends.
    await actorHandle(app, 'a1').result();
    const timeline = (await get(`${base}/namespaces/a1/timeline`, app.api_key)).body.data;
    expect(timeline.map((l: { kind: string; type: string }) => `${l.kind}:${l.type}`)).to.include.members([
      'timer:incentive_end',
      'outcome:account.incentive_removed',
    ]);
  });

  it('a new expiry re-targets the same actor run', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: await inHours(48) });
    const first = await eventually(() => actorHandle(app, 'a1').describe());
    const sooner = await inHours(1);
    await patch(`${base}/namespaces/a1`, app.api_key, { incentive_expires_at: sooner });
    await eventually(async () => ((await actorState(app, 'a1')).nextTimer?.at === sooner ? true : undefined));
    expect((await actorHandle(app, 'a1').describe()).runId).to.equal(first.runId);
    await advanceClock(app, new Date(Date.parse(sooner) + 60_000));
    expect((await get(`${base}/namespaces/a1`, app.api_key)).body.incentive).to.equal(null);
  });

  it('removing the incentive early ends the actor without touching the account again', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: await inHours(48) });
    await eventually(() => actorHandle(app, 'a1').describe());
    await del(`${base}/namespaces/a1/incentive`, app.api_key);
    await actorHandle(app, 'a1').result();
    expect(await eventsOf(app.id, 'account.incentive_removed')).to.have.length(1);
  });

  it('deleting the account ends the actor', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: await inHours(48) });
    await eventually(() => actorHandle(app, 'a1').describe());
    await del(`${base}/namespaces/a1`, app.api_key);
    const ended = await actorHandle(app, 'a1').result();
    expect(ended.snapshot?.account).to.equal(null);
  });

  it('a later incentive with an expiry starts a new actor run after the previous one finished', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: await inHours(1) });
    const firstRun = (await eventually(() => actorHandle(app, 'a1').describe())).runId;
    await advanceClock(app, { ms: 2 * HOUR });
    await actorHandle(app, 'a1').result();
    await patch(`${base}/namespaces/a1`, app.api_key, { incentive: 'promo', incentive_expires_at: await inHours(1) });
    const second = await eventually(async () => {
      const d = await actorHandle(app, 'a1').describe();
      return d.runId !== firstRun ? d : undefined;
    });
    expect(second.status.name).to.equal('RUNNING');
    await advanceClock(app, { ms: 2 * HOUR });
    expect((await get(`${base}/namespaces/a1`, app.api_key)).body.incentive).to.equal(null);
  });
});
