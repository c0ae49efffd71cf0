// Credits consumed by feature and by pool over time (issue 42 item 6): exact sums from the ledger, in the buckets of
// the other analytics series, with every filter.
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { seededApp, type TestApp } from '../helpers/factories.js';
import { get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

/** Noon UTC `d` days ago (as test/api/analytics.test.ts places its history). */
const daysAgo = (d: number) => {
  const t = new Date();
  t.setUTCHours(12, 0, 0, 0);
  return new Date(t.getTime() - d * 86_400_000).toISOString();
};
const dayStart = (iso: string) => `${iso.slice(0, 10)}T00:00:00.000Z`;

describe('analytics: credits consumed', function () {
  this.timeout(40_000);
  let app: TestApp;
  let base: string;

  before(async () => {
    ({ app, base } = await seededApp({
      accounts: [
        { id: 'a1', plan: 'pro' },
        { id: 'a2', plan: 'pro' },
      ],
    }));
    const ok = async (path: string, body: unknown, status = 201) => {
      const res = await post(`${base}${path}`, app.api_key, body);
      expect(res.status, `${path} ${res.text}`).to.equal(status);
      return res.body;
    };
    await ok('/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
    await ok('/entitlements', { id: 'images', type: 'credits', name: 'Image credits' });
    await ok('/entitlements', { id: 'basic', type: 'usage', name: 'Basic', credits: { pool: 'credits', cost: 1 } });
    await ok('/entitlements', {
      id: 'premium',
      type: 'usage',
      name: 'Premium',
      credits: { pool: 'credits', cost: 10 },
    });
    await ok('/entitlements', { id: 'render', type: 'usage', name: 'Render', credits: { pool: 'images', cost: 5 } });
    for (const id of ['basic', 'premium', 'render']) await ok('/plans/pro/entitlements', { id, max: null });
    await ok('/namespaces/a1/credits/grants', { pool: 'credits', amount: 1000 });
    await ok('/namespaces/a2/credits/grants', { pool: 'images', amount: 1000 });
    const use = async (account: string, feature: string, amount: number) => {
      const res = await post(`${base}/namespaces/${account}/usage/${feature}/amount`, app.api_key, { amount });
      expect(res.status, res.text).to.equal(200);
    };
    await use('a1', 'premium', 3); // -30, moved to 3 days ago below
    await use('a1', 'basic', 1);
    await use('a1', 'basic', 1);
    await use('a1', 'basic', -1); // a refund of 1
    // The cost changes: later draws take the new cost, earlier ones keep theirs (usage x today's cost would say 25).
    expect(
      (await patch(`${base}/entitlements/premium`, app.api_key, { credits: { pool: 'credits', cost: 5 } })).status,
    ).to.equal(200);
    await use('a1', 'premium', 2); // -10
    await use('a2', 'render', 4); // -20 from images, moved to 40 days ago below
    // The history placed at chosen days: the first premium draw 3 days ago, a2's render 40 days ago, the rest
    // yesterday (so no row falls on either side of a midnight while the test runs).
    const em = testEnv().deps.orm.em.fork();
    const place = (where: string, at: string) =>
      sql(em, `update credit_ledger set created_at = $2 where app_id = $1 and ${where}`, [app.id, at]);
    await place(`feature = 'premium' and amount = -30`, daysAgo(3));
    await place(`feature = 'render'`, daysAgo(40));
    await place(`feature is not null and created_at > now() - interval '1 hour'`, daysAgo(1));
  });

  const series = async (query: string) => {
    const res = await get(`${base}/analytics/credits?${query}`, app.api_key);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };

  it('7 days: totals, per pool, per feature (each draw at the cost of its moment), daily buckets', async () => {
    const week = await series('interval=7d');
    expect(week).to.include({ interval: '7d', bucket: 'day', namespace: null, pool: null, feature: null });
    expect(Date.parse(week.to) - Date.parse(week.from)).to.equal(7 * 86_400_000);
    expect(week).to.include({ debited: 42, refunded: 1, consumed: 41 });
    expect(week.pools).to.deep.equal([{ pool: 'credits', name: 'AI credits', debited: 42, refunded: 1, consumed: 41 }]);
    expect(week.features).to.deep.equal([
      { feature: 'basic', name: 'Basic', pool: 'credits', debited: 2, refunded: 1, consumed: 1 },
      { feature: 'premium', name: 'Premium', pool: 'credits', debited: 40, refunded: 0, consumed: 40 },
    ]);
    // Every day of the window is a bucket, from the window's first day to today.
    expect(week.points).to.have.length(8);
    expect(week.points[0].start).to.equal(dayStart(week.from));
    expect(week.points[7].start).to.equal(dayStart(week.to));
    const byStart = Object.fromEntries(week.points.map((p: { start: string }) => [p.start, p]));
    expect(byStart[dayStart(daysAgo(1))]).to.deep.equal({
      start: dayStart(daysAgo(1)),
      consumed: 11,
      features: [
        { feature: 'basic', consumed: 1 },
        { feature: 'premium', consumed: 10 },
      ],
    });
    expect(byStart[dayStart(daysAgo(3))].features).to.deep.equal([{ feature: 'premium', consumed: 30 }]);
    const empty = week.points.filter((p: { consumed: number }) => p.consumed === 0);
    expect(empty).to.have.length(6);
    for (const p of empty) expect(p.features).to.deep.equal([]);
  });

  it('60 days reaches the older draw from the other pool; the filters narrow it', async () => {
    const two = await series('interval=60d');
    expect(two).to.include({ debited: 62, refunded: 1, consumed: 61 });
    expect(two.pools.map((p: { pool: string; consumed: number }) => [p.pool, p.consumed])).to.deep.equal([
      ['credits', 41],
      ['images', 20],
    ]);
    expect(two.features.map((f: { feature: string }) => f.feature)).to.deep.equal(['basic', 'premium', 'render']);
    expect(two.points).to.have.length(61);
    expect(two.points.find((p: { start: string }) => p.start === dayStart(daysAgo(40))).features).to.deep.equal([
      { feature: 'render', consumed: 20 },
    ]);

    const a2 = await series('interval=60d&namespace=a2');
    expect(a2).to.include({ namespace: 'a2', debited: 20, refunded: 0, consumed: 20 });
    expect(a2.features).to.deep.equal([
      { feature: 'render', name: 'Render', pool: 'images', debited: 20, refunded: 0, consumed: 20 },
    ]);
    expect((await series('interval=60d&pool=images')).pools).to.deep.equal([
      { pool: 'images', name: 'Image credits', debited: 20, refunded: 0, consumed: 20 },
    ]);
    expect(await series('interval=30d&pool=images')).to.include({ consumed: 0 });
    const premium = await series('interval=7d&feature=premium');
    expect(premium).to.include({ feature: 'premium', debited: 40, consumed: 40 });
    expect(premium.features).to.have.length(1);
    expect(await series('interval=7d&feature=nothing')).to.include({ debited: 0, refunded: 0, consumed: 0 });
  });

  it('all time: weekly buckets from the first draw; grants are not consumption; a bad window is a 400', async () => {
    const all = await series('interval=alltime&namespace=a1');
    expect(all).to.include({ from: null, bucket: 'week', consumed: 41 });
    // Weeks start on Monday (UTC); the first is the week of a1's first draw, 3 days ago.
    const first = new Date(dayStart(daysAgo(3)));
    first.setUTCDate(first.getUTCDate() - ((first.getUTCDay() + 6) % 7));
    expect(all.points[0].start).to.equal(first.toISOString());
    for (const p of all.points) expect(new Date(p.start).getUTCDay()).to.equal(1);
    expect(all.points.reduce((s: number, p: { consumed: number }) => s + p.consumed, 0)).to.equal(41);
    // The ledger holds the grants of 1,000 too: the series leaves them out.
    const em = testEnv().deps.orm.em.fork();
    const [grants] = await sql<{ n: string }>(
      em,
      `select count(*) as n from credit_ledger where app_id = $1 and kind = 'grant'`,
      [app.id],
    );
    expect(Number(grants.n)).to.equal(2);
    const bad = await get(`${base}/analytics/credits?interval=2w`, app.api_key);
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.match(/^interval: /);
  });
});
