// The records a Temporal workflow acts on present its id (`workflow_id`, null when none was started), and the
// workflow they name exists in Temporal: the console links to it only then
// (docs/decisions/0374-workflow-ids-are-presented-by-the-api-on-the-records.md).
import { expect } from 'chai';
import { WorkflowNotFoundError } from '@temporalio/client';
import { billingApp, createAccount, seededApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

/** The workflow's type once Temporal knows it (the outbox starts it right after the commit). */
const exists = (id: string) =>
  eventually(async () => (await testEnv().deps.temporal.client.workflow.getHandle(id).describe()).type);

async function missing(id: string): Promise<boolean> {
  try {
    await testEnv().deps.temporal.client.workflow.getHandle(id).describe();
    return false;
  } catch (err) {
    return err instanceof WorkflowNotFoundError;
  }
}

describe("workflow ids on records (checkout, the account's actor for pauses, changes and incentives, reservation)", function () {
  this.timeout(120_000);

  it("an account names its actor as the incentive's workflow only while a timed incentive is on it", async () => {
    const { app, base } = await seededApp();
    await post(`${base}/incentives`, app.api_key, { id: 'promo', name: 'Promo', entitlements: [] });
    const untimed = await createAccount(app, { id: 'plain', plan: 'pro', incentive: 'promo' });
    expect(untimed.incentive_workflow_id).to.equal(null);
    expect(await missing(`incentive-expiry/${app.id}/plain`)).to.equal(true);
    const none = await createAccount(app, { id: 'none', plan: 'pro' });
    expect(none.incentive_workflow_id).to.equal(null);

    const ends = new Date(Date.now() + 86_400_000).toISOString();
    const timed = await createAccount(app, {
      id: 'timed',
      plan: 'pro',
      incentive: 'promo',
      incentive_expires_at: ends,
    });
    expect(timed.incentive_workflow_id).to.equal(`account/${app.id}/timed`);
    expect(await exists(timed.incentive_workflow_id)).to.equal('accountWorkflow');
    const read = await get(`${base}/namespaces/timed`, app.api_key);
    expect(read.body.incentive_workflow_id).to.equal(timed.incentive_workflow_id);
    const list = await get(`${base}/namespaces?per_page=10`, app.api_key);
    const ids = Object.fromEntries(list.body.data.map((a: any) => [a.id, a.incentive_workflow_id]));
    expect(ids).to.deep.equal({ plain: null, none: null, timed: timed.incentive_workflow_id });
  });

  it("a checkout names its workflow; a plan change and a pause name the account's actor; all exist", async () => {
    const { app, base } = await billingApp({ accounts: [{ id: 'ada', plan: 'free' }], purchases: ['ada'] });
    const checkouts = await get(`${base}/checkouts?limit=5`, app.api_key);
    const [chk] = checkouts.body.data;
    expect(chk.workflow_id).to.equal(`checkout/${chk.id}`);
    expect(await exists(chk.workflow_id)).to.equal('checkoutWorkflow');
    expect((await get(`${base}/checkouts/${chk.id}`, app.api_key)).body.workflow_id).to.equal(chk.workflow_id);

    const before = (await get(`${base}/namespaces/ada/subscription`, app.api_key)).body;
    expect(before.pause).to.equal(null);
    expect(before.pending_change).to.equal(null);

    const change = await post(`${base}/namespaces/ada/subscription/change`, app.api_key, {
      plan: 'scale',
      return_url: 'https://shop.example/account',
    });
    expect(change.status, change.text).to.equal(200);
    // The account's actor owns the change, the pause and the subscription over time.
    const wid = change.body.pending_change.workflow_id;
    expect(wid).to.equal(`account/${app.id}/ada`);
    expect(change.body.workflow_id).to.equal(wid);
    expect(await exists(wid)).to.equal('accountWorkflow');
    const refused = await post(`${base}/namespaces/ada/subscription/pause`, app.api_key, { months: 1 });
    expect(refused.status, 'no pause while a change waits for approval').to.equal(409);
    expect(refused.body).to.deep.include({ reason: 'change_pending' });
    expect(refused.body.next[0]).to.deep.include({
      method: 'POST',
      path: `${base}/namespaces/ada/subscription/change/withdraw`,
    });
    expect((await post(refused.body.next[0].path, app.api_key, {})).status).to.equal(200);

    const paused = await post(`${base}/namespaces/ada/subscription/pause`, app.api_key, { months: 1 });
    expect(paused.status, paused.text).to.equal(200);
    expect(paused.body.pause.workflow_id).to.equal(wid);
    const listed = await get(`${base}/subscriptions?status=paused`, app.api_key);
    expect(listed.body.data[0].pause.workflow_id).to.equal(paused.body.pause.workflow_id);
  });

  it('a reservation names its expiry workflow, which exists', async () => {
    const { app, base } = await seededApp({ accounts: [{ id: 'a1', plan: 'pro' }] });
    const made = await post(`${base}/namespaces/a1/usage/api_calls/reservations`, app.api_key, { amount: 3 });
    expect(made.status, made.text).to.equal(201);
    expect(made.body.workflow_id).to.equal(`reservation-expiry/${app.id}/${made.body.id}`);
    expect(await exists(made.body.workflow_id)).to.equal('reservationExpiryWorkflow');
    const read = await get(`${base}/namespaces/a1/reservations/${made.body.id}`, app.api_key);
    expect(read.body.workflow_id).to.equal(made.body.workflow_id);
  });
});
