import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { call, get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

describe('usage', () => {
  let app: TestApp;
  let base: string;
  let u: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp({ accounts: [{ id: 'a1', plan: 'pro' }] }));
    u = `${base}/namespaces/a1/usage`;
  });

  const history = async () =>
    (
      await sql<{ amount: string; count: string }>(
        testEnv().deps.orm.em.fork(),
        'select amount, count from usage_events where app_id = $1 order by id',
        [app.id],
      )
    ).map((r) => [Number(r.amount), Number(r.count)]);

  it('add, amount, remove; counters stop at 0; every change is in the usage history', async () => {
    expect((await post(`${u}/api_calls/add`, app.api_key)).body).to.deep.equal({ entitlement: 'api_calls', count: 1 });
    expect((await post(`${u}/api_calls/amount`, app.api_key, { amount: 41 })).body.count).to.equal(42);
    expect((await post(`${u}/api_calls/remove`, app.api_key)).body.count).to.equal(41);
    expect((await post(`${u}/api_calls/amount`, app.api_key, { amount: -100 })).body.count).to.equal(0);
    expect((await post(`${u}/api_calls/amount`, app.api_key, { amount: 0 })).body.count).to.equal(0);
    // The history records what was applied: the -100 took the counter from 41 to 0.
    expect(await history()).to.deep.equal([
      [1, 1],
      [41, 42],
      [-1, 41],
      [-41, 0],
    ]);
    expect((await get(`${u}/api_calls`, app.api_key)).body).to.deep.equal({ entitlement: 'api_calls', count: 0 });
    expect((await get(u, app.api_key)).body).to.deep.equal({ api_calls: 0, seats: 0 });
  });

  it('the usage history sums to the counter: subtractions record what they applied, under concurrency too', async function () {
    this.timeout(60_000);
    const n = `${base}/namespaces/a1/usage/api_calls`;
    expect((await post(`${n}/remove`, app.api_key)).body.count, 'no counter yet: nothing to remove').to.equal(0);
    expect((await post(`${n}/amount`, app.api_key, { amount: -5 })).body.count).to.equal(0);
    expect(await history(), 'nothing applied, nothing recorded').to.deep.equal([]);
    const ops = Array.from({ length: 120 }, (_, i) =>
      i % 3 === 0
        ? post(`${n}/amount`, app.api_key, { amount: -7 })
        : post(`${n}/amount`, app.api_key, { amount: (i % 5) + 1 }),
    );
    const results = await Promise.all(ops);
    expect(results.every((r) => r.status === 200)).to.equal(true);
    const counter = (await get(n, app.api_key)).body.count;
    const rows = await history();
    expect(rows.reduce((sum, [amount]) => sum + amount, 0)).to.equal(counter);
    expect(rows.every(([amount]) => amount !== 0)).to.equal(true);
    const [agg] = await sql<{ total: string }>(
      testEnv().deps.orm.em.fork(),
      `select coalesce(sum(amount), 0) as total from usage_events where app_id = $1 and account_id = 'a1'
        and entitlement_id = 'api_calls'`,
      [app.id],
    );
    expect(Number(agg.total)).to.equal(counter);
  });

  it(
    'credential rules: publishable key reads, adds and adds amounts >= 0; 403 for a negative ' +
      'amount; 401 for remove and for tokens',
    async () => {
      expect((await post(`${u}/api_calls/add`, app.public_key)).status).to.equal(200);
      expect((await post(`${u}/api_calls/amount`, app.public_key, { amount: 5 })).body.count).to.equal(6);
      expect((await post(`${u}/api_calls/amount`, app.public_key, { amount: 0 })).status).to.equal(200);
      const neg = await post(`${u}/api_calls/amount`, app.public_key, { amount: -1 });
      expect(neg.status).to.equal(403);
      expect(neg.body).to.deep.equal({ error: 'The publishable key cannot subtract usage' });
      expect((await post(`${u}/api_calls/remove`, app.public_key)).status).to.equal(401);
      expect((await get(u, app.public_key)).body.api_calls).to.equal(6);
      expect((await get(`${u}/api_calls`, app.public_key)).body.count).to.equal(6);
      const token = (await post(`${base}/namespaces/a1/token`, app.api_key, {})).body.token;
      expect((await get(u, token)).status).to.equal(401);
      expect((await post(`${u}/api_calls/add`, token)).status).to.equal(401);
      expect((await get(`${u}/api_calls`, app.public_key)).body.count, 'nothing moved').to.equal(6);
    },
  );

  it('400 on a boolean entitlement, 404 for an unknown entitlement or account, 400 for a bad amount', async () => {
    for (const path of [`${u}/sso/add`, `${u}/sso/remove`])
      expect((await post(path, app.api_key)).status, path).to.equal(400);
    expect((await post(`${u}/sso/amount`, app.api_key, { amount: 1 })).body.error).to.match(/boolean/);
    expect((await get(`${u}/sso`, app.api_key)).status).to.equal(400);
    expect((await post(`${u}/nope/add`, app.api_key)).body).to.deep.equal({ error: 'Entitlement nope not found' });
    expect((await post(`${base}/namespaces/ghost/usage/api_calls/add`, app.api_key)).body).to.deep.equal({
      error: 'Account ghost not found',
    });
    expect((await get(`${base}/namespaces/ghost/usage`, app.api_key)).status).to.equal(404);
    expect((await post(`${u}/api_calls/amount`, app.api_key, { amount: 1.5 })).body.error).to.match(/^amount: /);
    expect((await post(`${u}/api_calls/amount`, app.api_key, {})).body).to.deep.equal({ error: 'amount: is required' });
  });

  describe('blocking limits (overage: block)', () => {
    it('402 with the full body and the cheapest upgrade; the counter does not move', async () => {
      await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'https://acme.example/pricing' });
      await createAccount(app, { id: 'f1', plan: 'free' });
      const f = `${base}/namespaces/f1/usage`;
      expect((await post(`${f}/seats/add`, app.api_key)).body.count).to.equal(1);
      const res = await post(`${f}/seats/add`, app.api_key);
      expect(res.status).to.equal(402);
      expect(res.body).to.deep.equal({
        error: 'limit_reached',
        message:
          'Seats: 1 of 1 used. Upgrade to Pro ($29.00/month) for 5 Seats: ' +
          'https://acme.example/pricing?plan=pro&interval=month&account=f1',
        entitlement: { id: 'seats', name: 'Seats', usage: 1, max: 1 },
        offer: {
          id: null,
          name: 'Pro',
          plan: { id: 'pro', name: 'Pro' },
          interval: 'month',
          currency: 'USD',
          price: 29,
          list_price: 29,
          cycles: null,
          new_limit: 5,
          checkout_url: 'https://acme.example/pricing?plan=pro&interval=month&account=f1',
          expires_at: null,
        },
        retry_after_purchase: true,
      });
      expect((await get(`${f}/seats`, app.api_key)).body.count).to.equal(1);
      expect((await post(`${f}/seats/amount`, app.api_key, { amount: 3 })).status).to.equal(402);
      expect(
        (await post(`${f}/seats/amount`, app.api_key, { amount: -1 })).body.count,
        'subtracting is never blocked',
      ).to.equal(0);
    });

    it('the upgrade skips plans that do not raise the limit; null when none does', async () => {
      await createAccount(app, { id: 's1', plan: 'scale' });
      const s = `${base}/namespaces/s1/usage`;
      await post(`${s}/seats/amount`, app.api_key, { amount: 50 });
      const res = await post(`${s}/seats/add`, app.api_key);
      expect(res.status).to.equal(402);
      expect(res.body.offer, 'internal has a higher limit but no pricing card').to.equal(null);
      expect(res.body.retry_after_purchase).to.equal(false);
      expect(res.body.message).to.equal('Seats: 50 of 50 used. No plan with a higher limit is available.');
      expect(res.body.offer).to.equal(null);
    });

    it('an entitlement the account does not have blocks at 0', async () => {
      await patch(`${base}/plans/pro/entitlements/seats`, app.api_key, { max: 5 });
      await call('DELETE', `${base}/plans/free/entitlements/seats`, { token: app.api_key });
      await createAccount(app, { id: 'f2', plan: 'free' });
      const res = await post(`${base}/namespaces/f2/usage/seats/add`, app.api_key);
      expect(res.status).to.equal(402);
      expect(res.body.entitlement).to.deep.equal({ id: 'seats', name: 'Seats', usage: 0, max: 0 });
    });

    it('200 concurrent adds against a blocking limit of 100: exactly 100 succeed, the counter ends at 100', async function () {
      this.timeout(60_000);
      await patch(`${base}/plans/pro/entitlements/seats`, app.api_key, { max: 100 });
      const results = await Promise.all(Array.from({ length: 200 }, () => post(`${u}/seats/add`, app.api_key)));
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).to.have.length(100);
      expect(statuses.filter((s) => s === 402)).to.have.length(100);
      expect(
        new Set(results.filter((r) => r.status === 200).map((r) => r.body.count)).size,
        'every success saw a distinct count',
      ).to.equal(100);
      expect((await get(`${u}/seats`, app.api_key)).body.count).to.equal(100);
      const rows = await sql<{ n: string }>(
        testEnv().deps.orm.em.fork(),
        "select count(*) as n from usage_events where app_id = $1 and entitlement_id = 'seats'",
        [app.id],
      );
      expect(Number(rows[0].n)).to.equal(100);
    });
  });

  it('the 402 body under concurrency states the usage that blocked the call, never one with room left', async function () {
    this.timeout(120_000);
    await patch(`${base}/plans/pro/entitlements/seats`, app.api_key, { max: 3 });
    let blocked = 0;
    // Rounds from 2 of 3 used: concurrent adds race for the last unit; every loser must read 3 of 3.
    for (let round = 0; round < 15; round++) {
      await post(`${u}/seats/amount`, app.api_key, { amount: -10 });
      await post(`${u}/seats/amount`, app.api_key, { amount: 2 });
      const results = await Promise.all(Array.from({ length: 16 }, () => post(`${u}/seats/add`, app.api_key)));
      expect(results.filter((r) => r.status === 200)).to.have.length(1);
      for (const r of results.filter((x) => x.status === 402)) {
        blocked++;
        expect(r.body.entitlement, r.body.message).to.deep.include({ usage: 3, max: 3 });
        expect(r.body.message).to.match(/^Seats: 3 of 3 used\./);
      }
    }
    expect(blocked).to.equal(15 * 15);
  });

  it('1,000 concurrent unblocked adds from a backend (its secret key) lose nothing', async function () {
    this.timeout(120_000);
    const results = await Promise.all(Array.from({ length: 1000 }, () => post(`${u}/api_calls/add`, app.api_key)));
    expect(results.every((r) => r.status === 200)).to.equal(true);
    expect((await get(`${u}/api_calls`, app.api_key)).body.count).to.equal(1000);
    expect(new Set(results.map((r) => r.body.count)).size).to.equal(1000);
    const e = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body.entitlements.find(
      (x: { id: string }) => x.id === 'api_calls',
    );
    expect(e).to.deep.include({ usage: 1000, max: 1000, left: 0, can: false });
  });
});
