import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import {
  reservationExpiryDef,
  reservationExpiryWorkflowId,
  type ReservationExpiryState,
} from '../../workflows/shared.js';
import { seededApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('usage reservations (reserve, commit, release, expiry)', function () {
  this.timeout(90_000);
  let app: TestApp;
  let base: string;
  let acct: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp({
      accounts: [
        { id: 'a1', plan: 'pro' }, // seats: 5, blocking
      ],
    }));
    acct = `${base}/namespaces/a1`;
  });

  const reserve = (amount: number, expires_in?: number, ent = 'seats') =>
    post(`${acct}/usage/${ent}/reservations`, app.api_key, expires_in ? { amount, expires_in } : { amount });
  const seats = async () =>
    (await get(`${acct}/plan`, app.api_key)).body.entitlements.find((e: { id: string }) => e.id === 'seats');
  const counter = async () => {
    const [row] = await sql<{ count: string; held: string }>(
      testEnv().deps.orm.em.fork(),
      `select count, held from usage_counters where app_id = $1 and account_id = 'a1' and entitlement_id = 'seats'`,
      [app.id],
    );
    return { count: Number(row.count), held: Number(row.held) };
  };

  it('a hold counts against the limit, left and can; commit adds at most the reserved amount, once', async () => {
    const r = await reserve(3);
    expect(r.status, r.text).to.equal(201);
    expect(r.body).to.deep.include({ account: 'a1', entitlement: 'seats', amount: 3, status: 'held', committed: null });
    expect(r.body.id).to.match(/^rsv_/);
    expect(await seats()).to.deep.include({ usage: 0, max: 5, left: 2, can: true });
    const blocked = await post(`${acct}/usage/seats/amount`, app.api_key, { amount: 3 });
    expect(blocked.status).to.equal(402);
    expect(blocked.body.entitlement, 'the 402 counts the hold as used').to.deep.include({ usage: 3, max: 5 });
    expect((await post(`${acct}/usage/seats/amount`, app.api_key, { amount: 2 })).body.count).to.equal(2);
    expect(await seats()).to.deep.include({ usage: 2, left: 0, can: false });
    expect((await reserve(1)).status, 'nothing left to reserve').to.equal(402);

    const tooMuch = await post(`${acct}/reservations/${r.body.id}/commit`, app.api_key, { amount: 4 });
    expect(tooMuch.status, 'the reservation holds less: a conflict with its state').to.equal(409);
    expect(tooMuch.body.error).to.equal('amount: at most the reserved amount (3)');
    const done = await post(`${acct}/reservations/${r.body.id}/commit`, app.api_key, { amount: 2 });
    expect(done.status, done.text).to.equal(200);
    expect(done.body).to.deep.include({ status: 'committed', committed: 2 });
    expect(await counter()).to.deep.equal({ count: 4, held: 0 });
    expect(await seats()).to.deep.include({ usage: 4, left: 1, can: true });
    const again = await post(`${acct}/reservations/${r.body.id}/commit`, app.api_key, { amount: 2 });
    expect(again.status).to.equal(409);
    expect(again.body.error).to.equal(`Reservation ${r.body.id} is committed, no longer held`);
    expect((await post(`${acct}/reservations/${r.body.id}/release`, app.api_key)).status).to.equal(409);
    expect(await counter()).to.deep.equal({ count: 4, held: 0 });
    const hist = await sql<{ amount: string }>(
      testEnv().deps.orm.em.fork(),
      `select amount from usage_events where app_id = $1 and entitlement_id = 'seats' order by id`,
      [app.id],
    );
    expect(hist.map((h) => Number(h.amount))).to.deep.equal([2, 2]);
  });

  it('release frees the hold without usage; unknown reservations 404; bad input 400; booleans 400', async () => {
    const r = await reserve(2);
    const rel = await post(`${acct}/reservations/${r.body.id}/release`, app.api_key);
    expect(rel.body).to.deep.include({ status: 'released', committed: 0 });
    expect(await counter()).to.deep.equal({ count: 0, held: 0 });
    expect((await get(`${acct}/reservations/${r.body.id}`, app.api_key)).body.status).to.equal('released');
    expect((await post(`${acct}/reservations/rsv_nope/commit`, app.api_key, { amount: 1 })).status).to.equal(404);
    expect((await reserve(0)).body.error).to.match(/^amount: /);
    expect((await reserve(1, 86_401)).body.error).to.match(/^expires_in: /);
    expect((await reserve(1, undefined, 'sso')).status).to.equal(400);
    expect((await reserve(1, undefined, 'nope')).status).to.equal(404);
    expect(
      (await post(`${base}/namespaces/ghost/usage/seats/reservations`, app.api_key, { amount: 1 })).status,
    ).to.equal(404);
  });

  it("lists an account's reservations newest first, by status; 404 for an unknown account; another app's key sees none", async () => {
    expect((await get(`${acct}/reservations`, app.api_key)).body).to.deep.equal([]);
    const first = await reserve(1);
    const second = await reserve(2);
    await post(`${acct}/reservations/${first.body.id}/release`, app.api_key);
    const all = await get(`${acct}/reservations`, app.api_key);
    expect(all.status).to.equal(200);
    expect(all.body.map((r: { id: string }) => r.id)).to.deep.equal([second.body.id, first.body.id]);
    expect(all.body[0]).to.deep.include({ status: 'held', amount: 2, workflow_id: second.body.workflow_id });
    const held = await get(`${acct}/reservations?status=held`, app.api_key);
    expect(held.body.map((r: { id: string }) => r.id)).to.deep.equal([second.body.id]);
    expect((await get(`${acct}/reservations?status=nope`, app.api_key)).body.error).to.match(/^status: /);
    expect((await get(`${base}/namespaces/ghost/reservations`, app.api_key)).status).to.equal(404);
    const other = (await seededApp({ accounts: [{ id: 'a1', plan: 'pro' }] })).app;
    expect((await get(`/apps/${other.id}/namespaces/a1/reservations`, other.api_key)).body).to.deep.equal([]);
    expect((await get(`${acct}/reservations`, other.api_key)).status).to.equal(401);
  });

  it('30 concurrent reserves against 5 free: exactly 5 hold; a racing commit and release settle once', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => reserve(1)));
    const held = results.filter((r) => r.status === 201);
    expect(held).to.have.length(5);
    for (const r of results.filter((x) => x.status === 402))
      expect(r.body.entitlement).to.deep.include({ usage: 5, max: 5 });
    expect(await counter()).to.deep.equal({ count: 0, held: 5 });
    const races = await Promise.all(
      held.flatMap((r) => [
        post(`${acct}/reservations/${r.body.id}/commit`, app.api_key, { amount: 1 }),
        post(`${acct}/reservations/${r.body.id}/release`, app.api_key),
        post(`${acct}/reservations/${r.body.id}/commit`, app.api_key, { amount: 1 }),
      ]),
    );
    expect(races.filter((r) => r.status === 200)).to.have.length(5);
    expect(races.filter((r) => r.status === 409)).to.have.length(10);
    const committed = races.filter((r) => r.status === 200 && r.body.status === 'committed').length;
    expect(await counter()).to.deep.equal({ count: committed, held: 0 });
  });

  it('an unreleased reservation expires at its deadline through a durable timer, visible in Temporal', async () => {
    const r = await reserve(2, 2);
    const h = testEnv().deps.temporal.client.workflow.getHandle(reservationExpiryWorkflowId(app.id, r.body.id));
    const desc = await eventually(() => h.describe());
    expect(desc.workflowId).to.equal(`reservation-expiry/${app.id}/${r.body.id}`);
    expect(desc.type).to.equal('reservationExpiryWorkflow');
    const sa = Object.fromEntries(desc.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value]));
    expect(sa).to.deep.include({ AppId: app.id, AccountId: 'a1' });
    expect(await desc.staticSummary()).to.equal('Reservation expiry: 2 seats of account a1');
    expect((await h.query(reservationExpiryDef.queries.state)).phase).to.equal('waiting');
    const result = (await h.result()) as ReservationExpiryState;
    expect(result.outcome).to.equal('expired');
    expect((await get(`${acct}/reservations/${r.body.id}`, app.api_key)).body.status).to.equal('expired');
    expect(await counter()).to.deep.equal({ count: 0, held: 0 });
    expect((await post(`${acct}/reservations/${r.body.id}/commit`, app.api_key, { amount: 1 })).status).to.equal(409);
    // A committed one ends its workflow early, without expiring anything.
    const c = await reserve(1, 600);
    await post(`${acct}/reservations/${c.body.id}/commit`, app.api_key, { amount: 1 });
    const hc = testEnv().deps.temporal.client.workflow.getHandle(reservationExpiryWorkflowId(app.id, c.body.id));
    // Started through the outbox after the answer (a CI run asked for its result before the start had gone out).
    await eventually(() => hc.describe());
    expect(((await hc.result()) as ReservationExpiryState).outcome).to.equal('settled');
    expect(await counter()).to.deep.equal({ count: 1, held: 0 });
  });

  it('expiry across a worker restart releases exactly once and leaves other holds alone', async () => {
    const keep = await reserve(2, 600);
    await testEnv().stopWorker();
    let r;
    try {
      r = await reserve(1, 1);
      await new Promise((res) => setTimeout(res, 2500));
      expect((await get(`${acct}/reservations/${r.body.id}`, app.api_key)).body.status, 'no worker yet').to.equal(
        'held',
      );
    } finally {
      await testEnv().startWorker();
    }
    await eventually(
      async () => (await get(`${acct}/reservations/${r.body.id}`, app.api_key)).body.status === 'expired',
    );
    const h = testEnv().deps.temporal.client.workflow.getHandle(reservationExpiryWorkflowId(app.id, r.body.id));
    expect(((await h.result()) as ReservationExpiryState).outcome).to.equal('expired');
    expect(await counter()).to.deep.equal({ count: 0, held: 2 });
    expect((await get(`${acct}/reservations/${keep.body.id}`, app.api_key)).body.status).to.equal('held');
  });
});
