// Top-up revenue (issue 42 item 6): pack orders PayPal confirmed captured, less what was refunded of them, by pack and
// currency over a window; nothing counts before the capture, other apps' orders never show.
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { connectBilling, seededApp, type TestApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

type Row = { pack: string; currency: string; orders: number; captured: number; refunded: number; net: number };

/** A credits pool, packs `boost` (1,000 credits, USD 10.00) and `euro` (500, EUR 4.99), accounts a1 and a2. */
async function shop() {
  const { app, base } = await seededApp({
    accounts: [
      { id: 'a1', plan: 'pro' },
      { id: 'a2', plan: 'pro' },
    ],
  });
  const ok = async (path: string, body: unknown) => {
    const res = await post(`${base}${path}`, app.api_key, body);
    expect(res.status, `${path} ${res.text}`).to.equal(201);
  };
  await ok('/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
  await ok('/credit-packs', { id: 'boost', pool: 'credits', amount: 1000, price: '10.00', currency: 'usd' });
  await ok('/credit-packs', { id: 'euro', pool: 'credits', amount: 500, price: 4.99, currency: 'EUR' });
  await connectBilling(app);
  return { app, base };
}

/** Orders a pack at PayPal and, unless `approveOnly`, waits until PayPal's capture is confirmed (the order completed). */
async function buy(app: TestApp, pack: string, account: string, approveOnly = false) {
  const base = `/apps/${app.id}`;
  const made = await post(`${base}/credit-packs/${pack}/checkout`, app.api_key, { account });
  expect(made.status, made.text).to.equal(201);
  const order = made.body;
  const paypal = testEnv().paypal;
  if (approveOnly) {
    // The buyer approved at PayPal; nobody captured it (the approval's notification has not come).
    paypal.order(new URL(order.approve_url).searchParams.get('token')!)!.status = 'APPROVED';
    return order;
  }
  await paypal.approve(order.approve_url);
  return eventually(async () => {
    const o = await post(`${base}/credit-pack-orders/${order.id}/complete`, app.api_key);
    return o.body.status === 'completed' ? o.body : undefined;
  });
}

describe('analytics: top-up revenue', function () {
  this.timeout(90_000);
  let app: TestApp;
  let base: string;
  let other: TestApp;
  let pending: { id: string };

  before(async () => {
    ({ app, base } = await shop());
    ({ app: other } = await shop());
    const paypal = testEnv().paypal;
    const first = await buy(app, 'boost', 'a1'); // refunded 2.50 of 10.00
    const second = await buy(app, 'boost', 'a2'); // refunded in full
    await buy(app, 'boost', 'a1'); // kept whole
    await buy(app, 'euro', 'a2'); // EUR, kept whole
    const old = await buy(app, 'euro', 'a1'); // EUR, captured 40 days ago (moved below)
    pending = await buy(app, 'boost', 'a1', true); // approved only: never counts
    await buy(other, 'boost', 'a1'); // another app's: never shows here
    paypal.refundAtProvider(first.capture_id, '2.50');
    paypal.refundAtProvider(second.capture_id);
    await eventually(async () => {
      const o = (await get(`${base}/credit-pack-orders/${second.id}`, app.api_key)).body;
      const p = (await get(`${base}/credit-pack-orders/${first.id}`, app.api_key)).body;
      return o.refunded === 10 && p.refunded === 2.5;
    });
    await sql(
      testEnv().deps.orm.em.fork(),
      `update credit_pack_orders set completed_at = now() - interval '40 days' where id = $1`,
      [old.id],
    );
  });

  const topups = async (query: string) => {
    const res = await get(`${base}/analytics/credits/topups?${query}`, app.api_key);
    expect(res.status, res.text).to.equal(200);
    return res.body as { from: string | null; to: string; totals: (Row & { credits: number })[]; data: Row[] };
  };

  it('30 days: captured orders by pack and currency, refunds in part and in full netted out', async () => {
    const month = await topups('interval=30d');
    expect(month).to.include({ interval: '30d', namespace: null, pool: null });
    expect(Date.parse(month.to) - Date.parse(month.from!)).to.equal(30 * 86_400_000);
    expect(month.data).to.deep.equal([
      {
        pack: 'euro',
        pool: 'credits',
        currency: 'EUR',
        orders: 1,
        credits: 500,
        captured: 4.99,
        refunded: 0,
        net: 4.99,
      },
      {
        pack: 'boost',
        pool: 'credits',
        currency: 'USD',
        orders: 3,
        credits: 3000,
        captured: 30,
        refunded: 12.5,
        net: 17.5,
      },
    ]);
    // Currencies are never added up: one total each.
    expect(month.totals.map((t) => [t.currency, t.orders, t.captured, t.refunded, t.net])).to.deep.equal([
      ['EUR', 1, 4.99, 0, 4.99],
      ['USD', 3, 30, 12.5, 17.5],
    ]);
    // The approved order PayPal has not captured is still only created, and counts nothing.
    const o = (await get(`${base}/credit-pack-orders/${pending.id}`, app.api_key)).body;
    expect(o.status).to.equal('created');
  });

  it('the window places an order by its capture; the account and pool filters narrow it', async () => {
    const sixty = await topups('interval=60d');
    expect(sixty.data.find((r) => r.pack === 'euro')).to.include({ orders: 2, captured: 9.98, net: 9.98 });
    const all = await topups('interval=alltime');
    expect(all.from).to.equal(null);
    expect(all.totals.map((t) => [t.currency, t.orders, t.net])).to.deep.equal([
      ['EUR', 2, 9.98],
      ['USD', 3, 17.5],
    ]);
    const a2 = await topups('interval=30d&namespace=a2');
    expect(a2).to.include({ namespace: 'a2' });
    expect(a2.data.map((r) => [r.pack, r.orders, r.captured, r.refunded, r.net])).to.deep.equal([
      ['euro', 1, 4.99, 0, 4.99],
      ['boost', 1, 10, 10, 0],
    ]);
    const none = await topups('interval=7d&pool=images');
    expect(none).to.include({ pool: 'images' });
    expect(none.data).to.deep.equal([]);
    expect(none.totals).to.deep.equal([]);
  });

  it("another app's orders never appear; the seller's key only; a bad window is a 400 naming it", async () => {
    const theirs = await get(`/apps/${other.id}/analytics/credits/topups?interval=30d`, other.api_key);
    expect(theirs.status, theirs.text).to.equal(200);
    expect(theirs.body.data.map((r: Row) => [r.pack, r.orders, r.net])).to.deep.equal([['boost', 1, 10]]);
    const crossed = await get(`${base}/analytics/credits/topups?interval=30d`, other.api_key);
    // Another app's key is no credential here: nothing of this app's is answered.
    expect(crossed.status).to.equal(401);
    expect(crossed.body).to.not.have.property('data');
    expect((await get(`${base}/analytics/credits/topups?interval=30d`, app.public_key)).status).to.equal(401);
    const bad = await get(`${base}/analytics/credits/topups?interval=2w`, app.api_key);
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.match(/^interval: /);
    const badPool = await get(`${base}/analytics/credits/topups?interval=7d&pool=%21%21%21`, app.api_key);
    expect(badPool.status).to.equal(400);
    expect(badPool.body.error).to.match(/^pool: /);
  });
});
