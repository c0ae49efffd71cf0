import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { eventsOf } from '../helpers/events.js';
import { call, get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

/** Years within the history window (at most 5 years back), so the dates stay valid as time passes. */
const Y2 = new Date().getUTCFullYear() - 2;
const Y1 = new Date().getUTCFullYear() - 1;

describe('POST /apps/:appId/import', function () {
  this.timeout(120_000);
  let app: TestApp;
  let base: string;
  const admin = () => testEnv().adminKey;
  beforeEach(async () => {
    ({ app, base } = await seededApp());
  });

  it('imports backdated accounts and usage into history and counters, firing no events', async () => {
    await createAccount(app, { id: 'existing', plan: 'pro' });
    const before = (await eventsOf(app.id)).length;
    const res = await post(`${base}/import`, admin(), {
      accounts: [
        { id: 'old-1', name: 'Old One', plan: 'pro', created_at: `${Y2}-01-02T03:04:05.000Z` },
        { id: 'old-2' },
      ],
      usage: [
        { account_id: 'old-1', entitlement_id: 'api_calls', amount: 7, created_at: `${Y2}-02-01T00:00:00Z` },
        { account_id: 'old-1', entitlement_id: 'api_calls', amount: 3, created_at: `${Y2}-02-02T00:00:00Z` },
        { account_id: 'existing', entitlement_id: 'seats', amount: 2, created_at: `${Y2}-02-03T00:00:00Z` },
      ],
    });
    expect(res.status).to.equal(201);
    expect(res.body).to.deep.equal({ accounts: 2, usage_events: 3 });
    const old1 = (await get(`${base}/namespaces/old-1`, app.api_key)).body;
    expect(old1).to.deep.include({ name: 'Old One', plan: 'pro', created_at: `${Y2}-01-02T03:04:05.000Z` });
    expect((await get(`${base}/namespaces/old-2`, app.api_key)).body.plan, 'free plan by default').to.equal('free');
    expect((await get(`${base}/namespaces/old-1/usage/api_calls`, app.api_key)).body.count).to.equal(10);
    expect((await get(`${base}/namespaces/existing/usage/seats`, app.api_key)).body.count).to.equal(2);
    const hist = await get(`${base}/analytics/events?namespace=old-1`, app.api_key);
    expect(hist.body.data.map((e: { amount: number; created_at: string }) => [e.amount, e.created_at])).to.deep.equal([
      [3, `${Y2}-02-02T00:00:00.000Z`],
      [7, `${Y2}-02-01T00:00:00.000Z`],
    ]);
    expect((await eventsOf(app.id)).length, 'no events').to.equal(before);
  });

  it('one bad row: a 400 (or 404 for a record it names, 409 for an id taken) naming it, and nothing is written', async () => {
    await createAccount(app, { id: 'taken', plan: 'free' });
    const good = Array.from({ length: 50 }, (_, i) => ({ id: `n${i}`, plan: 'pro' }));
    const cases: [unknown, number, string][] = [
      [{ accounts: [...good, { id: 'x', plan: 'gold' }] }, 404, 'accounts.50.plan: plan gold does not exist'],
      [{ accounts: [...good, { id: 'n3', plan: 'pro' }] }, 400, 'accounts.50.id: duplicate of accounts.3'],
      [{ accounts: [...good, { id: 'taken' }] }, 409, 'accounts.50.id: account taken already exists'],
      [
        {
          accounts: good,
          usage: [{ account_id: 'ghost', entitlement_id: 'api_calls', amount: 1, created_at: `${Y2}-01-01T00:00:00Z` }],
        },
        404,
        'usage.0.account_id: account ghost does not exist',
      ],
      [
        {
          accounts: good,
          usage: [{ account_id: 'n1', entitlement_id: 'sso', amount: 1, created_at: `${Y2}-01-01T00:00:00Z` }],
        },
        400,
        'usage.0.entitlement_id: sso is a boolean entitlement',
      ],
      [
        { accounts: good, usage: [{ account_id: 'n1', entitlement_id: 'api_calls', amount: 1 }] },
        400,
        'usage.0.created_at: is required',
      ],
      [
        { accounts: [...good, { id: 'x', plan: 'pro', incentive: 'nope' }] },
        404,
        'accounts.50.incentive: incentive nope does not exist',
      ],
    ];
    for (const [body, status, error] of cases) {
      const res = await post(`${base}/import`, admin(), body);
      expect(res.status, error).to.equal(status);
      expect(res.body).to.deep.equal({ error });
    }
    expect((await get(`${base}/namespaces/count`, app.api_key)).body.count).to.equal(1);
    const rows = await sql<{ n: string }>(
      testEnv().deps.orm.em.fork(),
      'select count(*) as n from usage_events where app_id = $1',
      [app.id],
    );
    expect(Number(rows[0].n)).to.equal(0);
  });

  it('admin only', async () => {
    expect((await post(`${base}/import`, app.api_key, { accounts: [] })).status).to.equal(401);
  });

  it('a large import analyses the tables it grew at once; a small one leaves that to autovacuum', async () => {
    const em = () => testEnv().deps.orm.em.fork();
    const state = async (table: string) => {
      const [r] = await sql<{ analyzed: number; reltuples: number }>(
        em(),
        `select coalesce(extract(epoch from s.last_analyze) * 1000, 0)::float8 as analyzed, c.reltuples
           from pg_stat_user_tables s join pg_class c on c.oid = s.relid
          where s.relname = $1 and s.schemaname = current_schema()`,
        [table],
      );
      return { analyzed: Number(r.analyzed), reltuples: Number(r.reltuples) };
    };
    const before = await state('accounts');
    const small = await post(`${base}/import`, admin(), { accounts: [{ id: 'few-1' }, { id: 'few-2' }] });
    expect(small.status, small.text).to.equal(201);
    expect((await state('accounts')).analyzed, 'not analysed for two rows').to.equal(before.analyzed);

    // More than autovacuum's threshold for the table as the planner knows it (50 rows and 10%), and 1,000 at least.
    const n = Math.max(1000, Math.ceil(0.1 * Math.max(before.reltuples, 0)) + 100);
    const usage = Array.from({ length: n }, (_, i) => ({
      account_id: `many-${i}`,
      entitlement_id: 'api_calls',
      amount: 1,
      created_at: `${Y1}-01-01T00:00:00Z`,
    }));
    const counters = await state('usage_counters');
    const many = await post(`${base}/import`, admin(), {
      accounts: Array.from({ length: n }, (_, i) => ({ id: `many-${i}` })),
      usage,
    });
    expect(many.status, many.text).to.equal(201);
    const after = await state('accounts');
    expect(after.analyzed, 'accounts analysed').to.be.greaterThan(before.analyzed);
    expect(after.reltuples, 'the planner knows the new rows').to.be.at.least(n);
    if (n > 50 + 0.1 * Math.max(counters.reltuples, 0))
      expect((await state('usage_counters')).analyzed, 'counters analysed').to.be.greaterThan(counters.analyzed);
  });

  it('takes 10,000 accounts and 10,000 usage events in one request; more is a 400', async () => {
    const accounts = Array.from({ length: 10_000 }, (_, i) => ({ id: `bulk-${i}`, plan: 'pro' }));
    const usage = Array.from({ length: 10_000 }, (_, i) => ({
      account_id: `bulk-${i % 500}`,
      entitlement_id: 'api_calls',
      amount: 1,
      created_at: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(),
    }));
    const res = await post(`${base}/import`, admin(), { accounts, usage });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.deep.equal({ accounts: 10_000, usage_events: 10_000 });
    expect((await get(`${base}/namespaces/count`, app.api_key)).body.count).to.equal(10_000);
    expect((await get(`${base}/namespaces/bulk-7/usage/api_calls`, app.api_key)).body.count).to.equal(20);
    const tooMany = await call('POST', `${base}/import`, {
      token: admin(),
      body: { accounts: [...accounts, { id: 'one-more' }] },
    });
    expect(tooMany.status).to.equal(400);
    expect(tooMany.body.error).to.match(/^accounts: /);
  });
});
