import { expect } from 'chai';
import { createAccount, createTestApp, seededApp, type TestApp } from '../helpers/factories.js';
import { del, get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

const daysAgo = (d: number, hour = 12) => {
  const t = new Date();
  t.setUTCHours(hour, 0, 0, 0);
  return new Date(t.getTime() - d * 86_400_000).toISOString();
};

describe('analytics', () => {
  let app: TestApp;
  let base: string;
  before(async () => {
    ({ app, base } = await seededApp());
    const usage = [
      { account_id: 'a', entitlement_id: 'api_calls', amount: 10, created_at: daysAgo(1) },
      { account_id: 'a', entitlement_id: 'api_calls', amount: 5, created_at: daysAgo(2) },
      { account_id: 'b', entitlement_id: 'api_calls', amount: 50, created_at: daysAgo(3) },
      { account_id: 'b', entitlement_id: 'seats', amount: 2, created_at: daysAgo(20) },
      { account_id: 'c', entitlement_id: 'api_calls', amount: 1, created_at: daysAgo(45) },
      { account_id: 'c', entitlement_id: 'api_calls', amount: 1000, created_at: daysAgo(300) },
    ];
    const res = await post(`${base}/import`, testEnv().adminKey, {
      accounts: ['a', 'b', 'c'].map((id) => ({ id, plan: 'pro' })),
      usage,
    });
    expect(res.status).to.equal(201);
  });

  it('summary: calls and total amount per entitlement in the window, optionally for one account', async () => {
    const week = await get(`${base}/analytics?interval=7d`, app.api_key);
    expect(week.status).to.equal(200);
    expect(week.body.interval).to.equal('7d');
    expect(Date.parse(week.body.to) - Date.parse(week.body.from)).to.equal(7 * 86_400_000);
    expect(week.body.entitlements).to.deep.equal([{ id: 'api_calls', name: 'API calls', calls: 3, amount: 65 }]);
    expect((await get(`${base}/analytics?interval=30d`, app.api_key)).body.entitlements).to.deep.equal([
      { id: 'api_calls', name: 'API calls', calls: 3, amount: 65 },
      { id: 'seats', name: 'Seats', calls: 1, amount: 2 },
    ]);
    const all = await get(`${base}/analytics?interval=alltime&namespace=c`, app.api_key);
    expect(all.body).to.deep.include({ from: null, namespace: 'c' });
    expect(all.body.entitlements).to.deep.equal([{ id: 'api_calls', name: 'API calls', calls: 2, amount: 1001 }]);
    expect((await get(`${base}/analytics`, app.api_key)).body.error).to.match(/^interval: /);
    expect((await get(`${base}/analytics?interval=2w`, app.api_key)).status).to.equal(400);
  });

  it('top accounts: by amount; limit 1 to 100 else 400', async () => {
    const res = await get(`${base}/analytics/top-namespaces?interval=60d&limit=2`, app.api_key);
    expect(res.body.data).to.deep.equal([
      { account_id: 'b', calls: 2, amount: 52 },
      { account_id: 'a', calls: 2, amount: 15 },
    ]);
    expect(
      (await get(`${base}/analytics/top-namespaces?interval=year&entitlement=seats`, app.api_key)).body.data,
    ).to.deep.equal([{ account_id: 'b', calls: 1, amount: 2 }]);
    for (const limit of [0, 101, 'x']) {
      const bad = await get(`${base}/analytics/top-namespaces?interval=7d&limit=${limit}`, app.api_key);
      expect(bad.status, String(limit)).to.equal(400);
      expect(bad.body.error).to.match(/^limit: /);
    }
  });

  it('timeseries: daily buckets up to 60 days, weekly beyond, zero-filled', async () => {
    const daily = await get(`${base}/analytics/timeseries?interval=7d&entitlement=api_calls`, app.api_key);
    expect(daily.body.bucket).to.equal('day');
    expect(daily.body.points).to.have.length(8);
    const byDay = Object.fromEntries(
      daily.body.points.map((p: { start: string; amount: number }) => [p.start.slice(0, 10), p.amount]),
    );
    expect(byDay[daysAgo(1).slice(0, 10)]).to.equal(10);
    expect(byDay[daysAgo(3).slice(0, 10)]).to.equal(50);
    expect(byDay[daysAgo(0).slice(0, 10)]).to.equal(0);
    expect((await get(`${base}/analytics/timeseries?interval=60d`, app.api_key)).body.points).to.have.length(61);
    const weekly = await get(`${base}/analytics/timeseries?interval=year&namespace=c`, app.api_key);
    expect(weekly.body.bucket).to.equal('week');
    expect(weekly.body.points.length).to.be.within(53, 54);
    expect(weekly.body.points.every((p: { start: string }) => new Date(p.start).getUTCDay() === 1)).to.equal(true);
    expect(weekly.body.points.reduce((s: number, p: { amount: number }) => s + p.amount, 0)).to.equal(1001);
    const alltime = await get(`${base}/analytics/timeseries?interval=alltime`, app.api_key);
    expect(alltime.body.points.reduce((s: number, p: { calls: number }) => s + p.calls, 0)).to.equal(6);
  });

  it('events: newest first, filters, limit default 50 and capped at 200', async () => {
    await createAccount(app, { id: 'live', plan: 'pro' });
    await post(`${base}/namespaces/live/usage/api_calls/amount`, app.api_key, { amount: 4 });
    const res = await get(`${base}/analytics/events?limit=2`, app.api_key);
    expect(res.body.data).to.have.length(2);
    expect(res.body.data[0]).to.deep.include({ account_id: 'live', entitlement_id: 'api_calls', amount: 4, count: 4 });
    expect(
      (await get(`${base}/analytics/events?entitlement=seats`, app.api_key)).body.data.map(
        (e: { account_id: string }) => e.account_id,
      ),
    ).to.deep.equal(['b']);
    expect((await get(`${base}/analytics/events?limit=5000`, app.api_key)).status).to.equal(200);
    expect((await get(`${base}/analytics/events?limit=0`, app.api_key)).status).to.equal(400);
  });

  it('saved reports: create, list, read, update, delete', async () => {
    const created = await post(`${base}/analytics/reports`, app.api_key, {
      name: 'Weekly API',
      entitlements: ['API Calls'],
      interval: '7d',
    });
    expect(created.status).to.equal(201);
    expect(created.body).to.deep.include({ name: 'Weekly API', entitlements: ['api_calls'], interval: '7d' });
    const id = created.body.id;
    expect(id).to.match(/^rpt_/);
    expect((await get(`${base}/analytics/reports`, app.api_key)).body.map((r: { id: string }) => r.id)).to.include(id);
    expect((await patch(`${base}/analytics/reports/${id}`, app.api_key, { interval: 'year' })).body).to.deep.include({
      name: 'Weekly API',
      interval: 'year',
    });
    expect((await post(`${base}/analytics/reports`, app.api_key, { name: 'x', interval: 'weekly' })).status).to.equal(
      400,
    );
    expect((await del(`${base}/analytics/reports/${id}`, app.api_key)).status).to.equal(200);
    expect((await get(`${base}/analytics/reports/${id}`, app.api_key)).status).to.equal(404);
    const other = await createTestApp();
    expect((await get(`/apps/${other.id}/analytics/reports/${id}`, other.api_key)).status).to.equal(404);
  });
});
