import { expect } from 'chai';
import { incentiveExpiryWorkflowId, incentiveExpiryDef, type IncentiveExpiryState } from '../../workflows/shared.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { eventsOf } from '../helpers/events.js';
import { del, get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

describe('incentive expiry workflow', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  const handle = (accountId: string) =>
    testEnv().deps.temporal.client.workflow.getHandle(incentiveExpiryWorkflowId(app.id, accountId));

  beforeEach(async () => {
    ({ app, base } = await seededApp());
    await post(`${base}/incentives`, app.api_key, {
      id: 'promo',
      name: 'Promo',
      entitlements: [{ id: 'api_calls', max: 9999 }],
    });
  });

  it('removes the incentive when its expiry passes, and is easy to find and read in Temporal', async () => {
    const expiresAt = inMs(2500);
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: expiresAt });
    const h = handle('a1');
    const desc = await eventually(() => h.describe());
    expect(desc.workflowId).to.equal(`incentive-expiry/${app.id}/a1`);
    expect(desc.type).to.equal('incentiveExpiryWorkflow');
    const sa = Object.fromEntries(desc.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value]));
    expect(sa).to.deep.include({ AppId: app.id, AccountId: 'a1' });
    expect(await desc.staticSummary()).to.equal('Incentive expiry: account a1');
    const waiting = await h.query(incentiveExpiryDef.queries.state);
    expect(waiting).to.deep.include({ phase: 'waiting', target: { incentiveId: 'promo', expiresAt } });
    expect((await get(`${base}/namespaces/a1/plan`, app.api_key)).body.incentive).to.equal('promo');

    const result = (await h.result()) as IncentiveExpiryState;
    expect(result.outcome).to.equal('expired');
    expect(Date.now()).to.be.at.least(Date.parse(expiresAt));
    const account = (await get(`${base}/namespaces/a1`, app.api_key)).body;
    expect(account).to.deep.include({ incentive: null, incentive_expires_at: null });
    const [removed] = await eventsOf(app.id, 'account.incentive_removed');
    expect(removed.data.previous).to.deep.equal({ incentive: 'promo' });
    const after = await h.describe();
    expect(
      Object.fromEntries(after.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value])).IncentiveId,
    ).to.equal('promo');
  });

  it('a new expiry re-targets the same workflow run', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: inMs(3_600_000) });
    const h = handle('a1');
    const first = await eventually(() => h.describe());
    const sooner = inMs(1500);
    await patch(`${base}/namespaces/a1`, app.api_key, { incentive_expires_at: sooner });
    const result = (await h.result()) as IncentiveExpiryState;
    expect(result.outcome).to.equal('expired');
    expect((await h.describe()).runId).to.equal(first.runId);
    expect((await get(`${base}/namespaces/a1`, app.api_key)).body.incentive).to.equal(null);
  });

  it('removing the incentive early ends the workflow without touching the account again', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: inMs(3_600_000) });
    const h = handle('a1');
    await eventually(() => h.describe());
    await del(`${base}/namespaces/a1/incentive`, app.api_key);
    expect(((await h.result()) as IncentiveExpiryState).outcome).to.equal('removed-early');
  });

  it('deleting the account ends the workflow', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: inMs(3_600_000) });
    const h = handle('a1');
    await eventually(() => h.describe());
    await del(`${base}/namespaces/a1`, app.api_key);
    expect(((await h.result()) as IncentiveExpiryState).outcome).to.equal('removed-early');
  });

  it('a later incentive with an expiry starts a new run after the previous one finished', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'promo', incentive_expires_at: inMs(500) });
    const h = handle('a1');
    await eventually(async () => ((await h.describe()).status.name === 'COMPLETED' ? true : undefined));
    const firstRun = (await h.describe()).runId;
    await patch(`${base}/namespaces/a1`, app.api_key, { incentive: 'promo', incentive_expires_at: inMs(800) });
    const second = await eventually(async () => {
      const d = await h.describe();
      return d.runId !== firstRun ? d : undefined;
    });
    expect(second.runId).to.not.equal(firstRun);
    expect(
      (
        (await testEnv()
          .deps.temporal.client.workflow.getHandle(second.workflowId, second.runId)
          .result()) as IncentiveExpiryState
      ).outcome,
    ).to.equal('expired');
  });
});
