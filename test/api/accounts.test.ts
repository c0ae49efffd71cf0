import { expect } from 'chai';
import { createAccount, createTestApp, seededApp, type TestApp } from '../helpers/factories.js';
import { eventsOf } from '../helpers/events.js';
import { call, del, get, patch, post } from '../helpers/http.js';
import { sql } from '../../src/db/sql.js';
import { testEnv } from '../helpers/servers.js';

describe('accounts', () => {
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp());
  });

  describe('POST /namespaces', () => {
    it('creates with the id exactly as sent and emits account.created', async () => {
      const res = await post(`${base}/namespaces`, app.api_key, { id: 'User 42-A', name: 'Ada', plan: 'pro' });
      expect(res.status).to.equal(201);
      expect(res.body).to.deep.include({
        id: 'User 42-A',
        app_id: app.id,
        name: 'Ada',
        plan: 'pro',
        incentive: null,
        incentive_expires_at: null,
        offer: null,
        addons: [],
        subscription: null,
      });
      const [ev] = await eventsOf(app.id, 'account.created');
      expect(ev.data.object).to.deep.include({ id: 'User 42-A', plan: 'pro', subscription: null });
    });
    it('409 when the id exists (ids are case-sensitive: another case is another account)', async () => {
      await createAccount(app, { id: 'acme', plan: 'free' });
      const again = await post(`${base}/namespaces`, app.api_key, { id: 'acme', plan: 'pro' });
      expect(again.status).to.equal(409);
      expect(again.body).to.deep.equal({ error: 'Account acme already exists' });
      expect((await post(`${base}/namespaces`, app.api_key, { id: 'ACME', plan: 'pro' })).status).to.equal(201);
    });
    it('defaults to the free plan; 404 for an unknown plan or incentive; 400 for an expiry without incentive', async () => {
      expect((await createAccount(app, { id: 'nofree' })).plan).to.equal('free');
      expect((await post(`${base}/namespaces`, app.api_key, { id: 'x', plan: 'gold' })).body).to.deep.equal({
        error: 'Plan gold not found',
      });
      expect(
        (await post(`${base}/namespaces`, app.api_key, { id: 'x', plan: 'pro', incentive: 'ghost' })).status,
      ).to.equal(404);
      expect(
        (
          await post(`${base}/namespaces`, app.api_key, {
            id: 'x',
            plan: 'pro',
            incentive_expires_at: '2030-01-01T00:00:00Z',
          })
        ).body,
      ).to.deep.equal({
        error: 'incentive_expires_at: needs an incentive',
      });
      expect((await post(`${base}/namespaces`, app.api_key, { plan: 'pro' })).body).to.deep.equal({
        error: 'id: is required',
      });
    });
    it('400 without a plan when the app has no free plan', async () => {
      const bare = await createTestApp();
      const res = await post(`/apps/${bare.id}/namespaces`, bare.api_key, { id: 'a' });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.match(/^plan: is required/);
    });
  });

  describe('GET / PATCH / DELETE /namespaces/:accountId', () => {
    it('404 for a missing account', async () => {
      expect((await get(`${base}/namespaces/ghost`, app.api_key)).body).to.deep.equal({
        error: 'Account ghost not found',
      });
      expect((await patch(`${base}/namespaces/ghost`, app.api_key, { name: 'x' })).status).to.equal(404);
      expect((await del(`${base}/namespaces/ghost`, app.api_key)).status).to.equal(404);
    });
    it('PATCH merges and emits updated, plan_changed, incentive_applied and incentive_removed with previous', async () => {
      await post(`${base}/incentives`, app.api_key, { id: 'promo', name: 'Promo' });
      await createAccount(app, { id: 'a1', name: 'Old', plan: 'free' });
      const res = await patch(`${base}/namespaces/a1`, app.api_key, { plan: 'pro', incentive: 'promo' });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.include({ name: 'Old', plan: 'pro', incentive: 'promo' });
      const updated = await eventsOf(app.id, 'account.updated');
      expect(updated[0].data.previous).to.deep.equal({ plan: 'free', incentive: null });
      expect((await eventsOf(app.id, 'account.plan_changed'))[0].data.previous).to.deep.equal({ plan: 'free' });
      expect((await eventsOf(app.id, 'account.incentive_applied'))[0].data.previous).to.deep.equal({ incentive: null });

      const removed = await del(`${base}/namespaces/a1/incentive`, app.api_key);
      expect(removed.body.incentive).to.equal(null);
      expect((await eventsOf(app.id, 'account.incentive_removed'))[0].data.previous).to.deep.equal({
        incentive: 'promo',
      });

      const noop = await patch(`${base}/namespaces/a1`, app.api_key, { name: 'Old' });
      expect(noop.status).to.equal(200);
      expect(await eventsOf(app.id, 'account.updated'), 'no event when nothing changed').to.have.length(2);
      expect((await patch(`${base}/namespaces/a1`, app.api_key, { plan: 'gold' })).status).to.equal(404);
    });
    it('DELETE removes the account and its counters but keeps usage history; emits account.deleted', async () => {
      await createAccount(app, { id: 'gone', plan: 'pro' });
      await post(`${base}/namespaces/gone/usage/api_calls/add`, app.api_key);
      const res = await del(`${base}/namespaces/gone`, app.api_key);
      expect(res.status).to.equal(200);
      expect((await get(`${base}/namespaces/gone`, app.api_key)).status).to.equal(404);
      const em = testEnv().deps.orm.em.fork();
      const counters = await em.getConnection().execute(`select * from usage_counters where app_id = '${app.id}'`);
      const history = await em.getConnection().execute(`select * from usage_events where app_id = '${app.id}'`);
      expect(counters).to.have.length(0);
      expect(history).to.have.length(1);
      expect((await eventsOf(app.id, 'account.deleted'))[0].data.object.id).to.equal('gone');
      // The id can be used again afterwards.
      expect((await post(`${base}/namespaces`, app.api_key, { id: 'gone', plan: 'free' })).status).to.equal(201);
    });
    it('a plan with accounts cannot be deleted (409)', async () => {
      await createAccount(app, { id: 'a1', plan: 'pro' });
      const res = await del(`${base}/plans/pro`, app.api_key);
      expect(res.status).to.equal(409);
      expect(res.body).to.deep.include({ accounts: 1 });
    });
  });

  describe('own add-ons', () => {
    it('grant (emits account.addon_granted), 409 when owned, 404 unknown, remove', async () => {
      await createAccount(app, { id: 'a1', plan: 'free' });
      const res = await post(`${base}/namespaces/a1/addons`, app.api_key, { id: 'storage' });
      expect(res.status).to.equal(201);
      expect(res.body.addons).to.deep.equal(['storage']);
      expect((await get(`${base}/namespaces/a1`, app.api_key)).body.addons).to.deep.equal(['storage']);
      const [granted] = await eventsOf(app.id, 'account.addon_granted');
      expect(granted.data).to.deep.include({ addon_id: 'storage', source: 'api' });
      expect((await post(`${base}/namespaces/a1/addons`, app.api_key, { id: 'storage' })).status).to.equal(409);
      expect((await post(`${base}/namespaces/a1/addons`, app.api_key, { id: 'nope' })).status).to.equal(404);
      expect((await del(`${base}/namespaces/a1/addons/storage`, app.api_key)).body.addons).to.deep.equal([]);
      expect((await del(`${base}/namespaces/a1/addons/storage`, app.api_key)).status).to.equal(404);
      expect((await del(`${base}/addons/storage`, app.api_key)).status).to.equal(200);
    });
  });

  describe('account tokens', () => {
    it('mints a token (default 1 hour) that reads only its own /plan and /full-plan', async () => {
      await createAccount(app, { id: 'a1', plan: 'pro' });
      await createAccount(app, { id: 'a2', plan: 'pro' });
      const res = await post(`${base}/namespaces/a1/token`, app.api_key, {});
      expect(res.status).to.equal(201);
      expect(res.body.account_id).to.equal('a1');
      expect(res.body.token).to.match(/^act_/);
      expect(Date.parse(res.body.expires_at) - Date.now()).to.be.within(3590_000, 3601_000);
      const t = res.body.token;
      expect((await get(`${base}/namespaces/a1/plan`, t)).status).to.equal(200);
      expect((await get(`${base}/namespaces/a1/full-plan`, t)).status).to.equal(200);
      for (const path of [
        `${base}/namespaces/a2/plan`,
        `${base}/namespaces/a1`,
        `${base}/namespaces/a1/usage`,
        `${base}/plans`,
      ]) {
        expect((await get(path, t)).status, path).to.equal(401);
      }
    });
    it('ttl_seconds 60 to 86,400; 404 for a missing account; publishable key 401', async () => {
      await createAccount(app, { id: 'a1', plan: 'pro' });
      const short = await post(`${base}/namespaces/a1/token`, app.api_key, { ttl_seconds: 60 });
      expect(Date.parse(short.body.expires_at) - Date.now()).to.be.within(50_000, 61_000);
      expect((await post(`${base}/namespaces/a1/token`, app.api_key, { ttl_seconds: 59 })).body.error).to.match(
        /^ttl_seconds: /,
      );
      expect((await post(`${base}/namespaces/a1/token`, app.api_key, { ttl_seconds: 86_401 })).status).to.equal(400);
      expect((await post(`${base}/namespaces/ghost/token`, app.api_key, {})).status).to.equal(404);
      expect((await post(`${base}/namespaces/a1/token`, app.public_key, {})).status).to.equal(401);
    });
  });

  describe('lists', () => {
    beforeEach(async () => {
      await post(`${base}/incentives`, app.api_key, { id: 'promo', name: 'Promo' });
      await createAccount(app, { id: 'alice', name: 'Alice Smith', plan: 'free' });
      await createAccount(app, { id: 'bob', name: 'Bob', plan: 'pro', incentive: 'promo' });
      await createAccount(app, { id: 'carol', name: 'Carol', plan: 'pro' });
      await createAccount(app, { id: 'dave_100%', name: 'Dave', plan: 'scale', incentive: 'promo' });
      // An incentive past its expiry that no workflow has removed yet (set directly: no workflow runs).
      await sql(
        testEnv().deps.orm.em.fork(),
        "update accounts set incentive_expires_at = '2001-01-01T00:00:00Z' where app_id = $1 and id = 'dave_100%'",
        [app.id],
      );
    });

    it('search: newest first, q on id or name, filters, pagination', async () => {
      const all = await get(`${base}/namespaces`, app.api_key);
      expect(all.body).to.deep.include({ total: 4, page: 1, per_page: 20 });
      expect(all.body.data.map((a: { id: string }) => a.id)).to.deep.equal(['dave_100%', 'carol', 'bob', 'alice']);
      expect(
        (await get(`${base}/namespaces?q=SMITH`, app.api_key)).body.data.map((a: { id: string }) => a.id),
      ).to.deep.equal(['alice']);
      expect(
        (await get(`${base}/namespaces?q=100%25`, app.api_key)).body.total,
        'q is literal, not a pattern',
      ).to.equal(1);
      expect((await get(`${base}/namespaces?q=_`, app.api_key)).body.total).to.equal(1);
      expect((await get(`${base}/namespaces?plan=pro`, app.api_key)).body.total).to.equal(2);
      expect((await get(`${base}/namespaces?incentive=promo`, app.api_key)).body.total).to.equal(2);
      expect(
        (await get(`${base}/namespaces?has_incentive=true`, app.api_key)).body.data.map((a: { id: string }) => a.id),
      ).to.deep.equal(['bob']);
      expect((await get(`${base}/namespaces?has_incentive=false`, app.api_key)).body.total).to.equal(3);
      const page2 = await get(`${base}/namespaces?per_page=3&page=2`, app.api_key);
      expect(page2.body).to.deep.include({ total: 4, page: 2, per_page: 3 });
      expect(page2.body.data.map((a: { id: string }) => a.id)).to.deep.equal(['alice']);
      expect((await get(`${base}/namespaces?per_page=500`, app.api_key)).status).to.equal(400);
      expect((await get(`${base}/namespaces?has_incentive=maybe`, app.api_key)).status).to.equal(400);
    });
    it('count, with-incentive (only incentives that still apply) and accounts of a plan', async () => {
      expect((await get(`${base}/namespaces/count`, app.api_key)).body).to.deep.equal({ count: 4 });
      const withInc = await get(`${base}/namespaces/with-incentive?incentive=promo`, app.api_key);
      expect(withInc.body.data.map((a: { id: string }) => a.id)).to.deep.equal(['bob']);
      const onPro = await get(`${base}/plans/pro/namespaces?per_page=1`, app.api_key);
      expect(onPro.body).to.deep.include({ total: 2, per_page: 1 });
      expect(onPro.body.data[0].id).to.equal('carol');
      expect((await get(`${base}/plans/gold/namespaces`, app.api_key)).status).to.equal(404);
    });
  });

  it('another app cannot see these accounts', async () => {
    await createAccount(app, { id: 'private', plan: 'free' });
    const other = await createTestApp();
    expect((await call('GET', `${base}/namespaces/private`, { token: other.api_key })).status).to.equal(401);
    expect((await get(`/apps/${other.id}/namespaces/private`, other.api_key)).status).to.equal(404);
  });
});
